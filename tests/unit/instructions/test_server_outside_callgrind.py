"""The measuring server run without valgrind: what it reads from callgrind's dumps, the
replies it sends, and the errors that say it is not running under callgrind.

Outside valgrind, callgrind's client requests do nothing, so a dump the test writes where
callgrind would write it stands for the one callgrind writes after a measured call.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from pytest_modelprof.instructions import InstructionsUnavailable
from pytest_modelprof.instructions.client import InstructionServer
from pytest_modelprof.instructions.protocol import MeasureRequest, ProtocolError, encode
from pytest_modelprof.instructions.server import CallgrindCounter, instrument_on, measure, serve

# A dump as callgrind 3.19 writes it: 5,000 instructions, 700 of them in malloc itself.
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
events: Ir
summary: 5000

fn=(1) malloc
0 700
fn=(2) at::native::add
0 4300

totals: 5000
"""


def _dump(path: Path) -> Path:
    path.write_text(DUMP)
    return path


def test_a_call_counts_the_dump_it_left_less_the_allocator_and_removes_it(
    tmp_path: Path,
) -> None:
    prefix = tmp_path / "callgrind.out"
    counter = CallgrindCounter(prefix)
    ran: list[int] = []
    dump = _dump(tmp_path / "callgrind.out.3")
    assert counter.time(lambda: ran.append(1)) == 0.0  # the figure is the count, not a time
    assert ran == [1] and counter.counts == [4300]
    assert not dump.exists()


def test_counting_outside_callgrind_says_so(tmp_path: Path) -> None:
    counter = CallgrindCounter(tmp_path / "callgrind.out")
    with pytest.raises(ProtocolError, match="does not run under `valgrind --tool=callgrind`"):
        counter.time(lambda: None)


def test_a_named_model_is_measured_once_per_requested_call(tmp_path: Path) -> None:
    prefix = tmp_path / "callgrind.out"
    _dump(tmp_path / "callgrind.out.1")
    request = MeasureRequest(model="resnet18", input_shape=[1, 3, 32, 32], calls=1, warmup=0)
    assert measure(request, prefix) == {"forward": 4300}
    assert list(tmp_path.iterdir()) == []
    # A second call finds no dump: the one it read was removed, not counted twice.
    with pytest.raises(ProtocolError, match="callgrind wrote no dump"):
        measure(request, prefix)


def test_the_server_greets_with_its_probe_and_answers_each_line(tmp_path: Path) -> None:
    prefix = tmp_path / "callgrind.out"
    # The probe's dump: a loop counted at start shows that callgrind counts at all.
    _dump(Path(f"{prefix}.{os.getpid()}.1"))
    requests = io.BytesIO(
        b"not json\n\n" + encode({"op": "measure", "model": "resnet18", "calls": 0})
    )
    replies = io.BytesIO()
    serve(requests, replies, prefix)
    hello, *answers = [json.loads(line) for line in replies.getvalue().splitlines()]
    assert hello["ready"] is True and hello["probe"] == 4300
    assert hello["capability"] and hello["torch"]
    # One reply per request line (the blank one is none), each error naming what was wrong.
    assert [a["ok"] for a in answers] == [False, False]
    assert answers[0]["error"].startswith("ProtocolError: not a message: 'not json'")
    assert answers[1]["error"] == "ProtocolError: calls: expected an integer >= 1, got 0"


def test_a_missing_callgrind_control_says_it_comes_with_valgrind(tmp_path: Path) -> None:
    with pytest.raises(ProtocolError, match=r"cannot run .*absent.*; it comes with valgrind"):
        instrument_on(str(tmp_path / "absent"))


def test_a_failing_callgrind_control_is_quoted(tmp_path: Path) -> None:
    control = tmp_path / "callgrind_control"
    control.write_text("#!/bin/sh\necho 'vgdb: no such process' >&2\nexit 2\n")
    control.chmod(0o755)
    with pytest.raises(ProtocolError) as caught:
        instrument_on(str(control))
    assert f"{control} --instr=on {os.getpid()} failed: vgdb: no such process" in str(caught.value)


@pytest.mark.slow  # the server imports torch before it finds nothing counted
def test_a_valgrind_that_does_not_run_callgrind_is_caught_at_start(tmp_path: Path) -> None:
    # A "valgrind" that drops its options and runs the server directly: nothing counts.
    fake = tmp_path / "valgrind"
    fake.write_text('#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n')
    fake.chmod(0o755)
    server = InstructionServer(valgrind=str(fake))
    try:
        with pytest.raises(InstructionsUnavailable) as caught:
            server.start()
    finally:
        server.close()
    message = str(caught.value)
    assert message.startswith("starting the callgrind server: the valgrind process exited")
    assert "callgrind wrote no dump: this process does not run under" in message
