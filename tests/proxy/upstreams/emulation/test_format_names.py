"""Every name the configuration accepts builds a format, and only those do; a version's name
belongs to a family that is configurable too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from proxy.config import PEER_PARSER_NAMES, UpstreamConfig
from proxy.upstreams.emulation import FORMAT_NAMES, get_format
from proxy.upstreams.emulation.formats import FORMATS, VERSIONS


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_each_configurable_name_builds_its_format(name: str) -> None:
    assert get_format(name).name == name


def test_the_configuration_and_the_formats_name_the_same_set() -> None:
    assert set(FORMAT_NAMES) == set(FORMATS)


@pytest.mark.parametrize(("version", "family"), VERSIONS.items())
def test_each_version_belongs_to_a_configurable_family(version: str, family: str) -> None:
    assert version in FORMAT_NAMES and family in FORMAT_NAMES and version != family


def test_an_unknown_name_builds_nothing() -> None:
    with pytest.raises(KeyError):
        get_format("not-a-format")


def test_the_readme_table_names_every_format_once() -> None:
    readme = (Path(__file__).resolve().parents[4] / "README.md").read_text(encoding="utf-8")
    start = readme.index("| family | versions read | name to configure")
    rows = readme[start:].split("\n\n", 1)[0].splitlines()[2:]
    named = [n for row in rows for n in re.findall(r"`([^`]+)`", row.split(" | ")[2])]
    assert sorted(named) == sorted(FORMAT_NAMES)


def test_the_peers_parser_names_configure_the_same_formats() -> None:
    for peer, name in PEER_PARSER_NAMES.items():
        assert name in FORMAT_NAMES, peer
        upstream = UpstreamConfig(name="u", base_url="http://127.0.0.1:1/v1", emulation_format=peer)
        assert upstream.emulation_format == name
    with pytest.raises(ValidationError):
        UpstreamConfig(name="u", base_url="http://127.0.0.1:1/v1", emulation_format="qwen9")
