"""Machine-balance presets that decide compute- vs memory-bound (the roofline ridge point)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Machine", "MACHINES", "resolve_machine"]


class Machine(BaseModel):
    """Peak compute and memory bandwidth; their ratio is the balance in FLOPs per byte."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    peak_flops: float = Field(gt=0, description="FLOP/s")
    bandwidth: float = Field(gt=0, description="bytes/s")

    @property
    def balance(self) -> float:
        """FLOPs per byte at which compute time equals memory time."""
        return self.peak_flops / self.bandwidth


# Dense datasheet peaks. "generic" keeps the 10 FLOPs/byte threshold of the profilers we replace.
MACHINES: dict[str, Machine] = {
    m.name: m
    for m in [
        Machine(name="generic", peak_flops=1e12, bandwidth=1e11),
        Machine(name="cpu-avx512", peak_flops=3.0e12, bandwidth=2.0e11),
        Machine(name="t4-fp16", peak_flops=65e12, bandwidth=320e9),
        Machine(name="a100-fp32", peak_flops=19.5e12, bandwidth=2.039e12),
        Machine(name="a100-bf16", peak_flops=312e12, bandwidth=2.039e12),
        Machine(name="h100-bf16", peak_flops=989e12, bandwidth=3.35e12),
        Machine(name="h200-bf16", peak_flops=989e12, bandwidth=4.8e12),
        Machine(name="rtx4090-fp16", peak_flops=165e12, bandwidth=1.008e12),
    ]
}


def resolve_machine(machine: str | float | Machine | None) -> Machine:
    """A preset name, a bare balance in FLOPs/byte, or a :class:`Machine`."""
    if machine is None:
        return MACHINES["generic"]
    if isinstance(machine, Machine):
        return machine
    if isinstance(machine, (int, float)) and not isinstance(machine, bool):
        if machine <= 0:
            raise ValueError(f"machine balance must be positive FLOPs/byte, got {machine}")
        return Machine(
            name=f"balance={machine:g}", peak_flops=float(machine) * 1e12, bandwidth=1e12
        )
    if isinstance(machine, str):
        try:
            return MACHINES[machine]
        except KeyError:
            try:
                return resolve_machine(float(machine))
            except ValueError:
                pass
            known = ", ".join(sorted(MACHINES))
            raise ValueError(
                f"unknown machine {machine!r}; use one of {known} or a balance in FLOPs/byte"
            ) from None
    raise TypeError(f"machine must be a name, a number or a Machine, not {type(machine).__name__}")
