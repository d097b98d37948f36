"""What the per-module timing hooks cost: resnet50's forward with and without them.

``modelprof bench`` and ``modelprof graph --timed`` time every module with forward hooks
(``pytest_modelprof.runtime.module_timing``); the hooks run inside the timed forward, so their
cost is part of every module's figure. This measures it: the same model and input, rounds of
the plain forward and of the hooked forward *alternating* in one process (so load on the
machine hits both alike), each timed end to end with the same host clock. It prints the
medians and their ratio. Because a loaded machine can hide a 1 % effect in that ratio, it also
measures the hooks' own cost per call on a chain of Identity modules (fastest of many rounds)
and scales it by resnet50's module calls: an estimate that load barely moves.

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


def per_call_us(calls: int = 2000, rounds: int = 30) -> tuple[float, float]:
    """Fastest forward of ``calls`` Identity modules on a tiny tensor, plain and hooked (us per
    call): the hooks' own cost with almost no work around it, robust to load via the minimum."""
    chain = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(calls)])
    batch = as_inputs(torch.zeros(1))
    clock = PerfCounterTimer()
    recorder = _Recorder(chain, _HostMarks())
    plain: list[float] = []
    hooked: list[float] = []
    for _ in range(rounds):
        plain.append(clock.time(lambda: call_model(chain, batch)))
        with recorder:
            hooked.append(clock.time(lambda: call_model(chain, batch)))
            recorder.take_round()  # reading the marks happens after the forward, untimed
    n = calls + 1  # the Sequential itself is hooked too
    return min(plain) * 1000 / n, min(hooked) * 1000 / n


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
                    b = clock.time(lambda: call_model(model, batch))
                    recorder.take_round()  # after the forward: not part of any module's time
                if i >= args.warmup:
                    plain.append(a)
                    hooked.append(b)
            with recorder:  # one more hooked forward, to count the module calls in one
                call_model(model, batch)
                calls = len(recorder.paths)
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
          f"{(h - p) * 1000 / calls:.1f} us per call from the medians")
    bare, with_hooks = per_call_us()
    cost_ms = (with_hooks - bare) * calls / 1000
    print(f"  hook cost on an Identity chain: {with_hooks - bare:.2f} us per call (fastest "
          f"round; {bare:.2f} us unhooked, {with_hooks:.2f} us hooked)")
    print(f"  estimate for resnet50: {calls} calls x that = {cost_ms:.2f} ms, "
          f"{100 * cost_ms / min(plain):.1f} % of its fastest plain forward "
          f"({min(plain):.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
