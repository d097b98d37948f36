"""The terminal section of a GPU-time prediction (``modelprof profile --machine GPU``)."""

from __future__ import annotations

from pytest_modelprof.predict import Prediction

__all__ = ["render_prediction"]


def render_prediction(p: Prediction) -> str:
    """Predicted time, samples/s, bound shares and the costliest kernels, as text."""
    cal = p.calibration
    error = ""
    if cal.get("median_abs_error") is not None:
        error = (
            f" (calibrated model: median error {100 * cal['median_abs_error']:.0f} %, "
            f"90th percentile {100 * cal['p90_abs_error']:.0f} % on {cal.get('models', '?')} "
            "rows of a published timm table it was not fitted on)"
        )
    shares = p.bound_shares
    training = "3x forward, estimated" if p.training_step_estimated else "forward + backward"
    lines = [
        "",
        f"Predicted GPU time on {p.machine}, precision {p.precision}, batch {p.batch}, "
        f"{p.mode} kernels{error}",
        f"  forward        {p.forward_ms:10.3f} ms   {p.samples_per_s:,.0f} samples/s",
        f"  training step  {p.training_step_ms:10.3f} ms   ({training})",
        f"  bound          compute {100 * shares['compute']:.0f} %, memory "
        f"{100 * shares['memory']:.0f} %, launch overhead {100 * shares['launch']:.0f} % "
        f"of {p.kernels} kernels",
        "  top kernels:",
    ]
    for k in p.top_kernels:
        lines.append(
            f"    {100 * k.share:5.1f} %  {k.ms:9.3f} ms  x{k.count:<4d} {k.bound:8s} "
            f"{k.kernel_class:15s} {k.name}"
        )
    return "\n".join(lines) + "\n"
