"""Model names read from the installed libraries' source files, without importing them.

Importing torchvision, timm or transformers costs seconds (a minute on a busy runner), and a
misspelled name needs none of it: the names are plain text in their sources. torchvision and
timm register every builder with a ``@register_model`` decorator on a ``def``; transformers keeps
its model types in the ``MODEL_MAPPING_NAMES`` literal of ``modeling_auto.py``. Each reader
returns ``None`` when the sources are not there as files (a zipped install) or hold no name, and
the caller then imports the library as before. Tests hold each list equal to the library's own.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Final

__all__ = ["hf_scan", "timm_scan", "torchvision_scan"]

#: ``@register_model`` (timm) or ``@register_model()`` / ``@register_model(name="x")``
#: (torchvision) on a line of its own; the function is the next ``def`` at a line's start.
_DECORATOR: Final = re.compile(
    r"^@register_model(?:\(\s*(?:name\s*=\s*)?(?:[\"'](?P<name>[\w.-]+)[\"'])?\s*\))?[ \t]*$",
    re.MULTILINE,
)
_DEF: Final = re.compile(r"^def (\w+)", re.MULTILINE)
#: timm's ``register_model_deprecations(__name__, {'old': 'new', ...})``: the old names build.
_DEPRECATIONS: Final = re.compile(
    r"register_model_deprecations\(\s*__name__\s*,\s*\{(.*?)\}", re.DOTALL
)
_KEY: Final = re.compile(r"[\"']([\w.-]+)[\"']\s*:")
#: ``MODEL_MAPPING_NAMES = OrderedDict(`` up to the ``)`` that closes it at the line's start.
_HF_MAPPING: Final = re.compile(r"^MODEL_MAPPING_NAMES = OrderedDict\((.*?)^\)", re.M | re.S)
_HF_ENTRY: Final = re.compile(r"^\s*\(\s*\"([^\"]+)\"\s*,", re.MULTILINE)

#: torchvision's sub-packages whose builders ``list_models(module=...)`` groups apart.
_TORCHVISION_GROUPS: Final = ("detection", "segmentation", "video", "optical_flow", "quantization")


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if folder.is_dir() else None


def _registered(source: str) -> list[str]:
    """The names ``@register_model`` gives in one module's source."""
    names = []
    for m in _DECORATOR.finditer(source):
        function = _DEF.search(source, m.end())
        if m.group("name") or function:
            names.append(m.group("name") or function.group(1))  # type: ignore[union-attr]
    return names


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@functools.cache
def torchvision_scan() -> dict[str, tuple[str, ...]] | None:
    """Builder names by group (``classification`` for ``torchvision/models/*.py``, else the
    sub-package), as ``torchvision.models.list_models(module=...)`` gives them."""
    root = _package_dir("torchvision")
    models = root / "models" if root is not None else None
    if models is None or not models.is_dir():
        return None
    groups: dict[str, tuple[str, ...]] = {}
    for group in ("classification", *_TORCHVISION_GROUPS):
        folder = models if group == "classification" else models / group
        names = [
            n
            for p in sorted(folder.glob("*.py"))
            if "register_model" in (text := _read(p))
            for n in _registered(text)
        ]
        groups[group] = tuple(sorted(names))
    return groups if any(groups.values()) else None


@functools.cache
def timm_scan() -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(listed, accepted)``: the names ``timm.list_models()`` gives, and every name
    ``timm.is_model`` accepts (the listed ones and the deprecated aliases)."""
    root = _package_dir("timm")
    models = root / "models" if root is not None else None
    if models is None or not models.is_dir():
        return None
    listed: set[str] = set()
    deprecated: set[str] = set()
    for path in sorted(models.glob("*.py")):
        text = _read(path)
        if "register_model" not in text:
            continue
        listed.update(_registered(text))
        for block in _DEPRECATIONS.findall(text):
            deprecated.update(_KEY.findall(block))
    if not listed:
        return None
    return tuple(sorted(listed - deprecated)), tuple(sorted(listed | deprecated))


@functools.cache
def hf_scan() -> tuple[str, ...] | None:
    """The keys of transformers' ``MODEL_MAPPING_NAMES`` (model types with a base model)."""
    root = _package_dir("transformers")
    path = root / "models" / "auto" / "modeling_auto.py" if root is not None else None
    if path is None or not path.is_file():
        return None
    block = _HF_MAPPING.search(_read(path))
    names = _HF_ENTRY.findall(block.group(1)) if block else []
    return tuple(sorted(set(names))) or None
