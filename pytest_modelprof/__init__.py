"""pytest-modelprof: exact cost profiles of PyTorch models and a pytest gate on them.

Importing this package does not import torch; the heavy parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "profile_model",
    "ModelProfile",
    "LayerStats",
    "Machine",
    "MACHINES",
    "register_model",
    "register_formula",
    "OpCost",
    "__version__",
]

__version__ = "0.1.0"

if TYPE_CHECKING:
    from pytest_modelprof.costs import OpCost
    from pytest_modelprof.costs.user import register_formula
    from pytest_modelprof.machines import MACHINES, Machine
    from pytest_modelprof.models import register_model
    from pytest_modelprof.profile import profile_model
    from pytest_modelprof.schema import LayerStats, ModelProfile

_LAZY = {
    "profile_model": "pytest_modelprof.profile",
    "ModelProfile": "pytest_modelprof.schema",
    "LayerStats": "pytest_modelprof.schema",
    "Machine": "pytest_modelprof.machines",
    "MACHINES": "pytest_modelprof.machines",
    "register_model": "pytest_modelprof.models",
    "register_formula": "pytest_modelprof.costs.user",
    "OpCost": "pytest_modelprof.costs",
}


def __getattr__(name: str) -> Any:
    # Lazy so that `import pytest_modelprof` (e.g. by the pytest plugin) never pulls in torch.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_modelprof' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
