"""An approver that asks a URL (`policy.approval_webhook`) whether an `ask` call may run.

For clients that cannot answer approvals themselves: the proxy POSTs the pending call and
waits; `{"approve": true}` runs it, anything else, an error or silence past the timeout
denies it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policies import CallContext, WebhookConfig
from registry import Tool

if TYPE_CHECKING:
    import aiohttp  # loaded with a webhook only (`policy.approval_webhook`)

log = logging.getLogger("toolwire.approvals")


class WebhookApprover:
    """Approves calls by asking a webhook; fails closed."""

    def __init__(self, config: WebhookConfig) -> None:
        import aiohttp

        self._url = config.url
        self._timeout = aiohttp.ClientTimeout(total=config.timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def approve(
        self, tool: Tool, arguments: Mapping[str, Any], context: CallContext, reason: str
    ) -> bool:
        import aiohttp

        payload = {
            "tool": tool.qualified_name,
            "arguments": dict(arguments),
            "reason": reason,
            "key": context.caller,
            "request_id": context.request_id,
        }
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.post(self._url, json=payload) as response:
                if response.status != 200:
                    log.warning("approval webhook answered %s: denied", response.status)
                    return False
                answer = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("approval webhook failed (%s): denied", type(exc).__name__)
            return False
        return isinstance(answer, dict) and answer.get("approve") is True

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
