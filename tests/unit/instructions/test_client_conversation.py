"""The client's side of the conversation with the callgrind server, against a stand-in.

The stand-in is an executable named ``valgrind`` that ignores valgrind's options and speaks the
server's protocol (a hello line, then one reply line per request), the way a real server
answers; what it received is logged so the tests can read the requests the client sent.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_modelprof.baseline.collector import Measure
from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.instructions import InstructionsUnavailable
from pytest_modelprof.instructions.client import (
    InstructionServer,
    close_shared,
    counts_from_reply,
    shared_server,
)
from pytest_modelprof.instructions.gate import INSTRUCTIONS_COLLECTOR
from pytest_modelprof.instructions.protocol import ProtocolError

STAND_IN = """#!{python}
import json, os, sys
from pathlib import Path

log = Path(os.environ["STAND_IN_LOG"])
behaviour = os.environ.get("STAND_IN", "answer")
supported = behaviour != "unsupported"
hello = {{"ready": True, "torch": "2.x", "capability": "AVX2", "supported": supported}}
sys.stdout.write(json.dumps(hello) + "\\n")
sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    pickled = request.get("pickle")
    request["pickle_existed"] = bool(pickled) and Path(pickled).is_file()
    with log.open("a") as out:
        out.write(json.dumps(request) + "\\n")
    if behaviour == "die":
        sys.stderr.write("Segmentation fault in the measured model\\n")
        sys.exit(11)
    if behaviour == "fail":
        reply = {{"ok": False, "error": "RuntimeError: shapes cannot be multiplied"}}
    else:
        figures = {{"forward": 1234, "backward": 2345, "training_step": 4000}}
        counts = {{phase: figures[phase] for phase in request["phases"]}}
        reply = {{"ok": True, "counts": counts,
                 "calls": request["calls"], "warmup": request["warmup"], "capability": "AVX2"}}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``valgrind`` on PATH that answers like the server; returns its request log."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "valgrind"
    fake.write_text(STAND_IN.format(python=sys.executable))
    fake.chmod(0o755)
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def _requests(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


class Doubler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_a_named_model_is_sent_by_name_with_its_shape_and_arch(stand_in: Path) -> None:
    with InstructionServer() as server:
        assert server.running
        assert server.hello["capability"] == "AVX2"
        counts = server.measure(
            "resnet18",
            input_shape=(1, 3, 32, 32),
            phases=("forward", "backward"),
            calls=3,
            warmup=2,
            arch={"num_classes": 10},
        )
    assert not server.running
    (request,) = _requests(stand_in)
    assert request["model"] == "resnet18" and request["pickle"] is None
    assert request["input_shape"] == [1, 3, 32, 32]
    assert request["arch"] == {"num_classes": 10}
    assert request["phases"] == ["forward", "backward"]
    assert (counts.forward, counts.backward, counts.training_step) == (1234, 2345, None)
    assert (counts.calls, counts.warmup, counts.capability) == (3, 2, "AVX2")


def test_a_module_travels_pickled_and_its_file_is_removed_after(stand_in: Path) -> None:
    with InstructionServer() as server:
        counts = server.measure(nn.Linear(4, 2), input_shape=(1, 4))
    (request,) = _requests(stand_in)
    assert request["model"] is None and request["pickle_existed"] is True
    assert not Path(str(request["pickle"])).exists()
    assert counts.forward == 1234


def test_a_model_class_the_server_cannot_import_names_the_fix(stand_in: Path) -> None:
    class Local(nn.Module):  # defined in a function: pickle cannot find it by name
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    with (
        InstructionServer() as server,
        pytest.raises(ModelprofError, match="define its class at module level"),
    ):
        server.measure(Local(), input_shape=(2,))
    assert not stand_in.exists()  # nothing was sent


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        ({"calls": 0}, "calls must be >= 1, got 0"),
        ({"warmup": -1}, "warmup must be >= 0, got -1"),
    ],
)
def test_calls_and_warmup_are_checked_before_anything_runs(
    option: dict[str, int], problem: str
) -> None:
    server = InstructionServer(valgrind="/nonexistent/valgrind")
    with pytest.raises(SettingsError, match=problem):
        server.measure("resnet18", **option)  # type: ignore[arg-type]
    assert not server.running


def test_the_models_own_error_comes_back_as_the_failure(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN", "fail")
    with (
        InstructionServer() as server,
        pytest.raises(ModelprofError, match="failed: RuntimeError: shapes cannot be multiplied"),
    ):
        server.measure(Doubler(), input_shape=(3,))


def test_a_server_that_dies_mid_request_says_so_with_its_output(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN", "die")
    server = InstructionServer()
    try:
        with pytest.raises(InstructionsUnavailable) as caught:
            server.measure("resnet18")
    finally:
        server.close()
    message = str(caught.value)
    assert "measuring instructions: the valgrind process exited with status 11" in message
    assert "Segmentation fault in the measured model" in message


def test_a_torch_without_client_requests_is_refused_at_start(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN", "unsupported")
    server = InstructionServer()
    with pytest.raises(InstructionsUnavailable, match="no callgrind client requests"):
        server.start()
    assert not server.running


def test_the_shared_server_is_one_per_process_until_closed(stand_in: Path) -> None:
    try:
        first = shared_server()
        assert shared_server() is first and first.running
    finally:
        close_shared()
    assert not first.running
    close_shared()  # closing again is harmless


def test_a_reply_without_counts_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="a reply without counts"):
        counts_from_reply({"ok": True, "calls": 5})


def test_the_collector_gates_the_forward_or_the_training_step(stand_in: Path) -> None:
    try:
        forward = INSTRUCTIONS_COLLECTOR.measure(
            Measure(request=ProfileRequest("resnet18", input_shape=(1, 3, 8, 8)), limits=Limits())
        )
        training = INSTRUCTIONS_COLLECTOR.measure(
            Measure(
                request=ProfileRequest(Doubler(), input_shape=(3,), include_backward=True),
                limits=Limits(),
            )
        )
    finally:
        close_shared()
    assert forward is not None and training is not None
    assert forward["instructions"] == 1234 and forward["backward"] is None
    assert training["instructions"] == 4000
    assert [r["phases"] for r in _requests(stand_in)] == [
        ["forward"],
        ["forward", "backward", "training_step"],
    ]


def test_the_collector_refuses_a_gpu_profile_naming_its_device() -> None:
    call = Measure(request=ProfileRequest("resnet18", device="cuda:0"), limits=Limits())
    with pytest.raises(ModelprofError, match="device='cuda:0'; measure them on the CPU"):
        INSTRUCTIONS_COLLECTOR.measure(call)


def test_the_package_names_its_server_and_counts_without_importing_them_first() -> None:
    from pytest_modelprof import instructions
    from pytest_modelprof.instructions.counts import InstructionCounts

    assert instructions.InstructionServer is InstructionServer
    assert instructions.InstructionCounts is InstructionCounts
    with pytest.raises(AttributeError, match="NoSuchName"):
        instructions.NoSuchName  # noqa: B018
