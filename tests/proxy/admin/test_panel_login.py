"""The panel's Log in button, in a real headless Chromium (Debian's `chromium`, driven by
Playwright): a source behind OAuth with the authorization-code grant and no login offers it;
the click opens the authorization server's page in a new window, which consents at once and
lands on Toolwire's callback; the panel sees the login done and the source connected, and
offers the button no more. A source that needs no login never offers it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from testing.oauth_servers import serve_oauth_protected
from tests.proxy.admin.test_admin_api import ADMIN, MASTER

CHROMIUM = Path("/usr/bin/chromium")
playwright = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TOOLWIRE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_a_source_awaiting_its_login_is_logged_in_from_the_panel(
    make_proxy: Any, tmp_path: Path
) -> None:
    shots = _shots(tmp_path)
    async with serve_oauth_protected() as protected:
        oauth = {"grant": "authorization_code", "issuer": protected.issuer, "client_id": "toolwire"}
        tools = [
            {"mcp": {"url": protected.url, "oauth": oauth}, "namespace": "o", "optional": True},
            {"python": "examples/tools.py", "namespace": "demo"},
        ]
        auth = {"master_key": MASTER}
        async with (
            make_proxy(tools=tools, auth=auth, admin={"key": ADMIN}) as proxy,
            playwright.async_playwright() as driver,
        ):
            browser = await driver.chromium.launch(executable_path=str(CHROMIUM))
            try:
                context = await browser.new_context(viewport={"width": 1200, "height": 800})
                page = await context.new_page()
                root = proxy.base_url.removesuffix("/v1")
                await page.goto(f"{root}/admin/")
                await page.get_by_label("Key", exact=True).fill(ADMIN)
                await page.get_by_role("button", name="Sign in").click()
                expect = playwright.expect
                await expect(page.get_by_text("Signed in as admin")).to_be_visible()
                await page.get_by_role("tab", name="Sources").click()
                row = page.locator("#source-rows tr", has_text="mcp:o")
                await expect(row).to_contain_text("unreachable")
                await expect(row).to_contain_text("toolwire admin login mcp:o")
                demo = page.locator("#source-rows tr", has_text="python:examples/tools.py")
                await expect(demo.get_by_role("button", name="Reload")).to_be_visible()
                await expect(demo.get_by_role("button", name="Log in")).to_have_count(0)
                await page.screenshot(path=shots / "login-offered.png", full_page=True)

                async with context.expect_page() as opened:
                    await page.get_by_role("button", name="Log in to mcp:o").click()
                popup = await opened.value
                await expect(popup.get_by_text("Logged in to mcp:o")).to_be_visible()
                await expect(popup.get_by_text("It is connected.")).to_be_visible()

                await expect(page.locator("#live")).to_have_text("Logged in to mcp:o")
                await expect(row).to_contain_text("reachable")
                await expect(row).not_to_contain_text("unreachable")
                await expect(row.get_by_role("button", name="Log in to mcp:o")).to_have_count(0)
                await page.screenshot(path=shots / "login-done.png", full_page=True)
            finally:
                await browser.close()
