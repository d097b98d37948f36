"""``ModelSpec``: one resolved model name, able to build the module and example inputs for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, final

from pytest_modelprof.errors import ModelBuildError, ModelInputError
from pytest_modelprof.models._inputs import TEXT_LEN, InputKind, Shape, make_inputs

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = [
    "ModelSpec",
    "Source",
    "InputKind",
    "Shape",
    "BuiltInputs",
    "TOKEN_KINDS",
    "SAMPLE_RATE",
    "BUILD_NOTE",
]

Source = Literal["torchvision", "ultralytics", "timm", "hf", "import", "registered"]
"""Where a name came from."""

TOKEN_KINDS = frozenset({"token_ids", "input_ids", "seq2seq_ids"})
"""Input kinds whose shape is ``(batch, seq_len)``."""
SAMPLE_RATE = 16_000
"""Samples per second of raw audio (``input_values``): what wav2vec2 and HuBERT were trained on."""
BUILD_NOTE = "_modelprof_build_note"
"""Attribute a builder may set on the module it returns: a line the capture reason carries
(which of several classes was built)."""

BuildFn = Callable[..., Any]
"""Called with the merged architecture kwargs; returns the module (checked: an ``nn.Module``)."""
ShapeKwargsFn = Callable[[Shape], Mapping[str, Any]]
"""Architecture kwargs an input shape implies, e.g. ``image_size=384`` for ``vit_b_16``."""


@final
@dataclass(frozen=True)
class BuiltInputs:
    """What a built module says its inputs are (a Hugging Face model's own config).

    ``None`` fields fall back to the spec's, which come from the *default* config and miss
    what ``--arch`` changed (``vocab_size``, ``image_size``, ...).
    """

    default_shape: Shape | None = None
    vocab_size: int | None = None
    text_len: int | None = None
    """Length of companion token ids (``decoder_input_ids`` of Whisper, ``input_ids`` of CLIP)."""
    image_tokens: tuple[int, int] | None = None
    """``(token id, count)`` of the image placeholders a vision-language model's ids start with."""


BuiltInputsFn = Callable[[Any], BuiltInputs]
"""Reads :class:`BuiltInputs` from the built module."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _no_shape_kwargs(shape: Shape) -> Mapping[str, Any]:
    return _EMPTY


@final
@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: how to build it, what it eats by default, and where it came from.

    ``build`` never loads weights (except a ``.pt`` file the user pointed at) and builds on the
    ambient default device, so ``with torch.device("meta"): spec.build()`` allocates nothing.
    """

    name: str
    source: Source
    builder: BuildFn = field(repr=False, compare=False)
    default_input_shape: Shape | None = None
    input_kind: InputKind = "tensor"
    group: str = ""
    """The ``list_models`` group, e.g. ``"torchvision.classification"``."""
    default_arch_kwargs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """Kwargs always passed to the builder (user ``arch_kwargs`` override them)."""
    shape_kwargs: ShapeKwargsFn = field(default=_no_shape_kwargs, repr=False, compare=False)
    vocab_size: int = 32_000
    """Upper bound (exclusive) of generated ids when ``input_kind == "token_ids"``."""
    built_inputs: BuiltInputsFn | None = field(default=None, repr=False, compare=False)
    """Inputs read from the built module; they win over ``default_input_shape``/``vocab_size``."""
    image_tokens: tuple[int, int] | None = None
    """``(token id, count)`` of the image placeholders of ``vision_language`` inputs."""

    def __post_init__(self) -> None:
        # Specs are cached and shared: freeze the kwargs so no caller can edit another's defaults.
        frozen = MappingProxyType(dict(self.default_arch_kwargs))
        object.__setattr__(self, "default_arch_kwargs", frozen)
        if self.default_input_shape is not None:
            object.__setattr__(self, "default_input_shape", tuple(self.default_input_shape))

    def arch_kwargs_for(
        self, input_shape: Shape | None = None, **arch_kwargs: Any
    ) -> dict[str, Any]:
        """Kwargs ``build`` passes: defaults, then what the input shape implies, then the user's."""
        shape = self._shape(input_shape, required=False)
        implied = dict(self.shape_kwargs(shape)) if shape is not None else {}
        return {**self.default_arch_kwargs, **implied, **arch_kwargs}

    def build(self, input_shape: Shape | None = None, **arch_kwargs: Any) -> nn.Module:
        """Construct the model with random weights on the ambient device, in ``eval()`` mode.

        Exceptions from the underlying builder propagate unchanged (the engine retries a failed
        meta-device build on CPU); only a builder that returns a non-module raises here.
        """
        from torch import nn

        module = self.builder(**self.arch_kwargs_for(input_shape, **arch_kwargs))
        if not isinstance(module, nn.Module):
            raise ModelBuildError(
                f"model {self.name!r} ({self.source}): the factory returned "
                f"{type(module).__name__}, not a torch.nn.Module; make it return the model instance"
            )
        return module.eval()

    def example_inputs(
        self,
        input_shape: Shape | None = None,
        device: torch.device | str = "cpu",
        dtype: torch.dtype | None = None,
        module: nn.Module | None = None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Random ``(args, kwargs)`` for ``module(*args, **kwargs)`` on ``device`` (meta works).

        ``dtype`` defaults to ``torch.float32``; it is ignored for ``token_ids`` (always int64).
        ``module``: the model as built; its own config decides the vocabulary and the default
        shape (sequence length, image size, channels), whatever the architecture kwargs changed.
        """
        import torch

        built = self._built(module)
        if input_shape is None and built.default_shape is not None:
            input_shape = built.default_shape
        shape = self._shape(input_shape, required=True)
        assert shape is not None  # required=True raised otherwise
        return make_inputs(
            self.name,
            self.input_kind,
            shape,
            device=torch.device(device),
            dtype=torch.float32 if dtype is None else dtype,
            vocab_size=built.vocab_size or self.vocab_size,
            text_len=built.text_len or TEXT_LEN,
            image_tokens=built.image_tokens or self.image_tokens,
        )

    def probe(self, **arch_kwargs: Any) -> nn.Module | None:
        """The model ``arch_kwargs`` build, on meta, where its inputs depend on it; else ``None``.

        Only specs with ``built_inputs`` (Hugging Face configs) read their inputs from the
        module; for the others, and a builder that fails on meta, the registry default holds.
        """
        if self.built_inputs is None:
            return None
        import torch

        try:
            with torch.device("meta"):
                return self.build(**arch_kwargs)
        except Exception:  # the real build reports it, with its own context
            return None

    def default_shape_for(self, module: nn.Module | None = None) -> Shape | None:
        """The default input shape of ``module`` as built (its own config), else the spec's."""
        return self._built(module).default_shape or self.default_input_shape

    def input_shape_for(
        self,
        *,
        batch: int | None = None,
        seq_len: int | None = None,
        seconds: float | None = None,
        module: nn.Module | None = None,
    ) -> Shape | None:
        """The default input shape with its batch, sequence length or audio length replaced.

        ``seq_len`` applies to text models only (input kinds with ``(batch, seq_len)`` shapes),
        ``seconds`` to raw-audio models (``input_values``: ``seconds * SAMPLE_RATE`` samples);
        this is what ``--seq-len``, ``--seconds`` and ``--batch`` mean for a named model.
        ``module``: the model as built (or :meth:`probe`), whose default shape is resized, so
        what ``--arch`` changed (image size, channels, positions) is kept.
        """
        shape = self.default_shape_for(module)
        if seconds is not None:
            seq_len = self._samples(seconds)
        if batch is None and seq_len is None:
            return shape
        for label, value in (("batch", batch), ("seq_len", seq_len)):
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ModelInputError(
                    f"model {self.name!r}: {label} must be a positive int, got {value!r}"
                )
        if shape is None:
            raise ModelInputError(
                f"model {self.name!r} ({self.source}) has no default input shape to resize; "
                "pass input_shape=(...) instead"
            )
        if seq_len is not None and self.input_kind not in TOKEN_KINDS and seconds is None:
            raise ModelInputError(
                f"model {self.name!r} takes {self.input_kind} inputs of shape {shape}, not token "
                "ids; a sequence length applies to text models only (use input_shape=(...))"
            )
        out = list(shape)
        if batch is not None:
            out[0] = batch
        if seq_len is not None:
            out[1] = seq_len
        return tuple(out)

    def _samples(self, seconds: float) -> int:
        """The sequence length of ``seconds`` of raw audio (``input_values`` models only)."""
        if self.input_kind != "input_values":
            raise ModelInputError(
                f"model {self.name!r} takes {self.input_kind} inputs, not raw audio; "
                "seconds applies to input_values models only (use input_shape=(...))"
            )
        if not isinstance(seconds, (int, float)) or seconds <= 0:
            raise ModelInputError(
                f"model {self.name!r}: seconds must be positive, got {seconds!r}"
            )
        return round(seconds * SAMPLE_RATE)

    def _built(self, module: nn.Module | None) -> BuiltInputs:
        if module is None or self.built_inputs is None:
            return BuiltInputs()
        return self.built_inputs(module)

    def _shape(self, input_shape: Shape | None, *, required: bool) -> Shape | None:
        if input_shape is None:
            if self.default_input_shape is None and required:
                raise ModelInputError(
                    f"model {self.name!r} ({self.source}) has no default input shape; "
                    "pass input_shape=(...) (the marker's or the fixture's; --input-shape on the "
                    "command line)"
                )
            return self.default_input_shape
        shape = tuple(input_shape)
        if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
            raise ModelInputError(
                f"model {self.name!r}: input_shape must be a non-empty tuple of positive ints, "
                f"got {input_shape!r}"
            )
        return shape
