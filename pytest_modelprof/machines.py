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


# -- memory capacities ("Will it fit?", pytest_modelprof.fit) -----------------------------------

__all__ += ["GPU_MEMORY", "resolve_capacity"]

#: Total device memory per GPU preset, in bytes: the MiB nvidia-smi reports as the card's total
#: (what the driver, the CUDA context and allocator fragmentation then take is not subtracted).
GPU_MEMORY: dict[str, int] = {
    name: mib * 2**20
    for name, mib in {
        "t4-16gb": 15_360,
        "l4-24gb": 23_034,
        "rtx4090-24gb": 24_564,
        "a100-40gb": 40_960,
        "l40s-48gb": 46_068,
        "a100-80gb": 81_920,
        "h100-80gb": 81_559,
        "h200-141gb": 143_771,
    }.items()
}


def resolve_capacity(gpu: str | int) -> tuple[str, int]:
    """A GPU preset name or a byte count (``"24GB"``, ``"22GiB"``, ``25769803776``) ->
    (label, bytes); an unknown name gets "did you mean"."""
    import difflib

    from pytest_modelprof.units import format_bytes, parse_bytes

    if isinstance(gpu, int) and not isinstance(gpu, bool):
        if gpu <= 0:
            raise ValueError(f"a memory capacity must be positive bytes, got {gpu}")
        return format_bytes(gpu), gpu
    name = str(gpu).strip().lower()
    if name in GPU_MEMORY:
        return name, GPU_MEMORY[name]
    try:
        nbytes = int(parse_bytes(name))
    except ValueError:
        close = difflib.get_close_matches(name, list(GPU_MEMORY), n=3, cutoff=0.4)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise ValueError(
            f"unknown GPU {gpu!r}; {hint}use one of {', '.join(GPU_MEMORY)} or a size in "
            "bytes such as 24GB"
        ) from None
    if nbytes <= 0:
        raise ValueError(f"a memory capacity must be positive bytes, got {gpu!r}")
    return format_bytes(nbytes), nbytes
