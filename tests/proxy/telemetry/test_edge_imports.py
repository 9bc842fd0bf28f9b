"""The telemetry's layers read the route's row from the request's context: telemetry imports no
front and not the route table (which imports the fronts)."""

from __future__ import annotations

import ast

from tests.conftest import REPO

TABLE = {"proxy.server.routes", "proxy.server.dispatch", "proxy.server.middleware"}


def _imported(source: str, module: str) -> set[str]:
    """The first-party modules `source` (the module `module`) imports, relative ones resolved."""
    package = module.rsplit(".", 1)[0].split(".")
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_telemetry_imports_neither_a_front_nor_the_route_table() -> None:
    wrong = []
    for path in sorted((REPO / "proxy" / "telemetry").glob("*.py")):
        module = "proxy.telemetry." + path.stem
        for name in _imported(path.read_text(encoding="utf-8"), module):
            if name.startswith("proxy.fronts") or name in TABLE:
                wrong.append(f"{path.name}: {name}")
    assert wrong == []


def test_relative_imports_are_resolved() -> None:
    source = "from ..fronts.messages import error_body\nfrom .logs import log_summary\n"
    found = _imported(source, "proxy.telemetry.edge")
    assert "proxy.fronts.messages" in found and "proxy.telemetry.logs" in found
