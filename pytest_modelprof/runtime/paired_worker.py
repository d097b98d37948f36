"""One side of a paired timing: a long-lived process that builds a model by name and times blocks.

Run as ``python paired_worker.py`` with its working directory and ``PYTHONPATH`` set to the
tree whose code it should import (the user's, or a detached worktree at the base commit). It
reads one JSON request a line on stdin and answers one JSON line on stdout:

* ``{"op": "load", "model": "pkg.mod:factory", "input_shape": [...], "device": "cpu",
  "kwargs": {...}}`` builds the model (random weights) and its inputs;
* ``{"op": "time", "calls": k, "warmup": w}`` runs ``w`` untimed calls, then ``k`` timed ones,
  and answers the fastest (interference only adds time, so the fastest call of a block is the
  least disturbed one);
* ``{"op": "reload"}`` builds the last model again: new tensors land on other pages, so a
  process that drew an unlucky placement (cache conflicts) does not keep it all session;
* ``{"op": "exit"}`` ends it.

An error answers ``{"ok": false, "error": "..."}`` and leaves the process ready for the next
request, so a model missing at the base commit does not end the session's base process.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any


def _serve(lines: Any, out: Any) -> None:
    import torch

    from pytest_modelprof._tensors import call_model
    from pytest_modelprof.capture.real import real_model_and_inputs

    torch.set_num_threads(1)  # the stored-baseline mode times single-threaded too
    loaded: dict[str, Any] = {}
    for line in lines:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "exit":
                return
            if op == "reload":  # the last model again, in fresh memory
                request = loaded["request"]
                op = "load"
            if op == "load":
                loaded["request"] = request
                # The same weights and inputs on both sides: values can change the speed.
                torch.manual_seed(0)
                model, inputs = real_model_and_inputs(
                    request["model"],
                    input_shape=request.get("input_shape"),
                    device=request.get("device"),
                    purpose="the paired latency measurement",
                    **request.get("kwargs", {}),
                )
                model.eval()
                loaded["run"] = lambda m=model, x=inputs: call_model(m, x)
                answer: dict[str, Any] = {"ok": True}
            elif op == "time":
                run = loaded["run"]
                with torch.no_grad():
                    for _ in range(int(request.get("warmup", 0))):
                        run()
                    best = float("inf")
                    for _ in range(int(request["calls"])):
                        start = time.perf_counter_ns()
                        run()
                        best = min(best, (time.perf_counter_ns() - start) / 1e6)
                answer = {"ok": True, "ms": best}
            else:
                answer = {"ok": False, "error": f"unknown request {op!r}"}
        except Exception as exc:  # answered, so the other side can fall back and go on
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            answer = {"ok": False, "error": detail}
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
