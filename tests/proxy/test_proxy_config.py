"""proxy.yaml: environment expansion, validation errors that name the key path, file errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from proxy.config import ConfigError, Settings, load_settings, parse_settings

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = {"name": "local", "base_url": "http://127.0.0.1:8001/v1"}


def parse(raw: dict[str, Any], **environ: str) -> Settings:
    return parse_settings(raw, base_dir=REPO, environ=environ)


def error_of(raw: dict[str, Any], **environ: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(raw, **environ)
    return str(caught.value)


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "proxy.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_minimal_config_fills_defaults() -> None:
    settings = parse({"upstreams": [UPSTREAM]})
    assert settings.server.host == "127.0.0.1"
    assert settings.server.port == 8000
    assert settings.upstreams[0].api_key == ""
    assert settings.upstreams[0].models == ["*"]
    assert settings.tools == []
    assert settings.policy.default == "allow"
    assert settings.loop.max_iterations == 8
    assert settings.base_dir == REPO


def test_trailing_slash_of_base_url_is_dropped() -> None:
    settings = parse({"upstreams": [UPSTREAM | {"base_url": "http://h:1/v1/"}]})
    assert settings.upstreams[0].base_url == "http://h:1/v1"


def test_env_reference_is_expanded() -> None:
    raw = {"upstreams": [UPSTREAM | {"base_url": "${URL}", "api_key": "Bearer-${KEY}-x"}]}
    settings = parse(raw, URL="https://api.example.com/v1", KEY="sk-123")
    assert settings.upstreams[0].base_url == "https://api.example.com/v1"
    assert settings.upstreams[0].api_key == "Bearer-sk-123-x"


def test_env_default_used_when_variable_unset_or_empty() -> None:
    raw = {"upstreams": [UPSTREAM | {"base_url": "${URL:-demo}", "api_key": "${KEY:-}"}]}
    assert parse(raw).upstreams[0].base_url == "demo"
    assert parse(raw, URL="").upstreams[0].base_url == "demo"
    assert parse(raw).upstreams[0].api_key == ""


def test_env_value_wins_over_default() -> None:
    raw = {"upstreams": [UPSTREAM | {"base_url": "${URL:-demo}"}]}
    assert parse(raw, URL="http://x:9/v1").upstreams[0].base_url == "http://x:9/v1"


def test_env_expansion_reaches_nested_lists_and_numbers() -> None:
    raw = {
        "server": {"port": "${PORT:-9001}"},
        "upstreams": [UPSTREAM | {"models": ["${MODEL}", "gpt-*"]}],
    }
    settings = parse(raw, MODEL="llama-3")
    assert settings.server.port == 9001
    assert settings.upstreams[0].models == ["llama-3", "gpt-*"]


def test_env_values_are_not_expanded_twice() -> None:
    raw = {"upstreams": [UPSTREAM | {"api_key": "${KEY}"}]}
    assert parse(raw, KEY="${OTHER}", OTHER="leak").upstreams[0].api_key == "${OTHER}"


def test_unset_variable_names_key_path_and_variable() -> None:
    message = error_of({"upstreams": [UPSTREAM | {"api_key": "${UPSTREAM_KEY}"}]})
    assert message == "upstreams[0].api_key: environment variable UPSTREAM_KEY is not set"


def test_unset_variable_in_nested_list_names_full_path() -> None:
    raw = {"upstreams": [UPSTREAM, UPSTREAM | {"models": ["a", "${M}"]}]}
    assert error_of(raw).startswith("upstreams[1].models[1]: environment variable M ")


def test_tool_entry_without_a_source_key_is_named() -> None:
    message = error_of({"upstreams": [UPSTREAM], "tools": [{"python": "m"}, {}]})
    assert message.startswith("tools[1]: ")
    assert "python" in message


def test_missing_required_key_is_named() -> None:
    assert error_of({"upstreams": [{"name": "x"}]}) == "upstreams[0].base_url: required"


def test_bad_value_inside_a_tool_entry_names_the_full_path() -> None:
    raw = {
        "upstreams": [UPSTREAM],
        "tools": [{"python": "m", "overrides": {"f": {"timeout_s": 0}}}],
    }
    assert error_of(raw).startswith("tools[0].overrides.f.timeout_s: ")
    assert error_of({"upstreams": [UPSTREAM], "tools": [{"python": ""}]}).startswith(
        "tools[0].python: "
    )


def test_missing_upstreams_is_named() -> None:
    assert error_of({}) == "upstreams: required"


def test_empty_upstream_list_is_rejected() -> None:
    assert error_of({"upstreams": []}).startswith("upstreams: ")


def test_bad_base_url_names_key_and_reason() -> None:
    message = error_of({"upstreams": [UPSTREAM | {"base_url": "ftp://host/v1"}]})
    assert message.startswith("upstreams[0].base_url: ")
    assert "http(s) URL or 'demo'" in message


def test_unknown_key_is_reported_at_every_level() -> None:
    assert error_of({"upstreams": [UPSTREAM], "bogus": 1}) == "bogus: unknown key"
    raw = {"upstreams": [UPSTREAM | {"api_keys": "x"}]}
    assert error_of(raw) == "upstreams[0].api_keys: unknown key (did you mean 'api_key'?)"
    raw = {"upstreams": [UPSTREAM], "tools": [{"python": "m", "tag": ["x"]}]}
    assert error_of(raw) == "tools[0].tag: unknown key (did you mean 'tags'?)"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"upstream": []}, "upstream: unknown key (did you mean 'upstreams'?)"),
        ({"loop": {"timeout": 3}}, "loop.timeout: unknown key (did you mean 'timeout_s'?)"),
        (
            {"server": {"shutdown_timeout": 3}},  # the former name of drain_s is still read
            "server.shutdown_timeout: unknown key (did you mean 'shutdown_timeout_s'?)",
        ),
        (
            {"auth": {"keys": [{"key": "k" * 16, "name": "a", "tgas": []}]}},
            "auth.keys[0].tgas: unknown key (did you mean 'tags'?)",
        ),
        (
            {"tools": [{"mcp": {"comand": "x"}}]},
            "tools[0].mcp.comand: unknown key (did you mean 'command'?)",
        ),
        (
            {"tools": [{"python": "m", "overrides": {"f": {"deffer": True}}}]},
            "tools[0].overrides.f.deffer: unknown key (did you mean 'defer'?)",
        ),
        (
            {"execution": {"retry": {"retires": 2}}},
            "execution.retry.retires: unknown key (did you mean 'retries'?)",
        ),
        ({"base_url": "demo"}, "base_url: unknown key"),  # base_dir is no key of the file
    ],
)
def test_unknown_key_suggests_the_closest_key_of_its_place(
    raw: dict[str, Any], expected: str
) -> None:
    assert error_of({"upstreams": [UPSTREAM], **raw}) == expected


def test_misspelt_upstream_key_is_named_beside_the_missing_one() -> None:
    raw = {"upstreams": [{"name": "local", "bse_url": "demo"}]}
    assert error_of(raw).splitlines() == [
        "upstreams[0].base_url: required",
        "upstreams[0].bse_url: unknown key (did you mean 'base_url'?)",
    ]


def test_tools_entry_without_a_kind_names_its_unknown_keys_and_the_closest_kind() -> None:
    kinds = "python, mcp, mcp_servers_json, openapi, python_class, builtin"
    raw = {"upstreams": [UPSTREAM], "tools": [{"pyhton": "m.py", "namespace": "n"}]}
    assert error_of(raw) == (
        f"tools[0]: unknown key 'pyhton' (did you mean 'python'?); needs one of the keys {kinds}"
    )
    raw = {"upstreams": [UPSTREAM], "tools": [{"pyhton": "m.py", "nmespace": "n"}]}
    assert error_of(raw).startswith("tools[0]: unknown key 'pyhton' (did you mean 'python'?), ")
    assert "'nmespace';" in error_of(raw)
    raw = {"upstreams": [UPSTREAM], "tools": ["m.py"]}
    assert error_of(raw) == f"tools[0]: needs one of the keys {kinds}"


def test_union_members_pydantic_names_are_left_out_of_the_path() -> None:
    # A guard's sandbox is one rule or a list of rules: pydantic names the member it tried.
    guard = {"match": {"name": "x"}, "sandbox": {"argument": "path", "alow": ["/tmp"]}}
    lines = error_of({"upstreams": [UPSTREAM], "guards": [guard]}).splitlines()
    assert "guards[0].sandbox.alow: unknown key (did you mean 'allow'?)" in lines
    assert not [line for line in lines if "[" in line.split(":")[0].replace("guards[0]", "")]


def test_every_problem_is_listed_one_per_line() -> None:
    raw = {
        "upstreams": [UPSTREAM],
        "server": {"port": 70000},
        "policy": {"default": "maybe"},
        "loop": {"max_iterations": 0},
    }
    lines = error_of(raw).splitlines()
    assert sorted(line.split(":")[0] for line in lines) == [
        "loop.max_iterations",
        "policy.default",
        "server.port",
    ]


def test_policy_rules_are_validated_with_their_path() -> None:
    raw = {"upstreams": [UPSTREAM], "policy": {"rules": [{"match": {}, "action": "block"}]}}
    assert error_of(raw).startswith("policy.rules[0].action: ")


def test_load_settings_resolves_base_dir_to_the_file_folder(tmp_path: Path) -> None:
    path = write(tmp_path, "upstreams:\n  - {name: a, base_url: demo}\n")
    settings = load_settings(path, environ={})
    assert settings.base_dir == tmp_path.resolve()


def test_load_settings_expands_environ(tmp_path: Path) -> None:
    path = write(tmp_path, "upstreams:\n  - {name: a, base_url: '${U:-demo}'}\n")
    assert load_settings(path, environ={}).upstreams[0].base_url == "demo"
    settings = load_settings(path, environ={"U": "http://m:1/v1"})
    assert settings.upstreams[0].base_url == "http://m:1/v1"


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "upstreams: [\n")
    with pytest.raises(ConfigError, match="not valid YAML") as caught:
        load_settings(path, environ={})
    assert str(caught.value).startswith(f"{path}: ")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="the top level must be a mapping"):
        load_settings(path, environ={})


def test_empty_file_reports_missing_upstreams(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    with pytest.raises(ConfigError, match=r"^upstreams: required$"):
        load_settings(path, environ={})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_settings(path, environ={})
    assert str(path) in str(caught.value)


def test_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"upstreams: [{name: a, base_url: demo}]\n# caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ={})
    assert str(path) in str(caught.value)


def test_repo_proxy_yaml_defaults_to_demo_model() -> None:
    settings = load_settings(REPO / "proxy.yaml", environ={})
    [upstream] = settings.upstreams
    assert upstream.base_url == "demo"
    assert upstream.api_key == ""
    assert [source.python for source in settings.tools] == ["examples/tools.py"]
    assert settings.tools[0].namespace == "demo"


def test_repo_proxy_yaml_follows_toolwire_upstream_url() -> None:
    environ = {"TOOLWIRE_UPSTREAM_URL": "http://127.0.0.1:8001/v1/", "UPSTREAM_API_KEY": "sk-x"}
    settings = load_settings(REPO / "proxy.yaml", environ=environ)
    assert settings.upstreams[0].base_url == "http://127.0.0.1:8001/v1"
    assert settings.upstreams[0].api_key == "sk-x"


def test_value_error_reason_has_no_library_prefix() -> None:
    message = error_of({"upstreams": [UPSTREAM | {"base_url": "ftp://host/v1"}]})
    assert message == "upstreams[0].base_url: must be an http(s) URL or 'demo'"


def test_empty_variable_is_an_empty_value_as_in_the_shell() -> None:
    settings = parse({"upstreams": [UPSTREAM | {"api_key": "${KEY}"}]}, KEY="")
    assert settings.upstreams[0].api_key == ""


def test_base_dir_is_not_a_config_key() -> None:
    assert error_of({"upstreams": [UPSTREAM], "base_dir": "/"}) == "base_dir: unknown key"


def test_yaml_error_points_into_the_named_file(tmp_path: Path) -> None:
    path = write(tmp_path, "upstreams: [\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert "proxy.yaml" in str(caught.value).split("not valid YAML", 1)[1]


def test_the_readme_configuration_reference_is_a_valid_config() -> None:
    """The manual's reference block must load: every key it shows exists, every value fits."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    reference = readme.split("## Configuration reference", 1)[1]
    block = reference.split("```yaml", 1)[1].split("```", 1)[0]
    raw = yaml.safe_load(block)
    raw["tools"] = []  # its sources name files and servers that need not exist here
    settings = parse_settings(raw, base_dir=Path.cwd(), environ={"UPSTREAM_API_KEY": ""})
    assert settings.policy.presets and settings.guards and settings.state.backend == "memory"


def test_spilled_results_are_kept_whole_up_to_the_stores_entry_limit() -> None:
    """With spilling on (the default) a long result is kept for the model to read in parts,
    so the executor does not cut it at 1 MiB; an explicit cap, or spilling off, keeps it."""

    def settings(**extra: Any) -> Any:
        raw = {"upstreams": [{"name": "d", "base_url": "demo"}], **extra}
        return parse_settings(raw, base_dir=Path.cwd())

    assert settings().execution.max_result_size == 16 * 1024 * 1024
    assert settings(state={"max_entry_bytes": 4096}).execution.max_result_size == 4096
    assert settings(results={"spill": False}).execution.max_result_size == 1024 * 1024
    capped = settings(execution={"max_result_size": 1000})
    assert capped.execution.max_result_size == 1000
