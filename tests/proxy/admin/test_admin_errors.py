"""The admin API answers the proxy's own errors with their status, never a bare 500."""

from __future__ import annotations

from fastapi.testclient import TestClient

from proxy.admin.front import _build_app
from proxy.errors import StateUnavailableError


def test_lost_shared_state_is_a_503_with_its_message() -> None:
    app = _build_app()

    async def needs_state() -> None:
        raise StateUnavailableError("the shared state (Redis) is unreachable")

    app.add_api_route("/needs-state", needs_state)
    response = TestClient(app, raise_server_exceptions=False).get("/needs-state")
    assert response.status_code == 503
    assert response.json() == {
        "error": {
            "message": "the shared state (Redis) is unreachable",
            "type": "api_error",
            "param": None,
            "code": "state_unavailable",
        }
    }
