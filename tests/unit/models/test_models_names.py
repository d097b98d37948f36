"""A misspelled name fails before torch, torchvision, timm or transformers is imported, and the
name lists read without importing them are the lists the libraries themselves give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_modelprof
from pytest_modelprof.cli import main

PROJECT = Path(pytest_modelprof.__file__).resolve().parents[1]
HEAVY = ("torch", "torchvision", "timm", "transformers", "ultralytics")

#: Runs the CLI in a fresh interpreter and says which heavy libraries it had imported.
PROBE = """
import json, sys
from pytest_modelprof.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(m for m in {heavy!r} if m in sys.modules)]))
"""


def _fresh(*args: str) -> tuple[int, list[str], str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    return code, imported, done.stderr


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("resnt50", "resnet50"), ("timm:resnt50", "timm:resnet50"), ("hf:lama", "hf:llama")],
)
def test_a_misspelled_name_fails_before_the_heavy_imports(name: str, suggestion: str) -> None:
    code, imported, err = _fresh("profile", name)
    assert code == 2
    assert "unknown" in err and suggestion in err.split("id you mean")[1]
    assert imported == []  # nothing heavy was needed to say so


def test_torchvision_names_read_without_importing_match_its_registry() -> None:
    from pytest_modelprof.models._names import torchvision_scan
    from pytest_modelprof.models._torchvision import registered_names

    assert torchvision_scan() == registered_names()


def test_timm_names_read_without_importing_match_its_registry() -> None:
    import timm
    from timm.models import _registry

    from pytest_modelprof.models._names import timm_scan

    scanned = timm_scan()
    assert scanned is not None
    listed, accepted = scanned
    assert sorted(listed) == sorted(timm.list_models())
    # Deprecated names are not listed, but timm still builds them (with a warning).
    assert set(accepted) == set(_registry._model_entrypoints)


def test_hf_model_types_read_without_importing_match_transformers() -> None:
    from transformers.models.auto import modeling_auto

    from pytest_modelprof.models._names import hf_scan

    assert sorted(hf_scan() or ()) == sorted(modeling_auto.MODEL_MAPPING_NAMES)


def test_list_filter_is_fuzzy_when_no_name_contains_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--filter", "resnt", "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)
    assert "resnet50" in groups["torchvision.classification"]
    assert "timm:resnet50" in groups["timm"]
    assert "vit_b_16" not in groups["torchvision.classification"]
    assert main(["list", "--filter", "resnt"]) == 0
    assert "resnet50" in capsys.readouterr().out.split()


def test_list_filter_stays_a_substring_when_names_contain_it() -> None:
    from pytest_modelprof.models import list_models

    groups = list_models(filter="resnet5")
    assert "resnet50" in groups["torchvision.classification"]
    assert "resnet18" not in groups["torchvision.classification"]  # no fuzzy extras


def test_bench_checks_the_name_first_too() -> None:
    code, imported, err = _fresh("bench", "resnt50")
    assert code == 2 and "resnet50" in err and imported == []
