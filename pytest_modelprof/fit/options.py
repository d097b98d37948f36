"""The names ``modelprof memory`` and the marker accept, checked with "did you mean" (no torch)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_modelprof.errors import ModelprofError, did_you_mean
from pytest_modelprof.optimizers import OPTIMIZER_ARGS

__all__ = [
    "STEP_KEYS",
    "step_pairs",
    "step_options",
    "OPTIMIZERS",
    "OPTIMIZER_IMPLS",
    "PRECISIONS",
    "SHARDS",
    "StepOptions",
    "parse_optimizer",
]

#: Optimizers (:data:`pytest_modelprof.optimizers.OPTIMIZER_ARGS`, the one table ``bench`` uses
#: too): "none" runs forward and backward only (the gradients stay alive).
OPTIMIZERS = ("none", *OPTIMIZER_ARGS)
#: How torch's optimizer runs its update: one tensor at a time, as grouped ``_foreach_`` ops
#: (torch's default on a GPU: more temporaries at once), or one fused kernel per group.
OPTIMIZER_IMPLS = ("for-loop", "foreach", "fused")
#: Weights and compute: pure fp32/bf16/fp16, fp32 weights under autocast ("-mixed"), or bf16
#: weights with fp32 master weights kept by the optimizer ("bf16-master").
PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed", "bf16-master")
#: What each precision keeps and computes in: the recipe every figure assumes.
RECIPES = {
    "fp32": "fp32 weights, gradients and optimizer state; fp32 compute",
    "bf16": "bf16 weights, gradients and optimizer state; bf16 compute",
    "fp16": "fp16 weights, gradients and optimizer state; fp16 compute",
    "bf16-mixed": "torch autocast: fp32 weights (the master copy), gradients and optimizer "
    "state; the forward under bf16 autocast",
    "fp16-mixed": "torch autocast: fp32 weights (the master copy), gradients and optimizer "
    "state; the forward under fp16 autocast; torch.amp.GradScaler",
    "bf16-master": "master weights (DeepSpeed, Megatron-LM, FSDP MixedPrecision): bf16 weights "
    "and gradients, bf16 compute; fp32 master weights and optimizer state",
}
#: Data-parallel sharding of the model states over ``device_count`` devices (README "Will it fit?").
SHARDS = ("none", "zero1", "zero2", "zero3", "fsdp")

#: The marker's step arguments.
STEP_KEYS = ("optimizer", "precision", "device_count", "shard", "checkpointing")


def choose(kind: str, value: str, known: tuple[str, ...]) -> str:
    """``value`` if one of ``known`` (case and ``_`` forgiven), else a "did you mean" error."""
    norm = value.strip().lower().replace("_", "-")
    if norm in known:
        return norm
    hint = did_you_mean(norm, known, n=3, cutoff=0.5)
    raise ModelprofError(f"unknown {kind} {value!r}{hint or '.'} Use one of {', '.join(known)}")


def parse_optimizer(value: str) -> tuple[str, str | None]:
    """``"adamw"`` or ``"adamw:fused"`` -> (name, impl or None)."""
    name, _, impl = value.partition(":")
    return (
        choose("optimizer", name, OPTIMIZERS),
        choose("optimizer implementation", impl, OPTIMIZER_IMPLS) if impl else None,
    )


def step_pairs(
    values: Mapping[str, object], source: str, error: type[Exception] = ModelprofError
) -> tuple[tuple[str, Any], ...]:
    """A marker's ``optimizer``, ``precision``, ``device_count``, ``shard``, ``checkpointing``
    checked, as sorted pairs (for ``ProfileRequest.step``); a bad value raises ``error`` naming
    ``source``."""
    given = {k: values[k] for k in STEP_KEYS if values.get(k) is not None}
    try:
        step_options(given)
    except ModelprofError as exc:
        raise error(f"{source}: {exc}") from None
    return tuple(sorted(given.items()))


def step_options(given: Mapping[str, Any], *, train: bool = True) -> StepOptions:
    """The :class:`StepOptions` of ``step_pairs``' values (defaults for the others)."""
    name, impl = parse_optimizer(str(given.get("optimizer", "adamw")))
    return StepOptions(
        train=train,
        optimizer=name,
        optimizer_impl=impl or "foreach",
        precision=str(given.get("precision", "fp32")),
        device_count=given.get("device_count", 1),
        shard=str(given.get("shard", "none")) if train else "none",
        # under no_grad nothing is saved for backward: checkpointing changes nothing there
        checkpointing=given.get("checkpointing", False) if train else False,
    )


@dataclass(frozen=True)
class StepOptions:
    """What the estimated step runs: training or inference, optimizer, precision, sharding."""

    train: bool = True
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"
    precision: str = "fp32"
    device_count: int = 1
    shard: str = "none"
    #: Turn on the model's own activation checkpointing (transformers'
    #: ``gradient_checkpointing_enable``) on the copy that runs.
    checkpointing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "optimizer", choose("optimizer", self.optimizer, OPTIMIZERS))
        object.__setattr__(
            self,
            "optimizer_impl",
            choose("optimizer implementation", self.optimizer_impl, OPTIMIZER_IMPLS),
        )
        object.__setattr__(self, "precision", choose("precision", self.precision, PRECISIONS))
        object.__setattr__(self, "shard", choose("shard", self.shard, SHARDS))
        if not isinstance(self.checkpointing, bool):
            raise ModelprofError(f"checkpointing must be True or False, got {self.checkpointing!r}")
        count = self.device_count
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ModelprofError(f"device_count must be a whole number >= 1, got {count!r}")
        if self.shard != "none" and not self.train:
            raise ModelprofError(
                f"shard={self.shard!r} divides training state (gradients, optimizer state); "
                "an inference estimate has none: drop shard or estimate training (--train)"
            )

    @property
    def mixed(self) -> bool:
        """fp32 master weights with the forward under autocast."""
        return self.precision.endswith("-mixed")

    @property
    def master_weights(self) -> bool:
        """Low-precision weights whose optimizer steps fp32 master copies."""
        return self.precision.endswith("-master")

    @property
    def recipe(self) -> str:
        """What the precision keeps and computes in (see :data:`RECIPES`)."""
        return RECIPES[self.precision]
