"""The measuring side: ``python -m pytest_modelprof.instructions.server`` under callgrind.

Started by :class:`~pytest_modelprof.instructions.client.InstructionServer` as
``valgrind --tool=callgrind --collect-atstart=no ... python -m ...server``: collection is off
while Python and torch start (about 6 x 10^9 instructions that vary between runs), and is
switched on only around each measured call (:class:`CallgrindCounter`, a timer the runtime's
``time_forward``/``time_backward``/``time_training_step`` accept, so the phases run exactly as
``modelprof bench`` times them: eval mode for the forward, train mode without dropout for the
others, seed 0, one thread). Each call's counts are dumped to a file of their own and read
back here, less what the memory allocators executed themselves (their bookkeeping follows the
heap's history: ``protocol.ALLOCATOR_FUNCTIONS``); a phase's figure is the median over its
calls. Each request is measured in a child forked from the server, so every measurement
starts from the same process state. The reply is one JSON line per request.

Replies go to the stdout the process started with; ``sys.stdout`` is pointed at stderr, so a
model that prints cannot garble the channel.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pytest_modelprof.instructions.protocol import (
    MeasureRequest,
    ProtocolError,
    allocator_instructions,
    decode,
    encode,
    newest_dump,
    parse_callgrind_total,
)

__all__: list[str] = []

#: The ``--callgrind-out-file`` prefix, so the server finds the dumps it asked for.
OUT_ENV = "MODELPROF_CALLGRIND_OUT"


class CallgrindCounter:
    """A runtime ``Timer`` that counts each call of ``fn`` on its own: collection switched on
    around the call, then off with a dump that is read back into :attr:`counts`."""

    name = "callgrind"

    def __init__(self, prefix: Path) -> None:
        from pytest_modelprof._compat import callgrind_toggle, callgrind_toggle_and_dump

        self._on = callgrind_toggle
        self._off_and_dump = callgrind_toggle_and_dump
        self._prefix = prefix
        self.counts: list[int] = []

    def time(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once, counted; the figure goes to :attr:`counts`, not the return value."""
        self._on()
        fn()
        self._off_and_dump()
        self.counts.append(_take_dump(self._prefix))
        return 0.0


def _take_dump(prefix: Path) -> int:
    """The instruction total of the newest dump, which is then removed."""
    dump = newest_dump(prefix)
    if dump is None:
        raise ProtocolError(
            "callgrind wrote no dump: this process does not run under `valgrind --tool=callgrind`"
        )
    return _read_and_remove(dump)


def _read_and_remove(dump: Path) -> int:
    """The instructions of one dump outside the memory allocators (whose bookkeeping moved
    one call's count by up to 0.3 %: protocol.ALLOCATOR_FUNCTIONS); the dump is then removed."""
    try:
        text = dump.read_text(encoding="utf-8", errors="replace")
        return parse_callgrind_total(text) - allocator_instructions(text)
    finally:
        dump.unlink(missing_ok=True)


def _read_dump(prefix: Path) -> int:
    """Dump the counts collected since the last dump and return its instruction total."""
    from pytest_modelprof._compat import callgrind_toggle, callgrind_toggle_and_dump

    callgrind_toggle()  # on, so that the next call switches it off again and dumps
    callgrind_toggle_and_dump()
    return _take_dump(prefix)


def instrument_on(control: str = "callgrind_control") -> None:
    """Switch callgrind's instrumentation on for this process (it starts with it off:
    ``--instr-atstart=no`` imports torch about five times faster).

    ``callgrind_control`` reaches valgrind through vgdb, which valgrind polls while it runs
    guest code, so this process keeps running Python until the command returns.
    """
    import subprocess

    command = [control, "--instr=on", str(os.getpid())]
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        raise ProtocolError(f"cannot run {control} ({exc}); it comes with valgrind") from None
    spins = 0
    with process:  # its output pipe is closed on the way out
        while process.poll() is None:
            spins += 1  # guest code to run: valgrind answers vgdb between basic blocks
        output = process.stdout.read().decode(errors="replace") if process.stdout else ""
    if process.returncode != 0:
        raise ProtocolError(f"{' '.join(command)} failed: {output.strip()[-300:]}")


def _check_counting(prefix: Path) -> int:
    """Instructions of a small known loop: zero means nothing is counted."""
    from pytest_modelprof._compat import callgrind_toggle

    callgrind_toggle()
    total = 0
    for i in range(1000):
        total += i
    callgrind_toggle()
    counted = _read_dump(prefix)
    if counted <= 0:
        raise ProtocolError("callgrind counted no instructions: its instrumentation is off")
    return counted


def _load(request: MeasureRequest) -> tuple[Any, Any]:
    """The model and its inputs ``(args, kwargs)``: built by name, or unpickled."""
    import torch

    for entry in request.sys_path:
        if entry not in sys.path:
            sys.path.append(entry)
    if request.pickle is not None:
        module, inputs = torch.load(request.pickle, weights_only=False)
        return module, inputs
    from pytest_modelprof.profile import real_model_and_inputs

    assert request.model is not None  # MeasureRequest holds a model name or a pickle
    torch.manual_seed(0)  # random weights and inputs, the same in every run
    shape = request.input_shape
    if isinstance(shape, list):
        shape = tuple(tuple(s) if isinstance(s, list) else s for s in shape)
    return real_model_and_inputs(
        request.model, input_shape=shape, purpose="the instruction count", **request.arch
    )


def measure(request: MeasureRequest, prefix: Path) -> dict[str, int]:
    """Instructions per call of each requested phase: the median of its calls' counts (a call
    that met a one-off cost, the allocator consolidating its free lists, does not move it)."""
    from pytest_modelprof.runtime.timing import time_backward, time_forward, time_training_step

    module, batch = _load(request)
    runners = {
        "forward": time_forward,
        "backward": time_backward,
        "training_step": time_training_step,
    }
    out: dict[str, int] = {}
    for phase in request.phases:
        counter = CallgrindCounter(prefix)
        gc.collect()
        gc.disable()  # a collection inside one measured call and not another is noise
        try:
            runners[phase](
                module,
                batch,
                rounds=request.calls,
                warmup=request.warmup,
                timer=counter,
                seed=0,
                threads=1,
            )
        finally:
            gc.enable()
        out[phase] = round(statistics.median(counter.counts))
    return out


def _own(prefix: Path) -> Path:
    """This process's dump prefix (the server runs with ``--callgrind-out-file=...%p``)."""
    return Path(f"{prefix}.{os.getpid()}")


def _answer(line: bytes, prefix: Path, capability: str) -> dict[str, Any]:
    try:
        request = MeasureRequest.from_json(decode(line))
        return {
            "ok": True,
            "counts": measure(request, _own(prefix)),
            "calls": request.calls,
            "warmup": request.warmup,
            "capability": capability,
        }
    except Exception as exc:  # the model's own error travels back as text
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=-8),
        }


def _in_child(line: bytes, prefix: Path, capability: str) -> dict[str, Any]:
    """Answer in a forked child, so that every request starts from the same process state
    (what earlier models left in the allocator and the caches would move the counts)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, answer through the pipe, leave without clean-up
        os.close(read_end)
        code = 1
        try:
            with os.fdopen(write_end, "wb") as out:
                out.write(encode(_answer(line, prefix, capability)))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {
            "ok": False,
            "error": f"the measuring process ended (status {status}) before it answered",
        }
    return decode(data)


def _preload() -> None:
    """Import what models and test modules commonly import while nothing is instrumented:
    each request's process would otherwise pay for it at about fifty times the cost."""
    import importlib

    import pytest_modelprof.profile  # noqa: F401  (builds named models)

    for name in ("pytest", "torchvision"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def serve(requests: IO[bytes], replies: IO[bytes], prefix: Path) -> None:
    """Answer requests until ``requests`` ends: one reply line per request line."""
    import torch

    import pytest_modelprof.runtime.timing  # noqa: F401  (imported before counting starts)
    from pytest_modelprof._compat import valgrind_supported

    _preload()
    supported = valgrind_supported()
    capability = str(torch.backends.cpu.get_cpu_capability())
    hello: dict[str, Any] = {
        "ready": True,
        "torch": str(torch.__version__),
        "capability": capability,
        "supported": supported,
    }
    if supported:
        instrument_on()
        hello["probe"] = _check_counting(_own(prefix))
    replies.write(encode(hello))
    replies.flush()
    for line in requests:
        if line.strip():
            replies.write(encode(_in_child(line, prefix, capability)))
            replies.flush()


def main() -> None:
    """Entry point of the server process."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints go to stderr, not the channel
    prefix = Path(os.environ.get(OUT_ENV, "callgrind.out"))
    serve(sys.stdin.buffer, replies, prefix)


if __name__ == "__main__":
    main()
