"""Every name the configuration accepts builds a format, and only those do."""

from __future__ import annotations

import pytest

from proxy.upstreams.emulation import FORMAT_NAMES, get_format


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_each_configurable_name_builds_its_format(name: str) -> None:
    assert get_format(name).name == name


def test_an_unknown_name_builds_nothing() -> None:
    with pytest.raises(KeyError):
        get_format("not-a-format")
