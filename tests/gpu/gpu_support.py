"""What the GPU tests share: the skip marker and a recorder for the figures they measure."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import torch

#: Module-level ``pytestmark`` of every GPU test file: skipped cleanly without CUDA.
GPU = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="needs a CUDA device (torch.cuda.is_available() is False)",
    ),
]


def record(test: str, **values: Any) -> None:
    """Append one measurement to ``$MODELPROF_GPU_RECORD`` (JSON lines), for BENCHMARKS.md."""
    path = os.environ.get("MODELPROF_GPU_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"test": test, "device": torch.cuda.get_device_name(), **values})
                     + "\n")
