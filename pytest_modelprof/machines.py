"""The one table of hardware (:data:`MACHINES`): peak FLOP/s per precision, memory bandwidth and
memory capacity per piece of hardware, named as the hardware is (``h100``, ``a100-40gb``,
``rtx4090``). ``profile``, ``llm``, ``memory`` and the GPU-time prediction all read it; a
:class:`Machine` is one entry's roofline at one precision (its balance decides compute- vs
memory-bound)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pytest_modelprof.errors import SettingsError, UsageError, did_you_mean

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


#: The balance a profile judges against when no machine is named: the 10 FLOPs/byte threshold
#: of the profilers this one replaces (not a piece of hardware, so not in :data:`MACHINES`).
GENERIC = Machine(name="generic", peak_flops=1e12, bandwidth=1e11)

__all__ += ["GpuSpec", "PRECISIONS", "machine_spec"]

#: Precisions a prediction can assume: ``fp32`` (no tensor cores), ``tf32`` (fp32 tensors,
#: tensor-core matmuls), ``amp`` (fp16 autocast over an fp32 model), ``amp-bf16`` (bf16
#: autocast), ``fp16`` and ``bf16`` (the whole model cast).
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp", "amp-bf16", "fp16", "bf16")


class GpuSpec(BaseModel):
    """A GPU's datasheet row: dense peaks per precision, memory bandwidth, SMs and memory.

    ``fp16_tensor`` is the dense fp16/bf16 tensor-core peak. NB: GeForce datasheets halve it
    "with fp32 accumulate"; the published timm throughputs of the RTX 3090 and 4090 need
    matmul rates above that halved figure (the fit puts them at 70-75 % of the full one), so
    the full (fp16-accumulate) figure is used for every card. ``fp32`` is the non-tensor (CUDA
    core) fp32 peak, which elementwise kernels and fp32 matmuls use.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    label: str
    fp32: float = Field(gt=0, description="FLOP/s, CUDA cores")
    tf32_tensor: float = Field(gt=0, description="FLOP/s, dense")
    fp16_tensor: float = Field(gt=0, description="FLOP/s, dense, fp32 accumulate")
    bandwidth: float = Field(gt=0, description="bytes/s")
    sm_count: int = Field(gt=0)
    memory_bytes: int = Field(gt=0, description="bytes, the card's total")

    def tensor_peak(self, precision: str) -> float:
        """Peak FLOP/s of a matmul or dense convolution at ``precision``."""
        if precision == "fp32":
            return self.fp32
        if precision == "tf32":
            return self.tf32_tensor
        return self.fp16_tensor

    def machine(self, precision: str = "amp") -> Machine:
        """The roofline :class:`Machine` of this GPU at ``precision`` (matmul peak)."""
        return Machine(name=self.name, peak_flops=self.tensor_peak(precision),
                       bandwidth=self.bandwidth)


_GB = 10**9
_GIB = 2**30
_T = 1e12
_MIB = 2**20
# Datasheet figures (dense, no sparsity). Sources: NVIDIA's product briefs and architecture
# whitepapers (Turing, Ampere GA100/GA102, Ada, Hopper, Blackwell). Memory is the total
# nvidia-smi reports where it was read off a card (in mebibytes), else the datasheet's; what the
# driver, the CUDA context and allocator fragmentation then take is not subtracted.
MACHINES: dict[str, GpuSpec] = {
    g.name: g
    for g in [
        GpuSpec(name="t4", label="Tesla T4", fp32=8.1 * _T, tf32_tensor=8.1 * _T,
                fp16_tensor=65 * _T, bandwidth=320 * _GB, sm_count=40, memory_bytes=15_360 * _MIB),
        GpuSpec(name="l4", label="L4", fp32=30.3 * _T, tf32_tensor=60 * _T,
                fp16_tensor=121 * _T, bandwidth=300 * _GB, sm_count=58, memory_bytes=23_034 * _MIB),
        GpuSpec(name="a10", label="A10", fp32=31.2 * _T, tf32_tensor=62.5 * _T,
                fp16_tensor=125 * _T, bandwidth=600 * _GB, sm_count=72, memory_bytes=24 * _GIB),
        GpuSpec(name="a100-40gb", label="A100 SXM 40 GB", fp32=19.5 * _T,
                tf32_tensor=156 * _T, fp16_tensor=312 * _T, bandwidth=1555 * _GB, sm_count=108,
                memory_bytes=40_960 * _MIB),
        GpuSpec(name="a100-80gb", label="A100 SXM 80 GB", fp32=19.5 * _T,
                tf32_tensor=156 * _T, fp16_tensor=312 * _T, bandwidth=2039 * _GB, sm_count=108,
                memory_bytes=81_920 * _MIB),
        GpuSpec(name="h100", label="H100 SXM 80 GB", fp32=67 * _T, tf32_tensor=494.5 * _T,
                fp16_tensor=989.5 * _T, bandwidth=3350 * _GB, sm_count=132,
                memory_bytes=81_559 * _MIB),
        GpuSpec(name="h200", label="H200 SXM 141 GB", fp32=67 * _T, tf32_tensor=494.5 * _T,
                fp16_tensor=989.5 * _T, bandwidth=4800 * _GB, sm_count=132,
                memory_bytes=143_771 * _MIB),
        GpuSpec(name="b200", label="B200 180 GB", fp32=80 * _T, tf32_tensor=1100 * _T,
                fp16_tensor=2250 * _T, bandwidth=8000 * _GB, sm_count=148,
                memory_bytes=180 * _GB),
        GpuSpec(name="rtx3090", label="GeForce RTX 3090", fp32=35.6 * _T,
                tf32_tensor=35.6 * _T, fp16_tensor=71 * _T, bandwidth=936 * _GB,
                sm_count=82, memory_bytes=24 * _GIB),
        GpuSpec(name="rtx4090", label="GeForce RTX 4090", fp32=82.6 * _T,
                tf32_tensor=82.6 * _T, fp16_tensor=165.2 * _T, bandwidth=1008 * _GB,
                sm_count=128, memory_bytes=24_564 * _MIB),
        GpuSpec(name="rtx5090", label="GeForce RTX 5090", fp32=104.8 * _T,
                tf32_tensor=104.8 * _T, fp16_tensor=209.5 * _T, bandwidth=1792 * _GB,
                sm_count=170, memory_bytes=32 * _GIB),
        GpuSpec(name="rtx-pro-6000", label="RTX PRO 6000 Blackwell", fp32=125 * _T,
                tf32_tensor=126 * _T, fp16_tensor=252 * _T, bandwidth=1792 * _GB,
                sm_count=188, memory_bytes=96 * _GIB),
        GpuSpec(name="rtx-pro-6000-maxq", label="RTX PRO 6000 Blackwell Max-Q",
                fp32=110 * _T, tf32_tensor=110 * _T, fp16_tensor=220 * _T,
                bandwidth=1792 * _GB, sm_count=188, memory_bytes=96 * _GIB),
        GpuSpec(name="l40s", label="L40S", fp32=91.6 * _T, tf32_tensor=183 * _T,
                fp16_tensor=362 * _T, bandwidth=864 * _GB, sm_count=142,
                memory_bytes=46_068 * _MIB),
    ]
}


def machine_spec(name: str | GpuSpec) -> GpuSpec:
    """An entry of :data:`MACHINES` by its name; an unknown name gets "did you mean" and the
    names there are."""
    if isinstance(name, GpuSpec):
        return name
    key = str(name).strip().lower()
    if key in MACHINES:
        return MACHINES[key]
    raise SettingsError(f"unknown machine {name!r}{_near(key)} (the machines: "
                        f"{', '.join(MACHINES)})")


def _near(key: str) -> str:
    """"did you mean" for a name: the machines it extends or that extend it first (``h100-80gb``
    and ``h100-bf16`` name the ``h100``, whose precision is separate; ``a100`` is one of two),
    else the closest names."""
    within = [n for n in MACHINES if key.startswith(n + "-") or n.startswith(key + "-")]
    return did_you_mean(key, within, cutoff=0.0) if within else did_you_mean(
        key, MACHINES, cutoff=0.5
    )


def resolve_machine(machine: str | float | Machine | None, precision: str = "amp") -> Machine:
    """The roofline of a :data:`MACHINES` entry at ``precision`` (its matmul peak), a bare
    balance in FLOPs/byte, or a :class:`Machine`; ``None`` is :data:`GENERIC`."""
    if machine is None:
        return GENERIC
    if isinstance(machine, Machine):
        return machine
    if isinstance(machine, (int, float)) and not isinstance(machine, bool):
        if not machine > 0:
            raise SettingsError(f"machine balance must be positive FLOPs/byte, got {machine}")
        return Machine(
            name=f"balance={machine:g}", peak_flops=float(machine) * 1e12, bandwidth=1e12
        )
    if isinstance(machine, str):
        try:
            return resolve_machine(float(machine))
        except ValueError:
            pass
        if precision not in PRECISIONS:
            raise SettingsError(f"unknown precision {precision!r}"
                                f"{did_you_mean(precision, PRECISIONS)} (the precisions: "
                                f"{', '.join(PRECISIONS)})")
        return machine_spec(machine).machine(precision)
    raise UsageError(f"machine must be a name, a number or a Machine, not {type(machine).__name__}")
