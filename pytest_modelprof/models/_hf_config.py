"""A transformers config built with ``--arch`` overrides as constructor arguments.

Setting fields on a built config leaves every field its constructor derived (Falcon's
``num_kv_heads``, LLaMA's ``head_dim``) at the old value, so the overrides go to the config
class itself. Accepted: every field the class declares or stores, and every ``config.X`` the
model's own code reads (Qwen2 reads ``head_dim`` without declaring it). Sub-configs
(``text_config``, ``vision_config``) take dicts, merged over a local folder's values.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Mapping
from typing import Any, Final

from pytest_modelprof.errors import ModelBuildError, did_you_mean
from pytest_modelprof.models._hf_inputs import CLASS_KEY

__all__ = ["build_config"]

_READS = re.compile(r"config\.(\w+)|getattr\(\s*(?:self\.)?\w*config\s*,\s*[\"'](\w+)[\"']")
# Fields users reach for that an architecture spells differently.
_SPELLED: Final = {"intermediate_size": ("mlp_ratio", "the MLP width is hidden_size * mlp_ratio")}


@functools.cache
def _read_by(module_name: str) -> frozenset[str]:
    """Every ``config.X`` / ``getattr(config, "X")`` in the model's own module."""
    module = sys.modules.get(module_name)
    try:
        text = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        text = ""
    return frozenset(a or b for a, b in _READS.findall(text))


def _known(config_cls: Any, default: Any, model_cls: Any) -> set[str]:
    known = set(inspect.signature(config_cls.__init__).parameters) - {"self", "kwargs"}
    known |= set(default.to_dict()) | set(getattr(config_cls, "attribute_map", {}))
    # Properties (Falcon's head_dim) but not methods (to_dict).
    known |= {
        k
        for k in dir(config_cls)
        if not k.startswith("_") and not callable(getattr(config_cls, k, None))
    }
    if model_cls is not None:
        known |= _read_by(model_cls.__module__)
    return known


def build_config(
    name: str,
    model_type: str,
    raw: Mapping[str, Any] | None,
    overrides: Mapping[str, Any],
    model_cls: Any,
) -> Any:
    """The config of ``model_type`` (or a folder's ``raw`` dict) built with ``overrides``."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config_cls = CONFIG_MAPPING[model_type]
    default = AutoConfig.for_model(model_type) if raw is None else config_cls.from_dict(dict(raw))
    if not overrides:
        return default
    known = _known(config_cls, default, model_cls)
    unknown = [k for k in overrides if k not in known]
    if unknown:
        key = unknown[0]
        spelled = _SPELLED.get(key)
        if spelled is not None and spelled[0] in known:
            hint = f"; {spelled[1]}: set {spelled[0]}"
        else:
            hint = did_you_mean(key, sorted(known), n=5)
        raise ModelBuildError(
            f"model {name!r}: {config_cls.__name__} has no field {key!r} and the model never "
            f"reads one{hint} (--arch KEY=VALUE sets config fields; {CLASS_KEY}=CLASS picks "
            "the model class)"
        )
    fields = dict(raw or {})
    for key, value in overrides.items():
        old = fields.get(key)
        # A sub-config given as a dict keeps the folder's other values of that sub-config.
        fields[key] = (
            {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
        )
    fields.pop("model_type", None)
    try:
        return config_cls(**fields)
    except (TypeError, ValueError, AttributeError) as exc:
        derived = [k for k in overrides if isinstance(getattr(config_cls, k, None), property)]
        hint = (
            f"; {derived[0]} is derived from other fields (a read-only property): set those"
            if derived
            else ""
        )
        raise ModelBuildError(
            f"model {name!r}: {config_cls.__name__} refused the fields {dict(overrides)}: "
            f"{exc}{hint}"
        ) from exc
