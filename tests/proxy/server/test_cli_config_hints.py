"""What `toolwire` says when the configuration is missing or has a misspelt key: where to put
the file, and the key that was probably meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.proxy.server.test_cli import assert_clean_failure, toolwire_here, write_config

MISSING = "proxy.yaml: cannot read: No such file or directory"
HINT = "(run from the folder that holds it, or pass --config PATH)"


@pytest.mark.parametrize("command", ["serve", "tools", "check"])
def test_no_proxy_yaml_in_the_folder_says_how_to_name_one(command: str, tmp_path: Path) -> None:
    result = toolwire_here(command, cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr == f"{MISSING} {HINT}\n"


def test_a_missing_file_given_with_config_is_named_without_the_hint(tmp_path: Path) -> None:
    result = toolwire_here("check", "--config", "proxy.yaml", cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr == f"{MISSING}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "upstreams: [{name: d, base_url: demo}]\ntools: [{pyhton: tools.py}]\n",
            "tools[0]: unknown key 'pyhton' (did you mean 'python'?); needs one of the keys ",
        ),
        (
            "upstream: [{name: d, base_url: demo}]\n",
            "upstream: unknown key (did you mean 'upstreams'?)",
        ),
        (
            "upstreams: [{name: d, bse_url: demo}]\n",
            "upstreams[0].bse_url: unknown key (did you mean 'base_url'?)",
        ),
        (
            "upstreams: [{name: d, base_url: demo}]\nloop: {timeout: 30}\n",
            "loop.timeout: unknown key (did you mean 'timeout_s'?)",
        ),
    ],
    ids=["tools-kind", "top-level", "upstream", "loop"],
)
def test_a_misspelt_key_gets_a_suggestion(text: str, expected: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, text)
    result = toolwire_here("check", "--config", config, cwd=tmp_path)
    assert_clean_failure(result, f"{config}: invalid configuration\n", expected)
