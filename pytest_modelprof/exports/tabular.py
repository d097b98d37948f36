"""Write a :class:`ModelProfile` to disk: the full JSON document, or one CSV row per layer."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.schema import ModelProfile

__all__ = ["write_profile"]

# One row per layer; the column names are the LayerStats fields, so the CSV and JSON agree.
CSV_COLUMNS = (
    "name",
    "type",
    "calls",
    "params",
    "flops",
    "macs",
    "bytes_read",
    "bytes_written",
    "traffic",
    "arithmetic_intensity",
    "bottleneck",
    "output_shape",
)

FORMATS = {".json": "json", ".csv": "csv"}


def profile_csv(profile: ModelProfile) -> str:
    """The layer table as CSV text with a header; full (unabbreviated) module names."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for layer in profile.layers:
        shape = "x".join(str(s) for s in layer.output_shape) if layer.output_shape else ""
        writer.writerow(
            [
                layer.name,
                layer.type,
                layer.calls,
                layer.params,
                layer.flops,
                layer.macs,
                layer.bytes_read,
                layer.bytes_written,
                layer.traffic,
                # Same rounding as the JSON writer, so the two files agree digit for digit.
                round(layer.arithmetic_intensity, 6),
                layer.bottleneck,
                shape,
            ]
        )
    return buffer.getvalue()


def write_profile(profile: ModelProfile, path: str | os.PathLike[str]) -> str:
    """Write ``profile`` as JSON or CSV, chosen by the file suffix; returns the format used."""
    target = Path(path)
    kind = FORMATS.get(target.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(FORMATS))
        raise ModelprofError(
            f"cannot tell the output format of {str(target)!r} from its suffix; use one of {known}"
        )
    text = profile.to_json() if kind == "json" else profile_csv(profile)
    try:
        write_text_atomic(target, text)
    except OSError as exc:
        raise ModelprofError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from exc
    return kind
