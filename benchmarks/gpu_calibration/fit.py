"""Fit the per-class efficiency curves on one published table, score them on the other.

    PYTHONPATH=$PWD python benchmarks/gpu_calibration/fit.py [--write] [--mode eager|fused]

Needs the ops cached by ``extract.py``. For each direction (fit on the RTX 4090 table, score on
the RTX 3090 one, and the reverse) it prints the median and 90th percentile of |error| of
samples/s, Spearman's rank correlation, the share of pairs (published throughputs > 20 % apart)
whose order is predicted right, the same for the statistical baseline (log-linear in the table's
own GMACs and activations, fitted on the table it is scored on), and the worst families.
``--write`` stores the constants fitted on the RTX 4090 table, with the error they reach on the
RTX 3090 table, as ``pytest_modelprof/predict/constants.json`` (what the package ships).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import pickle
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from pytest_modelprof.machines import MACHINES, GpuSpec
from pytest_modelprof.predict.kernels import CLASSES, TENSOR_CORE_CLASSES, Kernel, eager_kernels
from pytest_modelprof.predict.model import (
    CONSTANTS_FILE,
    ClassConstants,
    Constants,
    kernel_time,
)

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
FEATURES = HERE / "features.json.gz"
DATA = Path(
    os.environ.get(
        "TIMM_TABLES", Path(__file__).resolve().parents[3] / "shared/data/timm-benchmarks"
    )
)
TABLES = {
    gpu: DATA / f"benchmark-infer-amp-nchw-pt240-cu124-{gpu}.csv" for gpu in ("rtx3090", "rtx4090")
}
PRECISION = "amp"


def read_table(path: Path) -> dict[str, dict[str, Any]]:
    """Rows by ``model@size``: a model can be listed at several image sizes."""
    with path.open() as f:
        return {
            f"{r['model']}@{r['infer_img_size']}": {
                "model": r["model"],
                "size": int(r["infer_img_size"]),
                "batch": int(r["infer_batch_size"]),
                "sps": float(r["infer_samples_per_sec"]),
                # One row of the RTX 3090 table has no GMACs/activations: the baseline skips it.
                "gmacs": float(r["infer_gmacs"] or "nan"),
                "macts": float(r["infer_macts"] or "nan"),
            }
            for r in csv.DictReader(f)
        }


# -- features: the deduplicated kernels of each cached capture ------------------------------------


#: Bump when the kernel rules of ``pytest_modelprof.predict.kernels`` change: the cached
#: features are then derived again from the captures.
FEATURES_VERSION = 3


def _version(mode: str) -> str:
    return f"{FEATURES_VERSION}-{mode}"


def kernels_of(data: dict[str, Any], mode: str) -> list[Kernel]:
    if mode == "eager":
        return eager_kernels(data["ops"], data["site_lines"], PRECISION)
    from pytest_modelprof.capture.record import Capture
    from pytest_modelprof.predict.kernels import fused_kernels

    capture = Capture(ops=data["ops"], module_types=data["module_types"], sites=data["sites"])
    # The sites' text was read at extraction; fused_kernels reads it again through linecache.
    return fused_kernels(capture, PRECISION)


def load_features(mode: str) -> dict[str, list[list[float]]]:
    """key -> rows (class index, flops, bytes, K, N, count), cached in ``features.json.gz``."""
    version = _version(mode)
    store: dict[str, Any] = {}
    if FEATURES.exists():
        store = json.loads(gzip.decompress(FEATURES.read_bytes()))
    table = store.get(mode, {})
    if table.get("version") != version:
        table = {"version": version, "models": {}}
    models: dict[str, Any] = table["models"]
    changed = False
    for path in sorted(CACHE.glob("*.pkl.gz")):
        key = path.name.removesuffix(".pkl.gz")
        if key in models:
            continue
        data = pickle.loads(gzip.decompress(path.read_bytes()))
        groups: dict[tuple[Any, ...], int] = defaultdict(int)
        for k in kernels_of(data, mode):
            groups[(CLASSES.index(k.cls), k.flops, round(k.bytes), k.gemm_k, k.gemm_n)] += k.count
        models[key] = [[*g, n] for g, n in sorted(groups.items())]
        changed = True
        if len(models) % 100 == 0:  # keep the work of a long derivation if it is stopped
            store[mode] = table
            FEATURES.write_bytes(gzip.compress(json.dumps(store, sort_keys=True).encode(), 9))
    if changed:
        store[mode] = table
        FEATURES.write_bytes(gzip.compress(json.dumps(store, sort_keys=True).encode(), 9))
    return models


# -- the vectorised formula (the same as predict.model.kernel_time) -----------------------------


class Params(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        n = len(CLASSES)
        self.e_c = torch.nn.Parameter(torch.full((n,), 0.0))
        self.e_m = torch.nn.Parameter(torch.full((n,), 0.5))
        # A launch overhead shared by all classes (1-30 us) times a class factor (0.5-2): a
        # free overhead per class would soak up size effects and break at small batches.
        self.launch = torch.nn.Parameter(torch.tensor(0.0))
        self.tau = torch.nn.Parameter(torch.full((n,), 0.0))
        self.k_half = torch.nn.Parameter(torch.tensor(math.log(16.0)))
        self.n_half = torch.nn.Parameter(torch.tensor(math.log(16.0)))

    def overheads(self) -> torch.Tensor:
        launch = 1e-6 * (1 + 29 * torch.sigmoid(self.launch))
        return launch * (0.5 + 1.5 * torch.sigmoid(self.tau))

    def constants(self) -> Constants:
        with torch.no_grad():
            ec, em, tau = (
                1.5 * torch.sigmoid(self.e_c),
                1.5 * torch.sigmoid(self.e_m),
                self.overheads(),
            )
        classes = {
            c: ClassConstants(float(ec[i]), float(em[i]), float(tau[i]))
            for i, c in enumerate(CLASSES)
        }
        return Constants(
            classes, float(torch.exp(self.k_half).detach()), float(torch.exp(self.n_half).detach())
        )


class Batch:
    """All kernels of a set of models as flat tensors."""

    def __init__(self, keys: list[str], feats: dict[str, list[list[float]]], gpu: GpuSpec) -> None:
        rows = [(m, r) for m, key in enumerate(keys) for r in feats[key]]
        t = torch.tensor([r for _, r in rows], dtype=torch.float64)
        self.model = torch.tensor([m for m, _ in rows])
        self.n_models = len(keys)
        self.cls = t[:, 0].long()
        self.flops, self.bytes = t[:, 1], t[:, 2]
        self.k, self.n, self.count = t[:, 3], t[:, 4], t[:, 5]
        tensor = torch.tensor([c in TENSOR_CORE_CLASSES for c in CLASSES])[self.cls]
        self.peak = torch.where(tensor, gpu.tensor_peak(PRECISION), gpu.fp32).double()
        self.bw = gpu.bandwidth
        self.gemm = (self.k > 0) & (self.n > 0)

    def seconds(self, p: Params) -> torch.Tensor:
        ec = (1.5 * torch.sigmoid(p.e_c)).double()[self.cls]
        em = (1.5 * torch.sigmoid(p.e_m)).double()[self.cls]
        tau = p.overheads().double()[self.cls]
        kh, nh = torch.exp(p.k_half).double(), torch.exp(p.n_half).double()
        shape = torch.where(
            self.gemm, (1 + kh / self.k.clamp(min=1)) * (1 + nh / self.n.clamp(min=1)), 1.0
        )
        compute = self.flops / (self.peak * ec) * shape
        memory = self.bytes / (self.bw * em)
        per = self.count * (torch.maximum(compute, memory) + tau)
        return torch.zeros(self.n_models, dtype=torch.float64).index_add(0, self.model, per)


def fit(batch: Batch, measured_s: torch.Tensor, steps: int = 1500) -> Params:
    p = Params()
    opt = torch.optim.Adam(p.parameters(), lr=0.05)
    target = measured_s.log()
    for step in range(steps):
        if step == steps * 2 // 3:
            for g in opt.param_groups:
                g["lr"] = 0.01
        opt.zero_grad()
        err = batch.seconds(p).log() - target
        loss = torch.nn.functional.huber_loss(err, torch.zeros_like(err), delta=0.05)
        loss.backward()
        opt.step()
    return p


# -- scores -------------------------------------------------------------------------------------


def ranks(x: torch.Tensor) -> torch.Tensor:
    r = torch.empty_like(x)
    r[x.argsort()] = torch.arange(len(x), dtype=x.dtype)
    return r


def scores(pred: torch.Tensor, meas: torch.Tensor) -> dict[str, float]:
    err = (pred / meas - 1).abs()
    rp, rm = ranks(pred), ranks(meas)
    spearman = float(torch.corrcoef(torch.stack([rp, rm]))[0, 1])
    lm, lp = meas.log(), pred.log()
    dm = lm[:, None] - lm[None, :]
    dp = lp[:, None] - lp[None, :]
    far = dm > math.log(1.2)
    pairs = float((dp[far] > 0).double().mean())
    return {
        "median": float(err.median()),
        "p90": float(err.quantile(0.9)),
        "spearman": spearman,
        "pairs": pairs,
        "n": len(meas),
    }


def baseline(table: dict[str, dict[str, Any]], models: list[str]) -> torch.Tensor:
    """Log-linear samples/s in GMACs and activations, fitted on the same table."""
    models = [m for m in models if not math.isnan(table[m]["gmacs"] + table[m]["macts"])]
    x = torch.tensor(
        [
            [1.0, math.log(table[m]["gmacs"] + 1e-3), math.log(table[m]["macts"] + 1e-3)]
            for m in models
        ],
        dtype=torch.float64,
    )
    y = torch.tensor([math.log(table[m]["sps"]) for m in models], dtype=torch.float64)
    coef = torch.linalg.lstsq(x, y[:, None]).solution
    return (x @ coef).squeeze(1).exp()


def family(model: str) -> str:
    try:
        from timm.models._registry import _model_to_module

        return str(_model_to_module.get(model, model.split("_")[0]))
    except ImportError:
        return model.split("_")[0]


def fmt(s: dict[str, float]) -> str:
    return (
        f"median {100 * s['median']:5.1f} %  p90 {100 * s['p90']:5.1f} %  "
        f"Spearman {s['spearman']:.3f}  pairs {100 * s['pairs']:5.1f} %  (n={s['n']})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--mode", choices=("eager", "fused"), default="eager")
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # small tensors: threads only add contention on a shared machine
    feats = load_features(args.mode)
    tables = {g: read_table(p) for g, p in TABLES.items()}
    shipped: tuple[Constants, dict[str, float]] | None = None
    for fit_gpu, score_gpu in (("rtx4090", "rtx3090"), ("rtx3090", "rtx4090")):
        fit_t, score_t = tables[fit_gpu], tables[score_gpu]

        def key(t: dict[str, dict[str, Any]], m: str) -> str:
            return f"{t[m]['model']}@{t[m]['size']}x{t[m]['batch']}"

        fit_models = [m for m in sorted(fit_t) if key(fit_t, m) in feats]
        score_models = [m for m in sorted(score_t) if key(score_t, m) in feats]
        fb = Batch([key(fit_t, m) for m in fit_models], feats, MACHINES[fit_gpu])
        measured = torch.tensor(
            [fit_t[m]["batch"] / fit_t[m]["sps"] for m in fit_models], dtype=torch.float64
        )
        params = fit(fb, measured, args.steps)
        sb = Batch([key(score_t, m) for m in score_models], feats, MACHINES[score_gpu])
        with torch.no_grad():
            fit_pred = torch.tensor([fit_t[m]["batch"] for m in fit_models]) / fb.seconds(params)
            pred_s = sb.seconds(params)
        batches = torch.tensor([score_t[m]["batch"] for m in score_models], dtype=torch.float64)
        pred = batches / pred_s
        meas = torch.tensor([score_t[m]["sps"] for m in score_models], dtype=torch.float64)
        ours = scores(pred, meas)
        complete = [
            m for m in score_models if not math.isnan(score_t[m]["gmacs"] + score_t[m]["macts"])
        ]
        base_meas = torch.tensor([score_t[m]["sps"] for m in complete], dtype=torch.float64)
        base = scores(baseline(score_t, complete), base_meas)
        fit_meas = torch.tensor([fit_t[m]["sps"] for m in fit_models], dtype=torch.float64)
        print(f"\n== fitted on {fit_gpu} ({len(fit_models)} models), scored on {score_gpu}")
        print(f"  ours     : {fmt(ours)}")
        print(
            f"  baseline : {fmt(base)}   (log-linear in GMACs, activations; fitted on {score_gpu})"
        )
        print(f"  (ours on the fitting table itself: {fmt(scores(fit_pred, fit_meas))})")
        constants = params.constants()
        for c, cc in constants.classes.items():
            print(
                f"    {c:15s} e_compute {cc.compute_efficiency:.3f}  e_memory "
                f"{cc.memory_efficiency:.3f}  overhead {cc.overhead_s * 1e6:6.2f} us"
            )
        print(f"    gemm k_half {constants.gemm_k_half:.1f}  n_half {constants.gemm_n_half:.1f}")
        by_family: dict[str, list[float]] = defaultdict(list)
        signed = (pred / meas - 1).tolist()
        for m, e in zip(score_models, signed, strict=True):
            by_family[family(score_t[m]["model"])].append(e)
        worst = sorted(
            by_family.items(), key=lambda kv: -sorted(abs(v) for v in kv[1])[len(kv[1]) // 2]
        )
        print("  worst families (median signed error of predicted samples/s, models):")
        for fam, errs in worst[:12]:
            med = sorted(errs)[len(errs) // 2]
            print(f"    {fam:28s} {100 * med:+6.1f} %  n={len(errs)}")
        if fit_gpu == "rtx4090":
            shipped = (constants, ours)
            # The package's scalar formula must agree with the vectorised one.
            m0 = score_models[0]
            data_keys = key(score_t, m0)
            scalar = sum(
                kernel_time(
                    Kernel(CLASSES[int(r[0])], r[1], r[2], int(r[3]), int(r[4]), count=int(r[5])),
                    MACHINES[score_gpu],
                    PRECISION,
                    constants,
                ).seconds
                for r in feats[data_keys]
            )
            assert abs(scalar / float(pred_s[0]) - 1) < 1e-4, (scalar, float(pred_s[0]))
    if args.write and shipped is not None:
        constants, ours = shipped
        doc = constants.to_json()
        doc["calibration"] = {
            "fitted_on": "timm inference table, RTX 4090, torch 2.4, AMP fp16, NCHW, eager",
            "scored_on": "timm inference table, RTX 3090 (not used in the fit)",
            "mode": args.mode,
            "median_abs_error": round(ours["median"], 4),
            "p90_abs_error": round(ours["p90"], 4),
            "spearman": round(ours["spearman"], 4),
            "models": ours["n"],
        }
        doc = json.loads(json.dumps(doc), parse_float=lambda s: float(f"{float(s):.6g}"))
        CONSTANTS_FILE.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"\nwrote {CONSTANTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
