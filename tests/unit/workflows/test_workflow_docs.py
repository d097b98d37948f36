"""The documentation's "Reports and CI" page: its copy-paste workflows are the examples heading the
reusable workflows, word for word, and each one is a valid workflow that calls an existing
workflow correctly."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

from workflow_support import REPO, WORKFLOW_DIR, inputs, workflow  # noqa: E402

DOC = REPO / "docs" / "reports-ci.md"  # the GitHub Actions section
OURS = "pytest-modelprof/pytest-modelprof/.github/workflows/"


def _from_workflows() -> dict[tuple[str, str], str]:
    """``# Example: TITLE (...)`` blocks in the reusable workflows' header comments."""
    found = {}
    for path in sorted(WORKFLOW_DIR.glob("modelprof-*.yml")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            head = re.match(r"# Example: (.+?) \(", line)
            if not head:
                continue
            body = []
            for more in lines[i + 1:]:
                if more == "#":
                    body.append("")
                elif more.startswith("#   "):
                    body.append(more[4:])
                else:
                    break
            found[(path.name, head.group(1))] = "\n".join(body).strip("\n") + "\n"
    return found


def _from_doc() -> dict[tuple[str, str], str]:
    text = DOC.read_text()
    blocks = re.findall(r"<!-- example: (\S+) / (.+?) -->\n```yaml\n(.*?)```", text, re.S)
    return {(name, title): body for name, title, body in blocks}


def test_the_doc_shows_the_examples_of_the_workflow_files_exactly() -> None:
    ours = _from_workflows()
    assert set(ours) == {
        ("modelprof-gate.yml", "cost gate on pull requests"),
        ("modelprof-gate.yml", "sharded cost gate"),
        ("modelprof-comment.yml", "the cost report as a pull-request comment"),
        ("modelprof-update-baselines.yml", "baseline update by hand"),
    }
    assert _from_doc() == ours


def _load(text: str) -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(text)
    data["on"] = data.pop(True)
    return data


@pytest.mark.parametrize("key", sorted(_from_workflows()), ids=lambda k: k[1])
def test_each_example_calls_its_workflow_correctly(key: tuple[str, str]) -> None:
    name, _ = key
    example = _load(_from_workflows()[key])
    assert example["permissions"] == {}
    (job,) = example["jobs"].values()
    target, _, ref = job["uses"].partition("@")
    assert target == OURS + name and ref
    assert set(job.get("with", {})) <= set(inputs(name))
    # The job grants at least what each job of the called workflow asks for.
    levels = {"none": 0, "read": 1, "write": 2}
    for called_name, called in workflow(name)["jobs"].items():
        for scope, level in called.get("permissions", {}).items():
            assert levels[job["permissions"].get(scope, "none")] >= levels[level], called_name
    if name == "modelprof-comment.yml":
        assert example["on"]["workflow_run"]["workflows"] == ["cost gate"]


def test_the_examples_pass_githubs_schema_and_zizmor(tmp_path: Path) -> None:
    pytest.importorskip("check_jsonschema")
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    files = []
    for (name, title), text in _from_workflows().items():
        files.append(folder / f"{name[:-4]}-{title.replace(' ', '-')}.yml")
        files[-1].write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         *map(str, files)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    zizmor = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    if zizmor is None:
        pytest.skip("zizmor is not installed (it is in the dev extra)")
    # zizmor's default policy, as a user's project runs it: no zizmor.yml of ours (our
    # workflows are pinned by commit SHA, `@<sha> # v0.1.0`, as the policy asks).
    done = subprocess.run([zizmor, "--offline", "--no-config", "--min-severity", "medium",
                           str(folder)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_examples_pin_our_workflows_by_commit() -> None:
    for text in _from_workflows().values():
        for line in text.splitlines():
            if OURS in line:
                assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), line
