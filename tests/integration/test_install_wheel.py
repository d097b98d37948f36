"""Adoption as docs/getting-started.md writes it: a user's project, outside this repository, names
pytest-modelprof by a direct reference in its test extra (to a built wheel, offline), installs
itself with ``pip install -e ".[test]"`` and gates a real model with it:
``--modelprof-update-baselines`` writes the baseline, the next run passes."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "scratch"
version = "0"

[project.optional-dependencies]
test = [{requirement!r}]

[tool.setuptools]
py-modules = []

[tool.pytest.ini_options]
addopts = ["--strict-markers", "-p", "no:cacheprovider"]
"""

TESTS = """\
import pytest
import torch


@pytest.mark.profile(model="resnet18", max_flops_delta=0.0)
def test_resnet18_cost():
    pass


@pytest.mark.profile(max_flops_delta=0.05)
def test_my_model(modelprof):
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    assert modelprof(model, input_shape=(4, 16)).total_flops > 0
"""


def _readme_requirement() -> str:
    """The pytest-modelprof requirement of the test extra of docs/getting-started.md."""
    block = re.search(r"```toml\n\[project\.optional-dependencies\]\ntest = \[(.*?)\]",
                      (REPO / "docs" / "getting-started.md").read_text(), re.S)
    assert block, "docs/getting-started.md shows no [project.optional-dependencies] test extra"
    (found,) = [r for r in re.findall(r'"([^"]+)"', block.group(1))
                if r.startswith("pytest-modelprof")]
    return found


def test_the_readme_installs_from_a_source_that_exists() -> None:
    """Not a bare name: pytest-modelprof is on no package index."""
    from packaging.requirements import Requirement

    req = Requirement(_readme_requirement())
    assert req.name == "pytest-modelprof"
    assert req.url and re.fullmatch(
        r"git\+https://github\.com/[\w.-]+/pytest-modelprof@[0-9a-f]{40}", req.url), req.url


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_project_outside_this_repository_gates_with_the_wheel(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(REPO)], check=True, timeout=300)
    (wheel,) = wheels.glob("pytest_modelprof-*.whl")

    # A fresh environment; its dependencies (torch, torchvision, pytest, pydantic, jinja2) come
    # from this venv, read only, through a .pth after its own site-packages, so what the
    # project's install puts there wins. pip never writes to this suite's venv.
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True,
                   timeout=120)
    python = env_dir / "bin" / "python"
    (own,) = env_dir.glob("lib/python*/site-packages")
    (own / "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    # The user's project names pytest-modelprof as the documentation does, by a direct reference
    # (here to the wheel file, offline), and installs itself as the reusable workflows do.
    project = tmp_path / "scratch"
    (project / "tests").mkdir(parents=True)
    assert not project.resolve().is_relative_to(REPO)
    (project / "pyproject.toml").write_text(
        PYPROJECT.format(requirement=f"pytest-modelprof @ {wheel.as_uri()}"))
    (project / "tests" / "test_costs.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith(("GITHUB_", "PYTEST_"))}
    env["PATH"] = os.pathsep.join([str(env_dir / "bin"), "/usr/bin", "/bin"])
    # Offline, and without this machine's pip configuration: a constraints file there (one
    # caps torch) is not the user's, and must not decide what an offline install can resolve.
    subprocess.run([*pip, "--python", str(python), "install", "--no-index",
                    "--no-build-isolation", "--no-compile", "-e", ".[test]"], cwd=project,
                   env={**env, "PIP_CONFIG_FILE": os.devnull}, check=True, timeout=300)

    where = _run([str(python), "-c", "import pytest_modelprof; print(pytest_modelprof.__file__)"],
                 project, env)
    assert Path(where.stdout.strip()).is_relative_to(own), where.stdout + where.stderr

    first = _run([str(python), "-m", "pytest", "-q"], project, env)
    assert first.returncode == 1, first.stdout + first.stderr  # no baselines yet
    assert "--modelprof-update-baselines" in first.stdout
    update = _run([str(python), "-m", "pytest", "-q", "--modelprof-update-baselines"],
                  project, env)
    assert update.returncode == 0, update.stdout + update.stderr
    written = sorted(p.relative_to(project).as_posix() for p in project.rglob("*.json"))
    assert written == ["baselines/tests/test_costs/test_my_model.json",
                       "baselines/tests/test_costs/test_resnet18_cost.json"]
    gated = _run([str(python), "-m", "pytest", "-q"], project, env)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "2 passed" in gated.stdout
    # The console script of the wheel works there too.
    cli = _run([str(env_dir / "bin" / "modelprof"), "--version"], project, env)
    assert cli.returncode == 0 and "0.1.0" in cli.stdout, cli.stdout + cli.stderr


