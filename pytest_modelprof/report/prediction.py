"""The terminal section of a GPU-time prediction (``modelprof profile --machine GPU``)."""

from __future__ import annotations

from pytest_modelprof.predict import Prediction
from pytest_modelprof.textfit import Column, layout_table

__all__ = ["render_prediction"]


def render_prediction(p: Prediction, width: int = 100) -> str:
    """Predicted time, samples/s, bound shares and the costliest kernels, as text in ``width``
    columns (kernel names cut in the middle)."""
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
    columns = [Column("share", ">"), Column("time", ">"), Column("calls", ">"), Column("bound"),
               Column("class"), Column("kernel")]
    rows = [
        [f"{100 * k.share:.1f} %", f"{k.ms:.3f} ms", f"x{k.count}", k.bound, k.kernel_class,
         k.name]
        for k in p.top_kernels
    ]
    lines += layout_table(columns, rows, width, shrink=((5, 12), (4, 8)), indent="    ").lines
    return "\n".join(lines) + "\n"
