"""Random example inputs for each ``InputKind``; tensors go straight to the requested device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pytest_modelprof.errors import ModelInputError

if TYPE_CHECKING:
    import torch

__all__ = ["InputKind", "Shape", "make_inputs", "TEXT_LEN"]

InputKind = Literal[
    "tensor",
    "image_list",
    "image_pair",
    "token_ids",
    "input_ids",
    "seq2seq_ids",
    "input_features",
    "speech_seq2seq",
    "input_values",
    "image_text",
    "vision_language",
]
"""How ``input_shape`` becomes the forward arguments.

- ``tensor``: one float tensor of exactly that shape.
- ``image_list``: ``(N, C, H, W)`` means a list of ``N`` images of ``C x H x W`` (detection).
- ``image_pair``: two float tensors of that shape (optical flow: ``raft_*``).
- ``token_ids``: one ``int64`` tensor of that shape, values in ``[0, vocab_size)``.
- ``input_ids``: the same tensor, passed as the keyword ``input_ids=`` (Hugging Face).
- ``seq2seq_ids``: ``input_ids=`` and ``decoder_input_ids=``, both of that shape (T5, BART).
- ``input_features``: one float tensor of that shape as ``input_features=`` (log-mel features).
- ``speech_seq2seq``: ``input_features=`` and ``decoder_input_ids=`` of ``(batch, text_len)``
  (Whisper).
- ``input_values``: one float tensor ``(batch, samples)`` as ``input_values=`` (raw audio).
- ``image_text``: ``pixel_values=`` of that shape and ``input_ids=`` of ``(batch, text_len)``
  (CLIP, SigLIP).
- ``vision_language``: ``pixel_values=`` of that shape and ``input_ids=`` that start with one
  image's placeholder tokens (``image_tokens``: id and count), then ``text_len`` text ids
  (LLaVA, PaliGemma).
"""

TEXT_LEN = 32
"""Length of the token ids that go beside another input (a speech model's ``decoder_input_ids``,
a dual-tower model's ``input_ids``) unless the model's positions are fewer."""

Shape = tuple[int, ...]


def make_inputs(
    name: str,
    kind: InputKind,
    shape: Shape,
    *,
    device: torch.device,
    dtype: torch.dtype,
    vocab_size: int,
    text_len: int = TEXT_LEN,
    image_tokens: tuple[int, int] | None = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` of random data shaped for ``kind``; see ``InputKind``."""
    import torch

    if kind in _MAIN:
        out = _keyword_inputs(name, kind, shape, device, dtype, vocab_size, text_len)
        if kind == "vision_language":
            out["input_ids"] = _with_image_tokens(name, out["input_ids"], image_tokens, vocab_size)
        return (), out
    if kind == "tensor":
        return (torch.randn(shape, device=device, dtype=dtype),), {}
    if kind == "token_ids":
        return (torch.randint(0, vocab_size, shape, device=device, dtype=torch.long),), {}
    if kind in ("input_ids", "seq2seq_ids"):
        return (), _token_ids(name, kind, shape, device, vocab_size)
    if kind == "image_list":
        return (_image_list(name, shape, device, dtype),), {}
    if kind == "image_pair":
        return _image_pair(name, shape, device, dtype), {}
    raise ModelInputError(f"model {name!r}: unknown input kind {kind!r}")  # pragma: no cover


def _token_ids(
    name: str, kind: InputKind, shape: Shape, device: torch.device, vocab_size: int
) -> dict[str, Any]:
    """``input_ids`` (and a seq2seq model's ``decoder_input_ids``) of shape (batch, seq_len)."""
    import torch

    if len(shape) != 2:
        raise ModelInputError(
            f"model {name!r} takes token ids: input_shape must be (batch, seq_len), got {shape}"
        )
    ids = torch.randint(0, vocab_size, shape, device=device, dtype=torch.long)
    if kind == "input_ids":
        return {"input_ids": ids}
    decoder = torch.randint(0, vocab_size, shape, device=device, dtype=torch.long)
    return {"input_ids": ids, "decoder_input_ids": decoder}


def _image_list(
    name: str, shape: Shape, device: torch.device, dtype: torch.dtype
) -> list[torch.Tensor]:
    """torchvision detection models take a list of CxHxW images (each may differ in size).

    (N, C, H, W) reads as N images of CxHxW, and a bare (C, H, W) as one image.
    """
    import torch

    if len(shape) == 3:
        shape = (1, *shape)
    if len(shape) != 4:
        raise ModelInputError(
            f"model {name!r} takes a list of images: input_shape must be (N, C, H, W) "
            f"(N images of CxHxW) or (C, H, W), got {shape}"
        )
    n, *chw = shape
    return [torch.randn(chw, device=device, dtype=dtype) for _ in range(n)]


def _image_pair(
    name: str, shape: Shape, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two images for an optical-flow model, H and W multiples of 8."""
    import torch

    if len(shape) != 4 or shape[-1] % 8 or shape[-2] % 8:
        raise ModelInputError(
            f"model {name!r} (optical flow) takes two images of shape (B, 3, H, W) with "
            f"H and W multiples of 8, got {shape}; e.g. input_shape=(1, 3, 520, 960)"
        )
    return (
        torch.randn(shape, device=device, dtype=dtype),
        torch.randn(shape, device=device, dtype=dtype),
    )


_MAIN: dict[str, tuple[str, int]] = {
    "input_features": ("input_features", 3),
    "speech_seq2seq": ("input_features", 3),
    "input_values": ("input_values", 2),
    "image_text": ("pixel_values", 4),
    "vision_language": ("pixel_values", 4),
}
_LAYOUT = {2: "(batch, samples)", 3: "(batch, features, frames), 3-d", 4: "(batch, C, H, W)"}


def _keyword_inputs(
    name: str,
    kind: InputKind,
    shape: Shape,
    device: torch.device,
    dtype: torch.dtype,
    vocab_size: int,
    text_len: int,
) -> dict[str, Any]:
    """A Hugging Face model's keyword inputs: the main float tensor, then token ids if needed."""
    import torch

    key, rank = _MAIN[kind]
    if len(shape) != rank:
        raise ModelInputError(
            f"model {name!r} takes {key}: input_shape must be {_LAYOUT[rank]}, got {shape}"
        )
    out: dict[str, Any] = {key: torch.randn(shape, device=device, dtype=dtype)}
    ids = torch.randint(0, vocab_size, (shape[0], text_len), device=device, dtype=torch.long)
    if kind == "speech_seq2seq":
        out["decoder_input_ids"] = ids
    elif kind in ("image_text", "vision_language"):
        out["input_ids"] = ids
    return out


def _with_image_tokens(
    name: str, text: torch.Tensor, image_tokens: tuple[int, int] | None, vocab_size: int
) -> torch.Tensor:
    """``count`` placeholders of ``token`` per image, then ``text`` (ids that never equal it)."""
    import torch

    if image_tokens is None:
        raise ModelInputError(
            f"model {name!r} takes image placeholder tokens in input_ids, but its config does "
            "not say how many; pass inputs={'pixel_values': ..., 'input_ids': ...}"
        )
    token, count = image_tokens
    if token < vocab_size:
        # Ids in [0, vocab - 1), those at or above the placeholder moved up one: any id but it.
        text = text % max(1, vocab_size - 1)
        text = text + (text >= token).to(text.dtype)
    image = torch.full((text.shape[0], count), token, device=text.device, dtype=text.dtype)
    return torch.cat([image, text], dim=1)
