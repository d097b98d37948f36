"""What the per-module timing hooks cost: resnet50's forward with and without them.

``modelprof bench`` and ``modelprof graph --timed`` time every module with forward hooks
(``pytest_modelprof.runtime.module_timing``); the hooks run inside the timed forward, so their
cost is part of every module's figure. This measures it: the same model and input, rounds of
the plain forward and of the hooked forward *alternating* in one process (so load on the
machine hits both alike), each timed end to end with the same host clock. It prints the
medians and their ratio, and the ratio per module call.

Reproduce: python benchmarks/bench_module_timing.py              (about a minute on 1 thread)
           python benchmarks/bench_module_timing.py --busy       (a second process spinning)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import shlex
import statistics
import sys
import time

import torch
import torchvision

from pytest_modelprof._tensors import as_inputs, call_model
from pytest_modelprof.runtime.context import ProfilingContext

# The benchmark drives the recorder round by round (private on purpose: the public entry point
# is time_modules, which does not interleave plain rounds).
from pytest_modelprof.runtime.module_timing import _HostMarks, _Recorder
from pytest_modelprof.runtime.timing import PerfCounterTimer


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--size", type=int, default=224, help="input H = W (default 224)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--busy", action="store_true",
                        help="run a busy-looping second process meanwhile (it stops by itself)")
    args = parser.parse_args()
    print(f"# {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    print(f"# torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{args.threads} thread(s)")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    batch = as_inputs(torch.randn(1, 3, args.size, args.size))
    calls = paths = 0
    busy: mp.Process | None = None
    if args.busy:
        busy = mp.Process(target=_spin, args=(600.0,), daemon=True)
        busy.start()
    try:
        clock = PerfCounterTimer()
        recorder = _Recorder(model, _HostMarks())
        plain: list[float] = []
        hooked: list[float] = []
        with ProfilingContext(model, threads=args.threads, eval_mode=True, grad=False):
            for i in range(args.warmup + args.rounds):
                a = clock.time(lambda: call_model(model, batch))
                with recorder:
                    b = clock.time(lambda: (call_model(model, batch), recorder.take_round()))
                if i >= args.warmup:
                    plain.append(a)
                    hooked.append(b)
            with recorder:  # one more hooked forward, to count the module calls in one
                call_model(model, batch)
                calls = len(recorder.calls)
                paths = len(recorder.order)
                recorder.take_round()
    finally:
        if busy is not None:
            busy.terminate()
            busy.join()
    p, h = statistics.median(plain), statistics.median(hooked)
    print(f"resnet50 1x3x{args.size}x{args.size}, {args.rounds} rounds each, alternating"
          f"{', with a busy second process' if args.busy else ''}")
    print(f"  plain forward   median {p:8.2f} ms  (min {min(plain):.2f})")
    print(f"  hooked forward  median {h:8.2f} ms  (min {min(hooked):.2f})")
    print(f"  ratio hooked/plain: {h / p:.3f}  (medians), {min(hooked) / min(plain):.3f} (mins)")
    print(f"  {calls} module calls per forward ({paths} modules): "
          f"{(h - p) * 1000 / calls:.1f} us per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
