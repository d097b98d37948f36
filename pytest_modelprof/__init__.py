"""pytest-modelprof: exact cost profiles of PyTorch models and a pytest gate on them.

The public API is the names below (``__all__``), imported from ``pytest_modelprof`` itself; every
module under it is internal and may change without notice. Importing this package does not
import torch; the heavy parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    # Profiles
    "profile_model",
    "ModelProfile",
    "LayerStats",
    "Machine",
    "MACHINES",
    # The pytest fixture's type, for annotations: ``def test_x(modelprof: Modelprof)``
    "Modelprof",
    # Models by name
    "register_model",
    # What an LLM costs to serve
    "profile_llm",
    "LLMCosts",
    # Will it fit?
    "estimate_memory",
    "measure_step_memory",
    "StepOptions",
    "MemoryEstimate",
    # CPU instruction counts
    "InstructionServer",
    "InstructionCounts",
    # History of the baselines
    "read_history",
    "HistoryDocument",
    # Cost formulas and metrics of your own
    "register_formula",
    "OpCost",
    "Metric",
    "Collector",
    "JsonCollector",
    "Exact",
    "Relative",
    "Ignore",
    # Errors: every error raised on purpose is a ModelprofError
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
    "__version__",
]

from pytest_modelprof._version import __version__

if TYPE_CHECKING:
    from pytest_modelprof.baseline.collector import Collector, JsonCollector
    from pytest_modelprof.baseline.metric import Metric
    from pytest_modelprof.baseline.tolerance import Exact, Ignore, Relative
    from pytest_modelprof.costs import OpCost
    from pytest_modelprof.costs.user import register_formula
    from pytest_modelprof.errors import (
        BaselineError,
        DuplicateModelError,
        FormulaError,
        GlobalStateWarning,
        MeasurementError,
        ModelBuildError,
        ModelForwardError,
        ModelInputError,
        ModelNotFoundError,
        ModelprofError,
        ReportError,
        SettingsError,
        UncountedOpsError,
        UsageError,
    )
    from pytest_modelprof.fit import (
        MemoryEstimate,
        StepOptions,
        estimate_memory,
        measure_step_memory,
    )
    from pytest_modelprof.gate.fixture import Modelprof
    from pytest_modelprof.history import HistoryDocument, read_history
    from pytest_modelprof.instructions import InstructionCounts, InstructionServer
    from pytest_modelprof.llm import LLMCosts, profile_llm
    from pytest_modelprof.machines import MACHINES, Machine
    from pytest_modelprof.models import register_model
    from pytest_modelprof.profile import profile_model
    from pytest_modelprof.schema import LayerStats, ModelProfile

_ERRORS = (
    "ModelprofError ModelNotFoundError DuplicateModelError ModelBuildError ModelInputError "
    "ModelForwardError UncountedOpsError BaselineError SettingsError ReportError FormulaError "
    "MeasurementError UsageError GlobalStateWarning"
).split()
#: Where each name lives (the module imported on first use).
_LAZY = {
    "profile_model": "pytest_modelprof.profile",
    "ModelProfile": "pytest_modelprof.schema",
    "LayerStats": "pytest_modelprof.schema",
    "Machine": "pytest_modelprof.machines",
    "MACHINES": "pytest_modelprof.machines",
    "Modelprof": "pytest_modelprof.gate.fixture",
    "register_model": "pytest_modelprof.models",
    "profile_llm": "pytest_modelprof.llm",
    "LLMCosts": "pytest_modelprof.llm",
    "estimate_memory": "pytest_modelprof.fit",
    "measure_step_memory": "pytest_modelprof.fit",
    "StepOptions": "pytest_modelprof.fit",
    "MemoryEstimate": "pytest_modelprof.fit",
    "InstructionServer": "pytest_modelprof.instructions",
    "InstructionCounts": "pytest_modelprof.instructions",
    "read_history": "pytest_modelprof.history",
    "HistoryDocument": "pytest_modelprof.history",
    "register_formula": "pytest_modelprof.costs.user",
    "OpCost": "pytest_modelprof.costs",
    "Metric": "pytest_modelprof.baseline.metric",
    "Collector": "pytest_modelprof.baseline.collector",
    "JsonCollector": "pytest_modelprof.baseline.collector",
    "Exact": "pytest_modelprof.baseline.tolerance",
    "Relative": "pytest_modelprof.baseline.tolerance",
    "Ignore": "pytest_modelprof.baseline.tolerance",
    **dict.fromkeys(_ERRORS, "pytest_modelprof.errors"),
}


def __getattr__(name: str) -> Any:
    # Lazy so that `import pytest_modelprof` (e.g. by the pytest plugin) never pulls in torch.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_modelprof' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
