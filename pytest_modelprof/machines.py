"""Machine-balance presets that decide compute- vs memory-bound (the roofline ridge point)."""

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
            raise SettingsError(f"machine balance must be positive FLOPs/byte, got {machine}")
        return Machine(
            name=f"balance={machine:g}", peak_flops=float(machine) * 1e12, bandwidth=1e12
        )
    if isinstance(machine, str):
        try:
            return MACHINES[machine]
        except KeyError:
            if machine.strip().lower() in GPUS:  # a GPU by hardware name: its AMP roofline
                return GPUS[machine.strip().lower()].machine("amp")
            try:
                return resolve_machine(float(machine))
            except ValueError:
                pass
            known = ", ".join([*sorted(MACHINES), *GPUS])
            raise SettingsError(
                f"unknown machine {machine!r}; use one of {known} or a balance in FLOPs/byte"
            ) from None
    raise UsageError(f"machine must be a name, a number or a Machine, not {type(machine).__name__}")


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
    from pytest_modelprof.units import format_bytes, parse_bytes

    if isinstance(gpu, int) and not isinstance(gpu, bool):
        if gpu <= 0:
            raise SettingsError(f"a memory capacity must be positive bytes, got {gpu}")
        return format_bytes(gpu), gpu
    name = str(gpu).strip().lower()
    if name in GPU_MEMORY:
        return name, GPU_MEMORY[name]
    try:
        nbytes = int(parse_bytes(name))
    except ValueError:
        hint = did_you_mean(name, GPU_MEMORY, n=3, cutoff=0.4)
        raise SettingsError(
            f"unknown GPU {gpu!r}{hint or '.'} Use one of {', '.join(GPU_MEMORY)} or a size in "
            "bytes such as 24GB"
        ) from None
    if nbytes <= 0:
        raise SettingsError(f"a memory capacity must be positive bytes, got {gpu!r}")
    return format_bytes(nbytes), nbytes


# -- GPU specifications (predicted GPU time, pytest_modelprof.predict) --------------------------

__all__ += ["GpuSpec", "GPUS", "PRECISIONS", "resolve_gpu"]

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
    memory_bytes: int = Field(gt=0)

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
# Datasheet figures (dense, no sparsity). Sources: NVIDIA's product briefs and architecture
# whitepapers (Turing, Ampere GA100/GA102, Ada, Hopper, Blackwell).
GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in [
        GpuSpec(name="t4", label="Tesla T4", fp32=8.1 * _T, tf32_tensor=8.1 * _T,
                fp16_tensor=65 * _T, bandwidth=320 * _GB, sm_count=40, memory_bytes=16 * _GIB),
        GpuSpec(name="l4", label="L4", fp32=30.3 * _T, tf32_tensor=60 * _T,
                fp16_tensor=121 * _T, bandwidth=300 * _GB, sm_count=58, memory_bytes=24 * _GIB),
        GpuSpec(name="a10", label="A10", fp32=31.2 * _T, tf32_tensor=62.5 * _T,
                fp16_tensor=125 * _T, bandwidth=600 * _GB, sm_count=72, memory_bytes=24 * _GIB),
        GpuSpec(name="a100-40gb", label="A100 SXM 40 GB", fp32=19.5 * _T,
                tf32_tensor=156 * _T, fp16_tensor=312 * _T, bandwidth=1555 * _GB, sm_count=108,
                memory_bytes=40 * _GIB),
        GpuSpec(name="a100-80gb", label="A100 SXM 80 GB", fp32=19.5 * _T,
                tf32_tensor=156 * _T, fp16_tensor=312 * _T, bandwidth=2039 * _GB, sm_count=108,
                memory_bytes=80 * _GIB),
        GpuSpec(name="h100", label="H100 SXM 80 GB", fp32=67 * _T, tf32_tensor=494.5 * _T,
                fp16_tensor=989.5 * _T, bandwidth=3350 * _GB, sm_count=132,
                memory_bytes=80 * _GIB),
        GpuSpec(name="h200", label="H200 SXM 141 GB", fp32=67 * _T, tf32_tensor=494.5 * _T,
                fp16_tensor=989.5 * _T, bandwidth=4800 * _GB, sm_count=132,
                memory_bytes=141 * _GB),
        GpuSpec(name="b200", label="B200 180 GB", fp32=80 * _T, tf32_tensor=1100 * _T,
                fp16_tensor=2250 * _T, bandwidth=8000 * _GB, sm_count=148,
                memory_bytes=180 * _GB),
        GpuSpec(name="rtx3090", label="GeForce RTX 3090", fp32=35.6 * _T,
                tf32_tensor=35.6 * _T, fp16_tensor=71 * _T, bandwidth=936 * _GB,
                sm_count=82, memory_bytes=24 * _GIB),
        GpuSpec(name="rtx4090", label="GeForce RTX 4090", fp32=82.6 * _T,
                tf32_tensor=82.6 * _T, fp16_tensor=165.2 * _T, bandwidth=1008 * _GB,
                sm_count=128, memory_bytes=24 * _GIB),
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
                memory_bytes=48 * _GIB),
    ]
}


def resolve_gpu(name: str | GpuSpec) -> GpuSpec:
    """A GPU by hardware name (``rtx4090``, ``a100-40gb``, ``h100``); an unknown name says
    which exist."""
    if isinstance(name, GpuSpec):
        return name
    key = str(name).strip().lower()
    # The older "<gpu>-<precision>" presets name the same hardware.
    for suffix in ("-fp16", "-bf16", "-fp32"):
        if key.endswith(suffix) and key.removesuffix(suffix) in GPUS:
            key = key.removesuffix(suffix)
    if key == "a100":
        key = "a100-80gb"
    if key in GPUS:
        return GPUS[key]
    hint = did_you_mean(key, GPUS, n=3, cutoff=0.4)
    raise SettingsError(f"unknown GPU {name!r}{hint or '.'} Use one of {', '.join(GPUS)}")
