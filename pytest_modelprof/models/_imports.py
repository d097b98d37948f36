"""Import paths as a model source: ``"package.module:factory"``."""

from __future__ import annotations

import importlib
import re
from typing import Any, Final

from pytest_modelprof.errors import ModelNotFoundError, did_you_mean
from pytest_modelprof.models._spec import ModelSpec

__all__ = ["is_import_path", "import_spec"]

# "pkg.mod:factory" or "pkg.mod:Outer.factory"; a Windows drive ("C:\\x") does not match.
_IMPORT_PATH: Final = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_import_path(name: str) -> bool:
    """Whether ``name`` has the ``module:attribute`` form."""
    return bool(_IMPORT_PATH.match(name))


def import_spec(name: str) -> ModelSpec:
    """Import ``module:attr`` now, so a typo fails at resolve time, naming the missing piece.

    The target is a factory (callable returning an ``nn.Module``), an ``nn.Module`` subclass,
    or a ``ModelSpec`` (whose input shape and kind are kept).
    """
    module_name, _, attr_path = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only "not found" when the missing module is the one named (or a parent of it);
        # otherwise the user's module imported fine but one of *its* imports failed.
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            raise ModelNotFoundError(
                f"model {name!r}: cannot import module {module_name!r} ({exc}); check the spelling "
                "and that its directory is on sys.path (e.g. pytest's `pythonpath` ini option)"
            ) from exc
        raise
    target: Any = module
    for i, part in enumerate(attr_path.split(".")):
        if not hasattr(target, part):
            where = ".".join([module_name, *attr_path.split(".")[:i]])
            hint = did_you_mean(part, [a for a in dir(target) if not a.startswith("_")], n=3)
            raise ModelNotFoundError(f"model {name!r}: {where!r} has no attribute {part!r}{hint}")
        target = getattr(target, part)
    if isinstance(target, ModelSpec):
        return ModelSpec(
            name=name,
            source="import",
            builder=target.builder,
            default_input_shape=target.default_input_shape,
            input_kind=target.input_kind,
            group="import",
            default_arch_kwargs=target.default_arch_kwargs,
            shape_kwargs=target.shape_kwargs,
            vocab_size=target.vocab_size,
            built_inputs=target.built_inputs,
            image_tokens=target.image_tokens,
        )
    if not callable(target):
        raise ModelNotFoundError(
            f"model {name!r}: {attr_path!r} is a {type(target).__name__}, not a factory; "
            "point at a function returning an nn.Module or at an nn.Module class"
        )
    return ModelSpec(name=name, source="import", builder=target, group="import")
