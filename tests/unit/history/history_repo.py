"""A real git repository in a temporary folder whose commits change committed baselines.

Baselines are written with the document model itself (no torch): each commit sets the figures
of some tests, and the scenario below walks one model through growth, shrinkage, a torch
upgrade, a rename of its test and a schema-v1 first version.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_modelprof.baseline.document import BaselineDocument, BaselineEnvironment
from pytest_modelprof.baseline.renames import METRIC_RENAMES
from pytest_modelprof.baseline.store import baseline_relpath
from pytest_modelprof.schema import TensorSpec

DAY = 86_400
START = 1_793_000_000  # 2026-10-25 UTC: commit i is START + i days


def baseline(test: str, *, flops: int, params: int = 1_000, memory: int = 100_000,
             peak: int = 50_000, torch: str = "2.14.1", model: str = "tiny") -> BaselineDocument:
    return BaselineDocument(
        test=test, model=model, inputs=[TensorSpec(shape=[1, 3, 8, 8], dtype="float32")],
        metrics={"flops": flops, "macs": flops // 2, "params": params, "traffic": memory,
                 "peak_activations": peak, "intensity": round(flops / memory, 6)},
        layers=[], settings={},
        environment=BaselineEnvironment(torch_version=torch, device="cpu", dtype="float32",
                                        capture_mode="meta"),
        uncounted_ops={},
    )


def schema_v1(doc: BaselineDocument) -> str:
    """The file a version-1 plugin wrote: no ``uncounted_ops`` (v2 added it), and the names
    of then (``memory`` for the bytes moved, ...: v3 renamed them)."""
    data: dict[str, Any] = json.loads(doc.to_json())
    data["schema_version"] = 1
    data.pop("uncounted_ops")
    old = {new: old for old, new in METRIC_RENAMES.items()}
    data["metrics"] = {old.get(k, k): v for k, v in data["metrics"].items()}
    for key in ("layers", "op_families"):
        if key in data:
            data[key] = [{("memory" if k == "traffic" else k): v for k, v in row.items()}
                         for row in data[key]]
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def git(root: Path, *args: str, date: int | None = None) -> str:
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout.strip()


@dataclass
class GitRepo:
    root: Path
    commits: list[str] = field(default_factory=list)  # hashes, oldest first
    folder: str = "baselines"

    @classmethod
    def create(cls, root: Path) -> GitRepo:
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.email", "dev@example.com")
        git(root, "config", "user.name", "Dev")
        git(root, "config", "commit.gpgsign", "false")
        return cls(root)

    def path_of(self, test: str) -> Path:
        return self.root / self.folder / baseline_relpath(test)

    def write(self, test: str, doc: BaselineDocument | str) -> None:
        path = self.path_of(test)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc if isinstance(doc, str) else doc.to_json(), encoding="utf-8")

    def commit(self, subject: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", subject, date=START + len(self.commits) * DAY)
        self.commits.append(git(self.root, "rev-parse", "HEAD"))
        return self.commits[-1]


NET = "tests/test_models.py::test_net"
NETWORK = "tests/test_models.py::test_network"
OTHER = "tests/test_models.py::test_other[large]"


def scenario(root: Path) -> GitRepo:
    """13 commits, 12 of which change a baseline (see each subject)."""
    repo = GitRepo.create(root)
    repo.write(NET, schema_v1(baseline(NET, flops=1_000_000)))
    repo.commit("add net (schema v1 baseline)")  # 0
    repo.write(OTHER, baseline(OTHER, flops=2_000_000, model="other"))
    repo.commit("add other")  # 1
    repo.write(NET, baseline(NET, flops=1_300_000))
    repo.commit("grow net by 30%")  # 2
    (root / "README.md").write_text("docs\n")
    repo.commit("docs only")  # 3: no baseline changed
    repo.write(NET, baseline(NET, flops=1_100_000))
    repo.commit("shrink net")  # 4
    repo.write(NET, baseline(NET, flops=1_100_000, memory=104_000, torch="2.15.0"))
    repo.commit("torch 2.15 moves memory")  # 5
    repo.path_of(NET).unlink()
    repo.write(NETWORK, baseline(NETWORK, flops=1_100_000, memory=104_000, torch="2.15.0"))
    repo.commit("rename test_net to test_network")  # 6
    repo.write(NETWORK, baseline(NETWORK, flops=2_200_000, memory=104_000, torch="2.15.0"))
    repo.commit("widen network")  # 7
    repo.write(NETWORK, baseline(NETWORK, flops=2_200_000, params=1_200, memory=104_000,
                                 torch="2.15.0"))
    repo.commit("more params")  # 8
    repo.write(OTHER, baseline(OTHER, flops=2_500_000, model="other"))
    repo.commit("other grows")  # 9
    repo.write(NETWORK, baseline(NETWORK, flops=2_000_000, params=1_200, memory=104_000,
                                 torch="2.15.0"))
    repo.commit("trim network")  # 10
    repo.write(OTHER, baseline(OTHER, flops=2_500_000, model="other", torch="2.15.0"))
    repo.commit("other on torch 2.15")  # 11
    repo.write(NETWORK, baseline(NETWORK, flops=2_000_000, params=1_200, memory=104_000,
                                 peak=60_000, torch="2.15.0"))
    repo.commit("network peak grows")  # 12
    return repo
