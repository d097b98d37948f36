"""One committed version of a baseline, read for the history: the fields a series needs.

History reads thousands of versions, and the per-layer rows and op calls are most of each
file, so a version is validated against a projection of
:class:`~pytest_modelprof.baseline.document.BaselineDocument`: the same field types (a unit
test checks they match), other fields ignored. A file at the current schema
version is parsed and validated in one pass (pydantic's JSON parser); an older one goes through
the document's own migrations first (:func:`~pytest_modelprof.baseline.document.migrate`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_modelprof._json import JSONProblem, load_json
from pytest_modelprof.baseline.document import (
    BASELINE_SCHEMA_VERSION,
    BaselineEnvironment,
    migrate,
)
from pytest_modelprof.errors import BaselineError

__all__ = ["VersionSummary", "read_version"]

class VersionSummary(BaseModel):
    """The fields of a baseline the history reads, typed as in the document model (a unit
    test holds the two together); the rest of the file is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int
    test: str
    name: str | None = None
    model: str
    metrics: dict[str, int | float]
    environment: BaselineEnvironment


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
                     for err in exc.errors())


def read_version(data: bytes, *, source: str) -> VersionSummary:
    """Validate one version (migrating an old one); :class:`BaselineError` names ``source``."""
    try:
        # Strict, as the gate reads a baseline: a figure is a number as written, and finite.
        fast = VersionSummary.model_validate_json(data, strict=True)
        finite = all(math.isfinite(v) for v in fast.metrics.values())
        if fast.schema_version == BASELINE_SCHEMA_VERSION and finite:
            return fast
    except ValidationError:
        pass  # an old version, or a broken one: the slow path says which
    try:
        raw: Any = load_json(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{source}: corrupt baseline (not valid JSON: {exc})") from None
    except JSONProblem as exc:
        raise BaselineError(f"{source}: corrupt baseline ({exc})") from None
    doc = migrate(raw, source=source)
    try:
        return VersionSummary.model_validate(doc, strict=True)
    except ValidationError as exc:
        raise BaselineError(f"{source}: corrupt baseline ({_problems(exc)})") from None
