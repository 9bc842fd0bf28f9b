"""`bench/pystats.py`: a pystats file read by name, a request's share as the difference of two
runs, the table's rows, and a plain interpreter turned away."""

from __future__ import annotations

import opcode

import pytest

from bench import pystats

LOAD_FAST = opcode.opmap["LOAD_FAST"]


def _stats(load_fast: int, hits: int, frames: int) -> str:
    return "\n".join(
        [
            f"opcode[{LOAD_FAST}].execution_count : {load_fast}",
            f"opcode[{LOAD_FAST}].pair_count[{LOAD_FAST}] : {load_fast // 2}",
            f"opcode[{opcode.opmap['LOAD_ATTR']}].specialization.hit : {hits}",
            f"Frames pushed: {frames}",
            "Specialization stats:",  # no count: not a stat
        ]
    )


def test_a_stats_file_is_read_by_name() -> None:
    assert pystats.parse(_stats(10, 4, 3)) == {
        f"opcode[{LOAD_FAST}].execution_count": 10,
        f"opcode[{LOAD_FAST}].pair_count[{LOAD_FAST}]": 5,
        f"opcode[{opcode.opmap['LOAD_ATTR']}].specialization.hit": 4,
        "Frames pushed": 3,
    }


def test_a_request_is_the_long_runs_excess_over_the_short_ones() -> None:
    found = pystats.per_request(_stats(100, 10, 30), _stats(1100, 210, 530), 100)
    assert found["op LOAD_FAST"] == 10.0
    assert found["bytecodes"] == 10.0
    assert found["hit"] == 2.0
    assert found["Frames pushed"] == 5.0
    assert not any(name.startswith("opcode[") for name in found)  # pairs and raw numbers out


def test_the_specialized_opcodes_get_their_names() -> None:
    names = pystats.opcode_names()
    assert names[LOAD_FAST] == "LOAD_FAST"
    specialized = getattr(opcode, "_specialized_instructions", [])
    assert set(specialized) <= set(names)


def test_the_table_has_the_totals_and_the_opcodes_toolwire_runs_beyond_the_floor() -> None:
    floor = {"bytecodes": 2300.0, "op LOAD_FAST": 376.0, "op NOP": 14.0, "hit": 736.0}
    toolwire = {"bytecodes": 3880.0, "op LOAD_FAST": 618.0, "op NOP": 34.0, "hit": 1310.0}
    targets = {"floor": floor, "toolwire": toolwire}
    result = {"requests": 10, "warmup": 2, "mode": "streamed", "targets": targets}
    lines = pystats.render(result, top=1).splitlines()
    assert lines[0].startswith("per streamed plain request (10 counted after 2;")
    assert lines[1].split() == ["floor", "tw"]
    assert lines[2].split() == ["bytecodes", "executed", "2300.0", "3880.0"]
    assert lines[-1].split() == ["LOAD_FAST", "376.0", "618.0"]  # the top one only


def test_stream_asks_for_streamed_requests() -> None:
    assert pystats.parse_args(["--stream"]).stream and not pystats.parse_args([]).stream


def test_a_plain_interpreter_is_turned_away(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pystats.sysconfig, "get_config_var", lambda name: "--enable-shared")
    assert pystats.main([]) == 2
    assert "--enable-pystats" in capsys.readouterr().out
