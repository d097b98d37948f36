"""The ``hf:`` accuracy zoo as a table: mode, our MACs, FlopCounterMode's, parameters.

Run from the repository root (it reads ``ZOO`` from ``tests/accuracy/test_hf_zoo.py``)::

    PYTHONPATH=. python benchmarks/bench_hf_zoo.py
"""

from __future__ import annotations

import warnings

import torch
import transformers

from pytest_modelprof.profile import profile_model
from tests.accuracy.test_hf_zoo import MODELS_OWN_ERROR, ZOO, reference


def main() -> None:
    warnings.filterwarnings("ignore")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}\n")
    print("| architecture | class | mode | MACs | FlopCounterMode MACs | parameters | match |")
    print("|---|---|---|---:|---:|---:|---|")
    for arch, (cls_name, fields) in ZOO.items():
        try:
            ours = profile_model(f"hf:{arch}", **fields)
            params, macs = reference(arch, ours.capture.mode)
        except Exception as exc:  # a row, not a crash: the table shows every architecture
            print(f"| {arch} | {cls_name} | error | {type(exc).__name__} | | | no |")
            continue
        same = ours.total_macs == macs and ours.total_params == params and not ours.uncounted_ops
        print(
            f"| {arch} | {cls_name} | {ours.capture.mode} | {ours.total_macs:,} | {macs:,} "
            f"| {ours.total_params:,} | {'exact' if same else 'NO'} |"
        )
    for arch in MODELS_OWN_ERROR:
        try:
            profile_model(f"hf:{arch}", num_hidden_layers=2)
            print(f"| {arch} | | ran | | | | NO: expected the model's own error |")
        except Exception as exc:
            own = "the model's own error" in str(exc)
            print(
                f"| {arch} | | {type(exc).__name__} | — | — | — | "
                f"{'the model’s own error' if own else 'NO'} |"
            )


if __name__ == "__main__":
    main()
