"""What predicting the GPU time adds to a profile, in CPU time (target: <= 10 %).

    PYTHONPATH=$PWD python benchmarks/bench_predict.py [--rounds 5]

For resnet50 and vit_b_16 (torchvision, batch 1, meta) in one process: the CPU time
(``time.process_time``) of ``profile_model`` (the anchor) and of ``predict_profile`` on the
same profile (eager kernels; fused kernels too, which re-run the partition), the best of
``--rounds`` each, interleaved so that load on the machine hits both alike. Prints the ratios.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from pytest_modelprof.predict import predict_profile
from pytest_modelprof.profile import profile_model, profile_with_capture


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for name in ("resnet50", "vit_b_16"):
        profile_model(name, mode="meta")  # warm imports and caches
        best: dict[str, float] = {"profile": 1e9, "eager": 1e9, "fused": 1e9}
        profile: Any = None
        for _ in range(args.rounds):
            t = time.process_time()
            profile = profile_with_capture(name, mode="meta")
            best["profile"] = min(best["profile"], time.process_time() - t)
            for mode in ("eager", "fused"):
                t = time.process_time()
                predict_profile(profile, "rtx4090", precision="amp", mode=mode)  # type: ignore[arg-type]
                best[mode] = min(best[mode], time.process_time() - t)
        p = predict_profile(profile, "rtx4090", precision="amp")
        print(
            f"{name:9s} profile {1e3 * best['profile']:7.1f} ms CPU | predict eager "
            f"{1e3 * best['eager']:6.1f} ms ({100 * best['eager'] / best['profile']:4.1f} %) | "
            f"fused {1e3 * best['fused']:6.1f} ms "
            f"({100 * best['fused'] / best['profile']:4.1f} %) | predicted "
            f"{p.forward_ms:.3f} ms on {p.machine}"
        )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
