"""``profile_llm``: a prefill and one decode step of a causal LM, counted on meta tensors.

Passes over one meta build (nothing allocated, so a 70B decoder at 32k context takes
seconds): a counted prefill of the prompt into an empty cache; an uncounted prefill of
``context - 2`` tokens and one decode step, which fill the cache exactly as the model fills it
(on meta nothing is computed, only shapes); and a counted decode step of one token per
sequence. Counting is the one ATen capture (:class:`~pytest_modelprof.capture.tracer.Tracer`);
the KV cache is measured from the storages the model's cache object keeps after the step.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from math import prod
from typing import Any

import torch
from torch import nn

from pytest_modelprof.analysis import rollup
from pytest_modelprof.capture.kernels import canonical_kernels
from pytest_modelprof.capture.plan import Subject, make_subject, resolve_dtype
from pytest_modelprof.capture.record import Capture, OpRecord
from pytest_modelprof.capture.run import module_dtype
from pytest_modelprof.capture.standin import empty_standins, standin_copy
from pytest_modelprof.capture.tracer import Tracer
from pytest_modelprof.costs.registry import CostRegistry
from pytest_modelprof.costs.user import active_registry
from pytest_modelprof.errors import ModelBuildError, ModelForwardError, ModelInputError, clause
from pytest_modelprof.llm.cache import accepts, cache_argument, cache_bytes, returned_cache
from pytest_modelprof.llm.costs import Decode, KVCache, LLMCosts, Prefill, Weights
from pytest_modelprof.llm.roofline import roofline
from pytest_modelprof.machines import Machine, resolve_machine

__all__ = ["profile_llm"]

_META = torch.device("meta")


def profile_llm(
    model: nn.Module | str,
    *,
    prompt: int = 512,
    context: int = 4096,
    batch: int = 1,
    dtype: torch.dtype | str | None = None,
    machine: str | Machine | None = None,
    memory_bytes: float | None = None,
    allow_longer: bool = False,
    name: str | None = None,
    registry: CostRegistry | None = None,
    **arch_kwargs: Any,
) -> LLMCosts:
    """Serving costs of a causal LM: prefill of ``prompt`` tokens, one decode step at ``context``.

    ``model`` is a registry name (``hf:llama``, ``hf:./folder``) or a module whose forward takes
    its cache as ``cache``/``past_key_values`` and returns it; a module is never changed (a meta
    copy runs). ``context`` counts the tokens in the cache after the decode step. With
    ``machine`` (a preset), the result carries a roofline of decode and, where the machine's
    memory is known (or ``memory_bytes`` is given), whether weights + KV cache fit.
    Extra keyword arguments go to the model builder (config fields for ``hf:`` names).
    """
    for what, value, least in (("prompt", prompt, 1), ("context", context, 2), ("batch", batch, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ModelInputError(f"{what} must be an integer >= {least}, got {value!r}")
    subject = make_subject(model, name, arch_kwargs)
    module = _meta_module(subject, resolve_dtype(dtype))
    label = subject.label
    arg = cache_argument(module, label)
    _check_positions(module, label, max(prompt, context), allow_longer)
    reg = registry if registry is not None else active_registry()
    notes: list[str] = []
    use_cache = {"use_cache": True} if accepts(module, "use_cache") else {}
    keep = {"logits_to_keep": 1} if accepts(module, "logits_to_keep") else {}
    if keep:
        notes.append("prefill computes the logits of the last prompt token only, as generate does")
    with _quiet(), canonical_kernels(), _META, torch.no_grad():
        counted = Tracer(module, reg)
        ids = torch.zeros(batch, prompt, dtype=torch.long)
        counted.mark_inputs([ids])
        with counted.tracing():
            _forward(module, label, "prefill", input_ids=ids, **use_cache, **keep)
        prefill = counted.finish()
        # The cache at context - 1 as a decode step leaves it (not as a prefill does: a
        # sliding window cut from a long prompt keeps the prompt's storage until a step
        # replaces it), so that the counted step's growth is what one more token adds.
        filled = context - 2 if context > 2 else context - 1
        filler = Tracer(module, reg)
        with filler.running_only():
            out = _forward(
                module,
                label,
                "cache fill",
                input_ids=torch.zeros(batch, filled, dtype=torch.long),
                **use_cache,
                **keep,
            )
            cache = returned_cache(out, label, module)
            if filled < context - 1:
                ids = torch.zeros(batch, 1, dtype=torch.long)
                out = _forward(
                    module, label, "cache fill", input_ids=ids, **{arg: cache}, **use_cache
                )
                cache = _cache_after(out, cache)
        before = cache_bytes(cache)
        counted = Tracer(module, reg)
        ids = torch.zeros(batch, 1, dtype=torch.long)
        counted.mark_inputs([ids])
        with counted.tracing():
            out = _forward(module, label, "decode", input_ids=ids, **{arg: cache}, **use_cache)
        decode = counted.finish()
        kv = cache_bytes(_cache_after(out, cache))
    active, moe = _active_weight_bytes(module, decode)
    if moe:
        notes.append(
            "experts read by the decode step: on meta the routing has no values, so each "
            "grouped expert weight counts min(experts, routed rows): exact at batch 1, an upper "
            "bound above"
        )
    p, d = rollup.totals(prefill.ops), rollup.totals(decode.ops)
    costs = LLMCosts(
        model=label,
        prompt=prompt,
        context=context,
        batch=batch,
        dtype=str(module_dtype(module)).removeprefix("torch."),
        prefill=Prefill(tokens=prompt, flops=p.flops, macs=p.macs, bytes=p.memory),
        decode=Decode(
            context=context,
            flops_per_token=d.flops // batch,
            macs_per_token=d.macs // batch,
            bytes_per_token=d.memory // batch,
            arithmetic_intensity=rollup.arithmetic_intensity(d.flops, d.memory),
        ),
        kv_cache=KVCache(
            bytes=kv,
            bytes_per_token=kv / (context * batch),
            growth_per_token=(kv - before) / batch,
        ),
        weights=Weights(bytes=_weight_bytes(module), active_bytes=active),
        notes=notes,
    )
    if machine is None and memory_bytes is None:
        return costs
    limit = max_positions(module) if not allow_longer else None
    fit = roofline(costs, resolve_machine(machine), d.flops, memory_bytes, limit)
    return costs.model_copy(update={"roofline": fit})


# -- the module ------------------------------------------------------------------------------


def _meta_module(subject: Subject, dtype: torch.dtype | None) -> nn.Module:
    """A name built on meta, or a meta stand-in copy of the user's module (never the module)."""
    if subject.module is not None:
        module = standin_copy(subject.module, empty_standins(_META, dtype))
    else:
        spec = subject.spec
        assert spec is not None
        try:
            with _quiet(), _META:
                module = spec.build(**subject.arch_kwargs)
        except ModelBuildError:
            raise
        except Exception as exc:
            raise ModelBuildError(
                f"{subject.label}: building the model on meta tensors failed: "
                f"{type(exc).__name__}: {clause(exc)}. Check the builder arguments "
                f"({subject.arch_kwargs})."
            ) from exc
        if dtype is not None:
            module = module.to(dtype)
    return module.eval()


def max_positions(module: nn.Module) -> int | None:
    """The longest sequence the model's config declares (``max_position_embeddings``)."""
    config = getattr(module, "config", None)
    value = getattr(config, "max_position_embeddings", None) if config is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_positions(module: nn.Module, label: str, longest: int, allow_longer: bool) -> None:
    limit = max_positions(module)
    if limit is None or longest <= limit or allow_longer:
        return
    raise ModelInputError(
        f"{label}: {longest} tokens is beyond the model's max_position_embeddings={limit}: "
        "it was not trained for that context (learned positions have no row for it, rotary "
        f"ones were not fitted to it). Use a context <= {limit}, raise it with --arch "
        f"max_position_embeddings=N, or pass --allow-longer (allow_longer=True) to count it "
        "anyway."
    )


@contextmanager
def _quiet() -> Iterator[None]:
    # transformers warns about deprecated argument names and config values on every call.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _forward(module: nn.Module, label: str, phase: str, **kwargs: Any) -> Any:
    try:
        return module(**kwargs)
    except ModelInputError:
        raise
    except Exception as exc:
        shapes = ", ".join(
            f"{k}={tuple(v.shape)}" for k, v in kwargs.items() if isinstance(v, torch.Tensor)
        )
        raise ModelForwardError(
            f"{label}: the model's forward raised {type(exc).__name__}: {exc} during the "
            f"{phase} on meta tensors ({shapes}). Either this is the model's own error (its "
            "forward on the CPU with the same config raises too), or the forward reads tensor "
            "values (.item(), data-dependent shapes), which meta tensors do not have: "
            "profile_llm needs a forward that runs on shapes alone."
        ) from exc


def _cache_after(output: Any, given: Any) -> Any:
    """The cache after the decode step: the one returned, else the one given (updated in place)."""
    for name in ("cache", "past_key_values"):
        found = getattr(output, name, None)
        if found is not None:
            return found
    if isinstance(output, (tuple, list)) and len(output) > 1 and output[1] is not None:
        return output[1]
    return given


# -- weights ---------------------------------------------------------------------------------


def _weight_bytes(module: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())  # tied: once


def _active_weight_bytes(module: nn.Module, capture: Capture) -> tuple[int, bool]:
    """Bytes of the parameters the decode step read; a grouped experts weight only in part.

    An embedding table counts the rows the step looks up. A parameter read through views (a
    transposed expert stack) is found through the views' producers. ``aten._grouped_mm`` over a
    3-D weight of G experts with R routed rows reads at most min(G, R) experts (R = tokens x
    experts per token; at batch 1 they are distinct).
    """
    params = dict(module.named_parameters())
    carried: dict[int, set[str]] = {}  # view op -> the parameters it is a view of
    share: dict[str, tuple[int, int]] = {}  # name -> (parts read, parts): experts, rows
    for op in capture.ops:
        names = set(op.params).union(*(carried.get(src, ()) for src in op.input_producers))
        if op.is_view:
            carried[op.index] = names
            continue
        for n in names & params.keys():
            part = _part_read(op, params[n])
            old = share.get(n)
            if old is None or part[0] * old[1] > old[0] * part[1]:
                share[n] = part
    total = sum(params[n].nbytes // of * read for n, (read, of) in share.items())
    grouped = any(of > 1 and params[n].ndim == 3 for n, (_, of) in share.items())
    return total, grouped


def _part_read(op: OpRecord, p: torch.Tensor) -> tuple[int, int]:
    """(parts read, parts) of parameter ``p`` by ``op``: experts, embedding rows, else all."""
    tokens = op.inputs[0].shape if op.inputs else ()
    if "_grouped_mm" in op.op and p.ndim == 3 and len(tokens) == 2:
        return min(int(p.shape[0]), int(tokens[0])), int(p.shape[0])
    if op.op.startswith("aten.embedding") and p.ndim == 2 and len(op.inputs) > 1:
        looked_up = prod(op.inputs[1].shape)  # one row per token id
        return min(int(p.shape[0]), looked_up), int(p.shape[0])
    return 1, 1
