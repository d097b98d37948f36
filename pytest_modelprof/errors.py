"""Exceptions raised by pytest-modelprof. Every message names the culprit and says what to do."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ModelprofError",
    "ModelNotFoundError",
    "DuplicateModelError",
    "ModelBuildError",
    "ModelInputError",
    "ModelForwardError",
    "UncountedOpsError",
    "BaselineError",
    "SettingsError",
    "ReportError",
    "FormulaError",
    "MeasurementError",
    "UsageError",
    "GlobalStateWarning",
    "clause",
    "close_matches",
    "did_you_mean",
    "suggestion",
]


class ModelprofError(Exception):
    """Base class of every error this package raises on purpose."""


class ModelNotFoundError(ModelprofError, LookupError):
    """A model name that no registry source knows."""


class DuplicateModelError(ModelprofError, ValueError):
    """A model name registered twice, or one that shadows a built-in name."""


class ModelBuildError(ModelprofError):
    """A model that could not be constructed."""


class ModelInputError(ModelprofError, ValueError):
    """An input the model rejected; names the model, the shapes and the refusing layer."""


class ModelForwardError(ModelprofError):
    """The model's own forward raised; names the exception, the layer and the source line."""


class UncountedOpsError(ModelprofError):
    """Raised under ``fail_on_uncounted=True`` when ops without a cost formula ran."""


class BaselineError(ModelprofError):
    """A baseline file that is missing, corrupt or from a newer schema."""


class SettingsError(ModelprofError, ValueError):
    """A bad setting; the message names where it came from (marker, CLI, ini)."""


class ReportError(ModelprofError):
    """A results file that cannot be read, merged or rendered; names the file and the field."""


class FormulaError(ModelprofError):
    """A cost formula that failed on an op or could not be registered; names whose it is."""


class MeasurementError(ModelprofError, ValueError):
    """Measurements that cannot be summarised or compared (too few rounds or points, timings of
    another calibration); says what is missing or differs."""


class UsageError(ModelprofError, TypeError):
    """A function of the API called with an argument of the wrong kind or an unknown keyword."""


class GlobalStateWarning(UserWarning):
    """A forward left stand-in tensors (meta or fake) in module-level or class state."""


def clause(text: object) -> str:
    """``str(text)`` without its closing full stop, for a message that closes the sentence
    itself (an exception's text may end with one or not; an ellipsis is kept)."""
    words = str(text).strip()
    return words[:-1] if words.endswith(".") and not words.endswith("..") else words


def close_matches(
    word: str, choices: Iterable[str], *, n: int = 2, cutoff: float = 0.6
) -> list[str]:
    """The at most ``n`` of ``choices`` nearest to ``word``, nearest first (the one matcher)."""
    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)


def suggestion(options: Iterable[str]) -> str:
    """``"; did you mean 'a', 'b' or 'c'?"`` for the options a caller picked, else ``""``."""
    quoted = [repr(str(o)) for o in options]
    if not quoted:
        return ""
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f"; did you mean {listed}?"


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 2, cutoff: float = 0.6) -> str:
    """``"; did you mean 'max_flops_delta'?"`` for a near miss of ``word``, else ``""``.

    The one spelling of a suggestion in every message: it follows the sentence that names the
    culprit, and the caller ends the message with what to do.
    """
    return suggestion(close_matches(word, choices, n=n, cutoff=cutoff))
