"""Accuracy against figures nobody here wrote: torchvision's published GMACs and parameter counts.

Every torchvision weights entry that carries ``meta["_ops"]`` (GMACs, 3 decimals) and
``meta["num_params"]`` is profiled on meta tensors at the resolution its weights were evaluated
at. MACs must match within 1 % or torchvision's rounding; parameters exactly.
"""

from __future__ import annotations

import pytest

from pytest_modelprof.models import torchvision_references
from pytest_modelprof.profile import profile_model

REFERENCES = torchvision_references()


def _close(ours_gmacs: float, published: float) -> bool:
    # Published figures are rounded to 3 decimals; also accept 1 % relative.
    return abs(ours_gmacs - published) <= max(0.0005 + 1e-9, 0.01 * published)


def test_every_classification_builder_is_covered() -> None:
    import torchvision

    classification = set(torchvision.models.list_models(module=torchvision.models))
    assert len(classification) == 80
    assert {r.model for r in REFERENCES} >= classification


@pytest.mark.parametrize(
    "ref", REFERENCES, ids=lambda r: r.weights.split(".", 1)[-1] + "-" + r.model
)
def test_macs_and_params_match_torchvision(ref: object) -> None:
    p = profile_model(
        ref.model,
        input_shape=ref.input_shape,
        **ref.arch_kwargs,  # type: ignore[attr-defined]
    )
    assert p.total_params == ref.num_params  # type: ignore[attr-defined]
    ours = p.total_macs / 1e9
    assert _close(ours, ref.gmacs), (  # type: ignore[attr-defined]
        f"{ref.weights}: ours {ours:.4f} GMACs vs torchvision {ref.gmacs}"  # type: ignore[attr-defined]
    )
    assert p.uncounted_ops == []
