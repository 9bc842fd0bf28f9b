"""Which `Host` and `Origin` values name this server (the admin's and `/mcp`'s check)."""

from __future__ import annotations

from proxy.server.hosts import AllowedHosts

LOCAL = ("192.0.2.10", 8000)
"""The address a connection reached (the ASGI scope's `server`)."""


def _refused(hosts: AllowedHosts, host: str | None, origin: str | None = None) -> bool:
    headers = {k: v for k, v in (("host", host), ("origin", origin)) if v is not None}
    return hosts.refusal(headers, LOCAL) is not None


def test_loopback_configured_bound_and_reached_names_pass() -> None:
    hosts = AllowedHosts(["Toolwire.Example."], bound="box.lan")
    for host in (
        "localhost:8000",
        "127.0.0.1",
        "127.8.9.1:80",
        "[::1]:8000",
        "toolwire.example",
        "TOOLWIRE.example:443",
        "box.lan:8000",
        "192.0.2.10:8000",
    ):
        assert not _refused(hosts, host), host
    assert not _refused(hosts, "localhost", "http://toolwire.example:3000")
    assert not _refused(hosts, "192.0.2.10:8000", "http://192.0.2.10:8000")


def test_other_names_and_malformed_values_are_refused() -> None:
    hosts = AllowedHosts(["toolwire.example"], bound="0.0.0.0")
    for host in (
        None,
        "",
        "evil.example",
        "localhost.evil.example",
        "evil.example@127.0.0.1",
        "127.0.0.1:http",
        "::1",
        "[::1",
        "192.0.2.11",
        "0.0.0.0",
    ):
        assert _refused(hosts, host), host
    for origin in ("null", "http://evil.example", "file://", "chrome-extension://abc", "x"):
        assert _refused(hosts, "localhost", origin), origin
    assert _refused(hosts, "localhost", "http://user@localhost")
