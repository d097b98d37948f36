"""The instruction engine's parts that need no valgrind: dumps, messages, CPU info, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_modelprof.host import cpu_info
from pytest_modelprof.instructions import INSTALL_HINT, InstructionsUnavailable, find_valgrind
from pytest_modelprof.instructions.client import InstructionServer, counts_from_reply
from pytest_modelprof.instructions.counts import NOISE, keep_stored
from pytest_modelprof.instructions.protocol import (
    MeasureRequest,
    ProtocolError,
    allocator_instructions,
    decode,
    encode,
    newest_dump,
    parse_callgrind_total,
)

# The head and tail of a dump that callgrind 3.19 wrote for CALLGRIND_DUMP_STATS.
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 725
cmd:  python -m pytest_modelprof.instructions.server
part: 2

desc: Trigger: Client Request

positions: line
events: Ir
summary: 3174052

fn=(1) 0x0000000000123456
0 12

totals: 3174052
"""


def test_the_total_is_the_totals_line() -> None:
    assert parse_callgrind_total(DUMP) == 3174052


def test_the_event_is_found_by_name_among_several() -> None:
    text = "events: Dr Ir Dw\ntotals: 10 20 30\n"
    assert parse_callgrind_total(text) == 20
    # Callgrind leaves trailing zero counts out of a line.
    assert parse_callgrind_total("events: Dr Dw Ir\ntotals: 10 20\n") == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("totals: 5\n", "events:"),
        ("events: Dr\ntotals: 5\n", "does not count Ir"),
        ("events: Ir\n", "totals:"),
    ],
)
def test_a_dump_without_the_figure_says_what_is_missing(text: str, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        parse_callgrind_total(text)


# Function blocks as callgrind 3.19 writes them: a cost line under fn= is the function's own
# cost; the line after calls= is the inclusive cost of that call, charged to the caller's record.
ALLOCATING = """events: Ir
fn=at::detail::empty_generic
0 100
cfn=malloc
calls=2 0
0 900
fn=malloc
0 70
cfn=_int_malloc.constprop.0
calls=1 0
0 800
fn=_int_malloc.constprop.0
fi=./malloc/arena.c
0 600
fe=./malloc/malloc.c
+2 200
fn=(7) _PyObject_Free
0 30
fn=(8) list_dealloc
0 5
cfn=(7)
calls=1 0
0 30
fn=(7)
0 4
totals: 1009
"""


def test_the_allocators_own_instructions_are_summed_without_their_callers() -> None:
    # malloc 70 + _int_malloc 600 + 200 (its inlined part from another file) + _PyObject_Free
    # 30 + 4 (named once, then by number); neither empty_generic's 100 nor the calls' inclusive
    # costs (900, 800, 30) count.
    assert allocator_instructions(ALLOCATING) == 904
    assert parse_callgrind_total(ALLOCATING) - allocator_instructions(ALLOCATING) == 105
    with pytest.raises(ProtocolError, match="does not count Ir"):
        allocator_instructions("events: Dr\ntotals: 5\n")


def test_the_newest_dump_is_the_highest_number(tmp_path: Path) -> None:
    prefix = tmp_path / "callgrind.out"
    assert newest_dump(prefix) is None
    for name in ("callgrind.out", "callgrind.out.2", "callgrind.out.10", "callgrind.out.x"):
        (tmp_path / name).write_text("")
    assert newest_dump(prefix) == tmp_path / "callgrind.out.10"


def test_a_request_survives_the_wire() -> None:
    request = MeasureRequest(
        model="resnet18",
        input_shape=(1, 3, 32, 32),
        phases=("forward", "backward"),
        calls=3,
        warmup=1,
    )
    again = MeasureRequest.from_json(decode(encode(request.to_json())))
    assert again.model == "resnet18" and again.input_shape == [1, 3, 32, 32]
    assert again.phases == ("forward", "backward") and (again.calls, again.warmup) == (3, 1)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"model": "m", "phases": ["sideways"]}, "phases"),
        ({"model": "m", "calls": 0}, "calls"),
        ({"model": "m", "warmup": -1}, "warmup"),
        ({"model": "m", "pickle": "p"}, "exactly one"),
        ({}, "exactly one"),
    ],
)
def test_a_bad_request_names_its_field(data: dict[str, object], problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        MeasureRequest.from_json(data)


def test_a_line_that_is_not_a_message_is_quoted() -> None:
    with pytest.raises(ProtocolError, match="not a message: 'hello'"):
        decode(b"hello\n")


def test_cpu_info_keeps_the_model_and_the_instruction_set_flags() -> None:
    text = (
        "processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
        "flags\t\t: fpu vme avx2 sse4_2 avx512f fma hypervisor avx512_vnni\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
    )
    assert cpu_info(text) == (
        "AMD EPYC 7763 64-Core Processor",
        "avx2 avx512_vnni avx512f fma sse4_2",
    )
    assert cpu_info("") == ("unknown", "")


def test_a_reply_becomes_counts_with_this_cpu() -> None:
    counts = counts_from_reply(
        {
            "ok": True,
            "counts": {"forward": 120, "backward": 300},
            "calls": 5,
            "warmup": 2,
            "capability": "AVX2",
        }
    )
    assert (counts.forward, counts.backward, counts.training_step) == (120, 300, None)
    assert counts.calls == 5 and counts.capability == "AVX2"
    assert counts.cpu == cpu_info()[0]


def test_a_rewrite_keeps_the_stored_count_within_the_noise() -> None:
    stored = 1_000_000
    assert keep_stored(stored, stored + int(NOISE * stored)) == stored
    assert keep_stored(stored, stored - int(NOISE * stored)) == stored
    assert keep_stored(stored, stored + int(2 * NOISE * stored)) == stored + 2 * 5_000


def test_without_valgrind_the_error_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(InstructionsUnavailable, match="apt-get install valgrind"):
        find_valgrind(path=str(tmp_path))
    assert "apt-get install valgrind" in INSTALL_HINT


def test_a_server_that_dies_at_start_says_so_with_its_output(tmp_path: Path) -> None:
    # A stand-in for valgrind that fails the way a broken install does.
    fake = tmp_path / "valgrind"
    fake.write_text("#!/bin/sh\necho 'valgrind: failed to start tool' >&2\nexit 1\n")
    fake.chmod(0o755)
    server = InstructionServer(valgrind=str(fake))
    with pytest.raises(InstructionsUnavailable, match="failed to start tool"):
        server.start()
    server.close()


def test_importing_the_engine_imports_neither_torch_nor_pydantic() -> None:
    code = (
        "import sys, pytest_modelprof.instructions as i, pytest_modelprof.instructions.client; "
        "print(sorted(m for m in ('torch', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
