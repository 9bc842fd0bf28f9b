"""The web panel in a real headless Chromium (Debian's `chromium`, driven by Playwright):
sign in, find a tool, disable it and see a request no longer get it, approve a paused call,
reload a source, read the figures per key, see a p95 on one line in a narrow window, switch
to Chinese and back with a switch that needs no CJK font.

Screenshots go to `$TOOLWIRE_SCREENSHOTS` (default: the test's tmp_path)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask
from tests.proxy.admin.test_admin_api import ADMIN, CLIENT, MASTER, USER, _injected, admin_proxy

CHROMIUM = Path("/usr/bin/chromium")
playwright = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
ASK_NETWORK = {"rules": [{"match": {"tags": ["network"]}, "action": "ask", "reason": "online"}]}
P95_LINES = """() => {
    const row = [...document.querySelectorAll("#tool-rows tr")]
        .find((tr) => tr.cells[0].textContent.startsWith("echo.echo"));
    const cell = row && row.cells[5];
    if (!cell || !cell.textContent.endsWith(" ms")) return null;
    const range = document.createRange();
    range.selectNodeContents(cell);
    return range.getClientRects().length;
}"""
"""How many lines echo.echo's p95 takes (a range over it has one box per line), found and
measured in one step: the panel may render the rows again at any time."""
WEIGHT = "node => getComputedStyle(node).fontWeight"
ECHO = '''
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say.
    """
    return text
'''


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TOOLWIRE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_panel_steers_tools_and_approvals(
    make_proxy: Any, upstream: FakeUpstream, tmp_path: Path, scheme: str
) -> None:
    shots = _shots(tmp_path)
    source = tmp_path / "echo_tools.py"
    source.write_text(ECHO)
    tools = [{"python": str(source), "namespace": "echo"}]
    async with (
        admin_proxy(make_proxy, policy=ASK_NETWORK, tools=tools) as (proxy, _),
        playwright.async_playwright() as driver,
    ):
        browser = await driver.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = await browser.new_page(
                color_scheme=scheme, viewport={"width": 1200, "height": 800}
            )
            root = proxy.base_url.removesuffix("/v1")
            await page.goto(f"{root}/admin/")
            await page.get_by_label("Key", exact=True).fill(ADMIN)
            await page.get_by_role("button", name="Sign in").click()
            expect = playwright.expect
            await expect(page.get_by_text("Signed in as admin")).to_be_visible()
            await expect(page.get_by_text("t.get_weather", exact=True)).to_be_visible()
            await expect(page.get_by_text("Live updates on")).to_be_visible()
            # A call gives echo.echo figures (by the master key: team-a's sees only t.*).
            upstream.script(Reply.tool_calls([("echo_echo", {"text": "hi"})]), Reply.text("hi"))
            proxy.client.api_key = MASTER
            await ask(proxy.client, stream=False, messages=USER)
            proxy.client.api_key = CLIENT
            await expect(page.locator("#tool-rows tr", has_text="echo.echo")).to_contain_text("ms")
            await page.screenshot(path=shots / f"overview-{scheme}.png", full_page=True)

            await page.keyboard.press("/")
            await page.keyboard.type("weather")
            rows = page.locator("#tool-rows tr")
            await expect(rows).to_have_count(1)
            await page.screenshot(path=shots / f"tools-{scheme}.png", full_page=True)

            switch = page.get_by_role("switch", name="Disable t.get_weather")
            await switch.click()
            await page.get_by_label("Reason").fill("provider outage")
            await page.get_by_role("button", name="Disable", exact=True).click()
            await expect(page.get_by_role("switch", name="Enable t.get_weather")).to_have_attribute(
                "aria-checked", "false"
            )
            await expect(page.get_by_text("Disabled: provider outage")).to_be_visible()
            upstream.script(Reply.text("no weather today"))
            await ask(proxy.client, stream=False, messages=USER)
            assert "t_get_weather" not in _injected(upstream)

            await page.get_by_role("switch", name="Enable t.get_weather").click()
            await expect(page.get_by_role("switch", name="Disable t.get_weather")).to_be_visible()
            upstream.script(
                Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]), Reply.text("Sunny.")
            )
            proxy.client.api_key = CLIENT
            first = await ask(proxy.client, stream=False, messages=USER)
            assert first.finish_reason == "tool_calls"

            await page.get_by_role("tab", name="Approvals").click()
            await expect(page.get_by_role("heading", name="t.get_weather")).to_be_visible()
            await page.get_by_role("button", name="Approve t.get_weather").click()
            await expect(page.get_by_text("Approved by admin")).to_be_visible()
            await page.screenshot(path=shots / f"approvals-{scheme}.png", full_page=True)

            await page.get_by_role("tab", name="Log").click()
            await expect(page.locator("#log-rows tr").first).to_be_visible()
            await page.screenshot(path=shots / f"log-{scheme}.png", full_page=True)

            await page.get_by_role("tab", name="Sources").click()
            await page.get_by_role("button", name=f"Reload python:{source}").click()
            await expect(page.get_by_text(f"python:{source} reloaded: 1 tools")).to_be_visible()
            await page.get_by_role("tab", name="Keys").click()
            team = page.locator("#key-rows tr", has_text="team-a")
            await expect(team.locator("td").nth(1)).to_have_text("2")  # two turns as team-a
            await page.screenshot(path=shots / f"keys-{scheme}.png", full_page=True)

            # echo.echo's p95 stays on one line in a narrow window.
            await page.set_viewport_size({"width": 640, "height": 800})
            await page.get_by_role("tab", name="Tools").click()
            await page.locator("#tool-search").fill("echo")
            lines = await page.wait_for_function(P95_LINES)
            assert await lines.json_value() == 1
            await page.screenshot(path=shots / f"tools-narrow-{scheme}.png", full_page=True)
            await page.set_viewport_size({"width": 1200, "height": 800})
            await page.locator("#tool-search").fill("weather")

            # The switch reads the same with or without a CJK font; the current language is bold.
            language = page.locator("#language")
            await expect(language).to_have_text("EN / ZH")
            assert (await language.inner_text()).isascii()
            assert await language.locator("[lang=en]").evaluate(WEIGHT) == "700"
            await page.get_by_role("button", name="切换到中文").click()
            await expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
            await expect(language).to_have_text("EN / ZH")
            assert await language.locator("[lang=zh]").evaluate(WEIGHT) == "700"
            assert await language.locator("[lang=en]").evaluate(WEIGHT) != "700"
            await page.get_by_role("tab", name="工具").click()
            await expect(page.get_by_role("switch", name="停用 t.get_weather")).to_be_visible()
            await expect(page.get_by_text("已登录：admin")).to_be_visible()  # noqa: RUF001
            await page.screenshot(path=shots / f"tools-zh-{scheme}.png", full_page=True)
            await page.get_by_role("button", name="Switch to English").click()
            await expect(page.get_by_role("tab", name="Tools")).to_be_visible()
        finally:
            await browser.close()
