"""Suite-wide set-up."""

from __future__ import annotations

from collections.abc import Callable

from _pytest import pytester as _pytester

# Libraries an in-process pytester run may import first. The run restores ``sys.modules``
# afterwards, and a library dropped that way is imported a second time by a later test: torch's
# ``_inductor_test`` library then registers twice and raises, and transformers' classes exist in
# two copies (``LlamaForCausalLM(config)`` refused its own ``LlamaConfig`` in .ci/run). Kept
# modules are never re-imported; our own package is imported by the outer session already.
_KEEP = frozenset(
    {"torch", "torchvision", "transformers", "timm", "ultralytics", "fvcore", "numpy"}
)


class _KeepLibraries(_pytester.SysModulesSnapshot):
    """pytester's snapshot, keeping the heavy libraries an inner run imported."""

    def __init__(self, preserve: Callable[[str], bool] | None = None) -> None:
        def keep(name: str) -> bool:
            return name.partition(".")[0] in _KEEP or (preserve is not None and preserve(name))

        super().__init__(preserve=keep)


_pytester.SysModulesSnapshot = _KeepLibraries  # type: ignore[misc]
