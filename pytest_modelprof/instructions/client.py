"""The client: one long-lived callgrind server per process, asked for one model at a time.

Importing torch under callgrind costs about a minute of wall time, so a session starts the
server once (:class:`InstructionServer`, started on first use) and sends it every measurement.
Standard library only until a module must be pickled for it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.host import cpu_info
from pytest_modelprof.instructions.protocol import (
    MeasureRequest,
    Phase,
    ProtocolError,
    decode,
    encode,
)

if TYPE_CHECKING:
    from pytest_modelprof.instructions.counts import InstructionCounts

__all__ = [
    "INSTALL_HINT",
    "DEFAULT_CALLS",
    "DEFAULT_WARMUP",
    "InstructionsUnavailable",
    "find_valgrind",
    "InstructionServer",
    "shared_server",
]

INSTALL_HINT = "install it with `apt-get install valgrind` (Debian, Ubuntu, GitHub's runners)"
#: Measured calls per phase after the unmeasured warm-up calls: counts are exact, so a few do.
#: The warm-up is longer: Python 3.11 specialises a function's bytecode over its first calls,
#: and the allocator grows its heap, both of which a measured call must not pay.
DEFAULT_CALLS = 5
DEFAULT_WARMUP = 10


class InstructionsUnavailable(ModelprofError):
    """Instruction counts cannot be measured here (no valgrind)."""


def find_valgrind(path: str | None = None) -> str:
    """The ``valgrind`` executable, or :class:`InstructionsUnavailable` saying how to get it."""
    found = shutil.which("valgrind", path=path)
    if found is None:
        raise InstructionsUnavailable(
            "instruction counts run the model under valgrind's callgrind, and valgrind is not "
            f"on PATH: {INSTALL_HINT}"
        )
    return found


def valgrind_command(valgrind: str, out_prefix: Path) -> list[str]:
    """The command line of the server: collection off until the server switches it on, and
    address-space randomisation off where ``setarch`` can (the same layout in every session,
    so pointer-dependent paths, hashing by address, alignment, repeat)."""
    setarch = shutil.which("setarch")
    return [
        *([setarch, "-R"] if setarch else []),
        valgrind,
        "--tool=callgrind",
        "--collect-atstart=no",  # Python's start-up varies between runs: never count it
        "--instr-atstart=no",  # import torch at about a fifth of the cost; the server
        # switches instrumentation on once it is ready (callgrind_control)
        "--dump-instr=no",
        "--dump-line=no",
        "--compress-strings=no",
        f"--callgrind-out-file={out_prefix}.%p",  # each request's process has its own
        sys.executable,
        "-m",
        "pytest_modelprof.instructions.server",
    ]


def _environment() -> dict[str, str]:
    """The server's environment: this interpreter first on PATH, our import path, one thread,
    a fixed hash seed (dict and set orders, and with them instructions, stay the same)."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["PYTHONHASHSEED"] = "0"
    # A fixed mmap threshold switches off glibc's adaptive one, which otherwise moves after
    # the first large frees and sends later calls' allocations down other paths.
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 20))
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[key] = "1"
    return env


class InstructionServer:
    """One callgrind process that measures models on request; start it once, close it at
    the end (``with InstructionServer() as server: server.measure("resnet18", ...)``)."""

    def __init__(self, valgrind: str | None = None) -> None:
        self._valgrind = valgrind
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._log: IO[bytes] | None = None
        self.hello: dict[str, Any] = {}

    def __enter__(self) -> InstructionServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        """Whether the server process is up."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start valgrind and wait until torch is imported inside it (about a minute)."""
        if self.running:
            return
        valgrind = self._valgrind or find_valgrind()
        self._dir = tempfile.TemporaryDirectory(prefix="modelprof-callgrind-")
        work = Path(self._dir.name)
        self._log = (work / "server.log").open("w+b")
        env = _environment()
        env["MODELPROF_CALLGRIND_OUT"] = str(work / "callgrind.out")
        self._process = subprocess.Popen(
            valgrind_command(valgrind, work / "callgrind.out"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=work,
            env=env,
        )
        self.hello = self._receive("starting the callgrind server")
        if not self.hello.get("supported", False):
            self.close()
            raise InstructionsUnavailable(
                "this torch build has no callgrind client requests "
                "(torch._C._valgrind_supported_platform() is False); instruction counts need "
                "a Linux build of torch"
            )

    def _receive(self, doing: str) -> dict[str, Any]:
        process = self._process
        assert process is not None and process.stdout is not None
        line = process.stdout.readline()
        if not line:
            process.wait()
            raise InstructionsUnavailable(
                f"{doing}: the valgrind process exited with status {process.returncode}; "
                f"its output ends with:\n{self._log_tail()}"
            )
        return decode(line)

    def _log_tail(self, lines: int = 15) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode(errors="replace")
        self._log.seek(0, os.SEEK_END)
        return "\n".join(text.splitlines()[-lines:])

    def request(self, request: MeasureRequest) -> dict[str, Any]:
        """Send one request and wait for its reply (a model's own error raises here)."""
        self.start()
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(encode(request.to_json()))
            process.stdin.flush()
        except BrokenPipeError:
            pass  # the reply read below says why the server is gone
        reply = self._receive("measuring instructions")
        if not reply.get("ok"):
            raise ModelprofError(
                f"instructions: the measurement under callgrind failed: {reply.get('error')}"
            )
        return reply

    def measure(
        self,
        model: Any,
        *,
        input_shape: Any = None,
        inputs: Any = None,
        phases: Sequence[Phase] = ("forward",),
        calls: int = DEFAULT_CALLS,
        warmup: int = DEFAULT_WARMUP,
        arch: Mapping[str, Any] | None = None,
        dtype: str | None = None,
    ) -> InstructionCounts:
        """Instructions per call of each phase of ``model`` (a name, or a module that is
        pickled with its inputs for the server)."""
        if calls < 1:
            raise SettingsError(f"calls must be >= 1, got {calls}")
        if warmup < 0:
            raise SettingsError(f"warmup must be >= 0, got {warmup}")
        common: dict[str, Any] = {
            "phases": tuple(phases),
            "calls": calls,
            "warmup": warmup,
            "sys_path": tuple(p for p in sys.path if p),
        }
        if isinstance(model, str) and inputs is None and dtype is None:
            reply = self.request(
                MeasureRequest(
                    model=model, input_shape=input_shape, arch=dict(arch or {}), **common
                )
            )
        else:
            self.start()
            assert self._dir is not None
            path = Path(self._dir.name) / "model.pt"
            _pickle_model(model, input_shape, inputs, dtype, arch or {}, path)
            try:
                reply = self.request(MeasureRequest(pickle=str(path), **common))
            finally:
                path.unlink(missing_ok=True)
        return counts_from_reply(reply)

    def close(self) -> None:
        """End the server (closing its input ends its loop) and remove its files."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                try:
                    process.stdin.close()
                except OSError:
                    pass
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def counts_from_reply(reply: Mapping[str, Any]) -> InstructionCounts:
    """The counts of a server reply, with the CPU this process runs on."""
    from pytest_modelprof.instructions.counts import InstructionCounts

    counts = reply.get("counts")
    if not isinstance(counts, dict) or "forward" not in counts and not counts:
        raise ProtocolError(f"a reply without counts: {dict(reply)!r}")
    name, flags = cpu_info()
    return InstructionCounts(
        forward=counts.get("forward"),
        backward=counts.get("backward"),
        training_step=counts.get("training_step"),
        calls=int(reply["calls"]),
        warmup=int(reply.get("warmup", 0)),
        cpu=name,
        cpu_flags=flags,
        capability=str(reply.get("capability", "")),
    )


def _pickle_model(
    model: Any,
    input_shape: Any,
    inputs: Any,
    dtype: str | None,
    arch: Mapping[str, Any],
    path: Path,
) -> None:
    """The model (a real copy with its weights) and its inputs, saved for the server."""
    import pickle

    import torch

    from pytest_modelprof.profile import real_model_and_inputs

    torch.manual_seed(0)  # a named model's random weights and inputs: the same every run
    module, batch = real_model_and_inputs(
        model,
        input_shape=input_shape,
        inputs=inputs,
        dtype=dtype,
        purpose="the instruction count",
        **arch,
    )
    try:
        torch.save((module, batch), path)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise ModelprofError(
            f"instructions: the model cannot be sent to the valgrind process ({exc}); define "
            f"its class at module level, or give the marker model='pkg.module:factory'"
        ) from None


_SHARED: list[InstructionServer] = []  # this process's server: importing torch costs minutes


def shared_server() -> InstructionServer:
    """The process's one server (one per pytest session or xdist worker), started on first
    use and closed when the process exits."""
    if not _SHARED:
        import atexit

        _SHARED.append(InstructionServer())
        atexit.register(_SHARED[0].close)
    _SHARED[0].start()
    return _SHARED[0]


def close_shared() -> None:
    """End the process's server, if one was started (a pytest session's end)."""
    while _SHARED:
        _SHARED.pop().close()
