"""Both sides of a paired timing in one long-lived process: a model built from two trees.

Run as ``python paired_worker.py`` (its working directory and ``PYTHONPATH`` those of the head).
It reads one JSON request a line on stdin and answers one JSON line on stdout:

* ``{"op": "load", "model": "pkg.mod:factory", "input_shape": [...], "device": "cpu",
  "kwargs": {...}, "sides": {"base": {"path": [...], "root": "/tmp/wt", "kwargs": {...}},
  "head": {...}}}`` builds the model (random weights, seed 0) once per side: with ``sys.path``
  set to that side's ``path``, and the modules imported from under the other side's ``root``
  taken out of ``sys.modules`` meanwhile, so ``mymodel`` means the base's file for the base
  and the head's for the head. A side's ``kwargs`` are added to the model's (the benchmark
  slows one side down that way). The answer carries ``build_ms``, what a rebuild takes, and
  ``params``, each side's parameter count.
* ``{"op": "rounds", "order": ["base", "head", "head", "base", ...], "calls": k,
  "fresh": true, "warmup": w}`` times one block per entry: with ``fresh``, that side's model is
  built again first (and ``w`` untimed calls made), then ``k`` timed calls, and the block's
  time is the fastest call (interference only adds time, so the fastest call of a block is
  the least disturbed one). Answers ``"ms"``, one per entry.
* ``{"op": "exit"}`` ends it.

Why one process: two processes of the same model differed in speed by up to 35 % for their
whole life, rebuilt models or not (the physical pages each drew), which no count of rounds
cancels. In one process both sides share the heap, the caches and the core they run on, and a
block built afresh lands its weights on other pages each time.

An error answers ``{"ok": false, "error": "...", "side": ...}`` and leaves the process ready for
the next request, so a model missing at the base commit does not end the session's process.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

from pytest_modelprof._tensors import call_model
from pytest_modelprof.capture.real import real_model_and_inputs

SIDES = ("base", "head")


class _Side:
    """One commit's view of the imports, and its model as last built."""

    def __init__(self, spec: dict[str, Any], trees: dict[str, dict[str, Any]]) -> None:
        self.path: list[str] | None = spec.get("path")
        root = spec.get("root")
        self.root = os.path.realpath(root) + os.sep if root else None
        self.kwargs: dict[str, Any] = dict(spec.get("kwargs") or {})
        # The modules imported from this tree, kept for the process's life: the next model of
        # the session may import them again, and must get this tree's.
        self.modules: dict[str, Any] = trees.setdefault(self.root or "", {})
        self.trees = trees
        self.run: Any = None
        self.params = 0

    def owns(self, module: Any) -> bool:
        where = getattr(module, "__file__", None)
        return bool(self.root and where and os.path.realpath(where).startswith(self.root))


def _build(request: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The model of a load request, built afresh, and a call of it on its inputs."""
    import torch

    # The same weights and inputs on both sides: values can change the speed.
    torch.manual_seed(0)
    model, inputs = real_model_and_inputs(
        request["model"],
        input_shape=request.get("input_shape"),
        device=request.get("device"),
        purpose="the paired latency measurement",
        **{**request.get("kwargs", {}), **kwargs},
    )
    model.eval()
    return model, lambda: call_model(model, inputs)


class _Pair:
    """The two sides of the loaded model."""

    def __init__(self, request: dict[str, Any], trees: dict[str, dict[str, Any]]) -> None:
        self.request = request
        specs = request.get("sides", {})
        self.sides = {name: _Side(specs.get(name, {}), trees) for name in SIDES}

    def build(self, name: str) -> None:
        """``name``'s model built again, with that side's imports in place."""
        side = self.sides[name]
        for modules in side.trees.values():
            if modules is not side.modules:
                for module in modules:
                    sys.modules.pop(module, None)
        sys.modules.update(side.modules)
        if side.path is not None:
            sys.path[:] = side.path
        known = set(sys.modules)
        model, side.run = _build(self.request, side.kwargs)
        side.params = sum(p.numel() for p in model.parameters())
        side.modules.update(
            (m, sys.modules[m]) for m in set(sys.modules) - known if side.owns(sys.modules[m])
        )


def _rounds(pair: _Pair, request: dict[str, Any]) -> list[float]:
    calls, warmup, fresh = int(request["calls"]), int(request.get("warmup", 0)), request["fresh"]
    times = []
    for name in request["order"]:
        if fresh:
            pair.build(name)
        run = pair.sides[name].run
        for _ in range(warmup):
            run()
        best = float("inf")
        for _ in range(calls):
            start = time.perf_counter_ns()
            run()
            best = min(best, (time.perf_counter_ns() - start) / 1e6)
        times.append(best)
    return times


def _serve(lines: Any, out: Any) -> None:
    import torch

    torch.set_num_threads(1)  # the stored-baseline mode times single-threaded too
    pair: _Pair | None = None
    trees: dict[str, dict[str, Any]] = {}
    for line in lines:
        request = json.loads(line)
        op = request.get("op")
        side = None
        try:
            if op == "exit":
                return
            if op == "load":
                pair = _Pair(request, trees)
                for side in SIDES:
                    pair.build(side)
                # What a rebuild costs: a build without the first one's imports, the faster
                # of two (either may have waited for the CPU).
                build_ms = float("inf")
                for _ in range(2):
                    start = time.perf_counter()
                    pair.build("head")
                    build_ms = min(build_ms, (time.perf_counter() - start) * 1e3)
                params = {name: pair.sides[name].params for name in SIDES}
                answer: dict[str, Any] = {"ok": True, "build_ms": build_ms, "params": params}
            elif op == "rounds" and pair is not None:
                with torch.no_grad():
                    answer = {"ok": True, "ms": _rounds(pair, request)}
            else:
                answer = {"ok": False, "error": f"unknown request {op!r} (or no model loaded)"}
        except Exception as exc:  # answered, so the gate can fall back and go on
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            answer = {"ok": False, "error": detail, "side": side}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def main() -> int:
    """Serve requests from stdin until ``exit`` or end of input."""
    # Answers go to the real stdout; whatever the model prints goes to stderr instead.
    out = sys.stdout
    sys.stdout = sys.stderr
    _serve(sys.stdin, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
