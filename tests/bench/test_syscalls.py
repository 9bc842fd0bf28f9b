"""`bench/syscalls.py`: the tracers' outputs read right, the table has a row per system call and
counter and a column per target in each mode, and a tiny run (streamed, strace) prints it."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bench import syscalls

STRACE = """syscall              calls    errors
---------------- --------- ---------
read                   412          
writev                 200          
epoll_pwait             13         2
---------------- --------- ---------
total                  625         2
"""

PERF = """# started on Thu Dec  3 18:31:17 2026

412,,syscalls:sys_enter_read,3002114311,100.00,,
0,,syscalls:sys_enter_open,3002114311,100.00,,
<not counted>,,syscalls:sys_enter_futex,0,0.00,,
200,,syscalls:sys_enter_writev,3002114311,100.00,,
"""


def test_strace_summary_is_read_by_name_without_the_total() -> None:
    assert syscalls.parse_strace(STRACE) == {"read": 412, "writev": 200, "epoll_pwait": 13}


def test_perf_counts_are_read_by_name_without_the_zeros() -> None:
    assert syscalls.parse_perf(PERF) == {"read": 412, "writev": 200}


INTERRUPTS = """           CPU0       CPU1
  0:         21          0   IO-APIC   2-edge      timer
LOC:    2188555    2264572   Local timer interrupts
RES:     583569    3026509   Rescheduling interrupts
CAL:    1177010    7708229   Function call interrupts
TLB:      25322      23948   TLB shootdowns
"""


def test_wake_up_ipis_are_the_function_call_and_reschedule_interrupts_per_cpu() -> None:
    assert syscalls.wake_up_ipis(INTERRUPTS) == [583569 + 1177010, 3026509 + 7708229]
    assert syscalls.wake_up_ipis("LOC: 1 2 Local timer interrupts\n") == []


def _measured(reads: float) -> dict[str, object]:
    return {
        "requests": 100,
        "rps": 5000.0,
        "voluntary": 0.01,
        "involuntary": 0.02,
        "minor_faults": 0.0,
        "user_us": 80.0,
        "system_us": 30.0,
        "ipis_in": 0.02,
        "ipis_out": reads / 4,
        "traced_requests": 100,
        "syscalls": {"read": reads, "writev": 1.0, "epoll_pwait": 0.001},
    }


def _rows(out: str, mode: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    at = lines.index(mode)
    end = lines.index("", at) if "" in lines[at:] else len(lines)
    return {line[:22].strip(): line[22:].split() for line in lines[at + 1 : end]}


def test_the_table_has_a_row_per_call_and_counter_and_a_column_per_target() -> None:
    meta = {"concurrency": 64, "duration": 3.0, "pinning": "-", "load_average_start": None}
    modes = {
        mode: {
            "passthrough": _measured(2.0),
            "floor": _measured(2.5),
            "toolwire_tree1": _measured(3),
        }
        for mode in ("json", "stream")
    }
    out = syscalls.render({"meta": meta, "labels": {}, "modes": modes})
    for mode in ("json", "stream"):
        rows = _rows(out, mode)
        assert rows[""] == ["pt", "floor", "tw@1"]
        assert rows["read"] == ["2.00", "2.50", "3.00"]
        assert rows["system calls"] == ["3.00", "3.50", "4.00"]
        assert "epoll_pwait" not in rows  # below 0.005 a request
        assert rows["user us (untraced)"] == ["80.0"] * 3
        assert rows["IPIs to the others"] == ["0.50", "0.62", "0.75"]
        assert "instructions k" not in rows  # no --callgrind


def test_callgrind_counts_get_their_rows() -> None:
    meta = {"concurrency": 64, "duration": 3.0, "pinning": "-", "load_average_start": None}
    counted = {"instructions": 390_000.0, "collector": 5_300.0}
    modes = {"json": {"floor": _measured(2.0) | counted, "toolwire": _measured(2.0) | counted}}
    rows = _rows(syscalls.render({"meta": meta, "labels": {}, "modes": modes}), "json")
    assert rows["instructions k"] == ["390.0", "390.0"]
    assert rows["collector's k"] == ["5.3", "5.3"]


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    done = subprocess.run(["strace", "-c", "-o", "/dev/null", "true"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
@pytest.mark.skipif(not _strace_works(), reason="strace is not installed or may not trace")
def test_a_tiny_run_counts_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--duration", "1", "--warmup", "0", "--tracer", "strace", "--modes", "stream"]
    assert syscalls.main([*argv, "--no-pin"]) == 0
    rows = _rows(capsys.readouterr().out, "stream")
    assert rows[""] == ["pt", "floor", "tw"]
    # Every request reads its body and its upstream's answer, and writes its answer.
    assert all(float(v) >= 2 for v in rows["read"])
    assert all(float(v) >= 1 for v in rows["system calls"])
    for counter in ("voluntary switches", "user us (untraced)", "req/s (untraced)"):
        assert len(rows[counter]) == 3
    assert "IPIs to the others" not in rows  # unpinned: no CPU of its own to tell them by
    assert all(float(v) > 0 for v in rows["req/s (untraced)"])
