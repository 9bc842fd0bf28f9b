"""Loose tool names: one evident match is taken, an ambiguous one is refused."""

from __future__ import annotations

import pytest

from registry import ToolRegistry, resolve_name


def read_file(path: str) -> str:
    """Read a file."""
    return path


def test_an_ambiguous_loose_name_among_registry_tools_is_refused() -> None:
    registry = ToolRegistry()
    registry.register(read_file, namespace="fs")
    registry.register(read_file, namespace="fs", name="readfile")
    assert resolve_name(registry, "FS-READFILE") is None
    exact = resolve_name(registry, "fs_readfile")
    assert exact is not None and exact.name == "fs_readfile" and exact.repair is None


def test_a_qualified_name_off_by_case_resolves_to_its_wire_name() -> None:
    registry = ToolRegistry()
    registry.register(read_file, namespace="fs")
    match = resolve_name(registry, "FS.Read-File")
    assert match is not None and match.name == "fs_read_file"
    assert match.repair is not None and "'FS.Read-File' taken as 'fs_read_file'" in str(
        match.repair
    )


@pytest.mark.parametrize("loose", ["Read-File", "read.file", "READFILE", "read file"])
def test_an_ambiguous_loose_name_among_names_is_refused(loose: str) -> None:
    assert resolve_name(["read_file", "readFile", "other"], loose) is None


@pytest.mark.parametrize("loose", ["Read-File", "read.file", "READFILE", "read file"])
def test_a_loose_name_with_one_match_is_taken(loose: str) -> None:
    match = resolve_name(["read_file", "other"], loose)
    assert match is not None and match.name == "read_file"
    assert match.repair is not None and match.repair.kind == "tool_name"


def test_a_name_that_folds_to_nothing_known_is_refused() -> None:
    assert resolve_name(["read_file"], "write_file") is None
    assert resolve_name([], "read_file") is None
