"""The peers on the same models: MACs and time side by side.

    python benchmarks/bench_peers.py                 # every model and peer (2-4 minutes)
    python benchmarks/bench_peers.py --only gpt2     # resnet50 | vit_b_16 | lstm | gpt2
    python benchmarks/bench_peers.py --json out.json

Peers: fvcore's FlopCountAnalysis, torch.utils.flop_counter.FlopCounterMode, DeepSpeed's
FlopsProfiler, calflops, ptflops (both backends) and thop. Each runs in a fresh process of its
own (peers patch torch functions; DeepSpeed's leftovers made calflops count resnet50 twice) on
a deep copy of the same randomly initialised CPU model (seed 0) and the same inputs; a peer that
is not installed is reported as such. A Hugging Face LM is wrapped to return its logits, as
fvcore's JIT trace needs a tensor output. Every peer's time is its whole call, best of
``--repeat``; ours is ``profile_model(module, inputs=...)`` in the default mode (fake tensors
over the module's own weights). The reference column is a figure nobody here wrote:
torchvision's published ``_ops`` or the closed form of the architecture (derivations below).

DeepSpeed compiles on install; its profiler is pure Python, so it can run from the sdist:
``pip download --no-deps deepspeed==0.19.8 && tar xzf deepspeed-0.19.8.tar.gz`` and
``pip install --target ds-deps hjson py-cpuinfo msgpack einops ninja``, then run with
``PYTHONPATH=deepspeed-0.19.8:ds-deps``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import io
import json
import logging
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torchvision
from torch import nn

from pytest_modelprof.profile import profile_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class LstmLM(nn.Module):
    """A 2-layer LSTM language model: 10k vocabulary, width 512."""

    def __init__(self, vocab: int = 10_000, width: int = 512, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(x))
        return self.head(out)  # type: ignore[no-any-return]


class Logits(nn.Module):
    """A Hugging Face LM returning a plain tensor: JIT tracers (fvcore) reject its dict output."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=input_ids).logits  # type: ignore[no-any-return]


@dataclass
class Case:
    name: str
    model: nn.Module
    inputs: dict[str, torch.Tensor]  # keyword inputs (the forward's parameter names)
    reference: int  # MACs from a published figure or a closed form
    reference_note: str


def cases() -> dict[str, Callable[[], Case]]:
    def resnet50() -> Case:
        return Case(
            "resnet50",
            torchvision.models.resnet50().eval(),
            {"x": torch.randn(1, 3, 224, 224)},
            4_089_184_256,
            "torchvision _ops 4.089",
        )

    def vit_b_16() -> Case:
        return Case(
            "vit_b_16",
            torchvision.models.vit_b_16().eval(),
            {"x": torch.randn(1, 3, 224, 224)},
            17_563_828_224,
            "torchvision _ops 17.564",
        )

    def lstm() -> Case:
        # Per layer and step 4 gates * H * (I + H) = 4 * 512 * 1024; 2 layers, 128 steps;
        # the head 128 * 512 * 10,000 (the embedding lookup is no multiply).
        macs = 2 * 128 * 4 * 512 * 1024 + 128 * 512 * 10_000
        return Case(
            "lstm",
            LstmLM().eval(),
            {"x": torch.randint(0, 10_000, (1, 128))},
            macs,
            "closed form",
        )

    def gpt2() -> Case:
        from transformers import GPT2Config, GPT2LMHeadModel

        # 12 layers of 12 d^2 per token + 2 T^2 d attention, and the LM head T d V (d = 768).
        t, d = 128, 768
        macs = 12 * (t * 12 * d * d + 2 * t * t * d) + t * d * 50_257
        model = Logits(GPT2LMHeadModel(GPT2Config()).eval())
        return Case(
            "gpt2", model, {"input_ids": torch.randint(0, 50_257, (1, t))}, macs, "closed form"
        )

    return {"resnet50": resnet50, "vit_b_16": vit_b_16, "lstm": lstm, "gpt2": gpt2}


# -- the peers: each returns MACs for (model, kwargs) ----------------------------------------


def ours(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    return profile_model(model, inputs=kwargs).total_macs


def flop_counter(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(**kwargs)
    return int(counter.get_total_flops() // 2)


def fvcore(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    from fvcore.nn import FlopCountAnalysis

    analysis = FlopCountAnalysis(model, tuple(kwargs.values()))
    analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
    return int(analysis.total())


def deepspeed(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    from deepspeed.profiling.flops_profiler import get_model_profile

    _, macs, _ = get_model_profile(
        model, kwargs=kwargs, print_profile=False, detailed=False, as_string=False
    )
    return int(macs)


def calflops(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    from calflops import calculate_flops

    _, macs, _ = calculate_flops(
        model, kwargs=kwargs, print_results=False, print_detailed=False, output_as_string=False
    )
    return int(macs)


def _ptflops(backend: str) -> Callable[[nn.Module, dict[str, torch.Tensor]], int]:
    def run(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
        from ptflops import get_model_complexity_info

        shape = tuple(next(iter(kwargs.values())).shape[1:])
        macs, _ = get_model_complexity_info(
            model,
            shape,
            input_constructor=lambda _: dict(kwargs),
            as_strings=False,
            print_per_layer_stat=False,
            backend=backend,
        )
        return int(macs or 0)

    return run


def thop(model: nn.Module, kwargs: dict[str, torch.Tensor]) -> int:
    from thop import profile

    macs, _ = profile(model, inputs=tuple(kwargs.values()), verbose=False)
    return int(macs)


PEERS: dict[str, Callable[[nn.Module, dict[str, torch.Tensor]], int]] = {
    "pytest-modelprof": ours,
    "FlopCounterMode": flop_counter,
    "fvcore": fvcore,
    "DeepSpeed FlopsProfiler": deepspeed,
    "calflops": calflops,
    "ptflops (pytorch)": _ptflops("pytorch"),
    "ptflops (aten)": _ptflops("aten"),
    "thop": thop,
}


def measure(
    peer: Callable[[nn.Module, dict[str, torch.Tensor]], int], case: Case, repeat: int
) -> dict[str, Any]:
    best, macs = float("inf"), 0
    for _ in range(repeat):
        model = copy.deepcopy(case.model)  # hooks or buffers a peer leaves behind stay there
        gc.collect()
        sink = io.StringIO()
        start = time.perf_counter()
        try:
            with (
                warnings.catch_warnings(),
                contextlib.redirect_stdout(sink),
                contextlib.redirect_stderr(sink),
            ):
                warnings.simplefilter("ignore")
                macs = peer(model, case.inputs)
        except ModuleNotFoundError as exc:
            return {"error": f"not installed ({exc.name})"}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]}"}
        best = min(best, time.perf_counter() - start)
    return {"macs": macs, "seconds": best, "vs_reference": macs / case.reference - 1}


def worker(case_name: str, peer_name: str, repeat: int) -> None:
    """One peer on one model in this fresh process: peers patch torch (DeepSpeed and calflops
    both wrap ``torch.nn.functional``), and one left patched would skew the next one."""
    logging.disable(logging.WARNING)  # DeepSpeed's accelerator notice, calflops' chatter
    torch.manual_seed(0)
    case = cases()[case_name]()
    print(json.dumps(measure(PEERS[peer_name], case, repeat)))


def run_worker(case_name: str, peer_name: str, repeat: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", case_name, peer_name, "--repeat", str(repeat)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"worker failed: {tail[:120]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(cases()), action="append")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "PEER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.repeat)
        return
    results: dict[str, Any] = {}
    for name in args.only or list(cases()):
        case = cases()[name]()
        row: dict[str, Any] = {"reference": case.reference, "note": case.reference_note}
        print(f"\n{name}: reference {case.reference / 1e9:.4f} GMACs ({case.reference_note})")
        for peer_name in PEERS:
            row[peer_name] = got = run_worker(name, peer_name, args.repeat)
            if "error" in got:
                print(f"  {peer_name:<24} {got['error']}")
            else:
                print(
                    f"  {peer_name:<24} {got['macs'] / 1e9:10.4f} GMACs "
                    f"{got['vs_reference']:+8.2%}  {got['seconds']:7.3f} s"
                )
        ours_s = row["pytest-modelprof"].get("seconds")
        if ours_s:
            ratios = ", ".join(
                f"{k} {v['seconds'] / ours_s:.2f}"
                for k, v in row.items()
                if isinstance(v, dict) and "seconds" in v and k != "pytest-modelprof"
            )
            print(f"  time ratio peer / ours: {ratios}")
        results[name] = row
    print(f"\ntorch {torch.__version__}, torchvision {torchvision.__version__}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
