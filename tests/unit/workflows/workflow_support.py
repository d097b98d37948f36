"""Helpers for the workflow tests: read the workflows, and run a step's script here.

A step runs as GitHub runs it: its ``run`` text as a bash script (``bash -e``) or, for a step
with ``shell: python3 {0}``, as a Python file; its ``env`` given by the test, with the venv's
``python``/``modelprof`` first on ``PATH`` and no ``GITHUB_*`` variable from outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
WORKFLOW_DIR = REPO / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def load(path: Path) -> dict[str, Any]:
    """A workflow file as a dict, with ``on`` as a string key (YAML 1.1 reads it as True)."""
    data: dict[Any, Any] = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def workflow(name: str) -> dict[str, Any]:
    return load(WORKFLOW_DIR / name)


def steps(wf: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in wf["jobs"].values() for s in job.get("steps", [])]


def step(name: str, step_id: str, job: str | None = None) -> dict[str, Any]:
    """The step with ``id: step_id`` in workflow ``name`` (in ``job`` if given)."""
    wf = workflow(name)
    jobs = [wf["jobs"][job]] if job else list(wf["jobs"].values())
    found: list[dict[str, Any]] = [
        s for j in jobs for s in j.get("steps", []) if s.get("id") == step_id]
    assert found, f"{name}: no step with id {step_id}"
    return found[0]


def inputs(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = workflow(name)["on"]["workflow_call"]["inputs"]
    return spec


def base_env(extra_path: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    path = [str(Path(sys.executable).parent), env.get("PATH", "")]
    if extra_path is not None:
        path.insert(0, str(extra_path))
    env["PATH"] = os.pathsep.join(path)
    # This worktree's package, whatever the venv's editable install points at.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def run_step(s: dict[str, Any], cwd: Path, env: dict[str, str],
             extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run one step's script in ``cwd`` with ``env`` over :func:`base_env`."""
    full = {**base_env(extra_path), **env}
    if s.get("shell") == "python3 {0}":
        script = cwd / ".step.py"
        script.write_text(s["run"])
        try:
            return subprocess.run([sys.executable, str(script)], cwd=cwd, env=full,
                                  capture_output=True, text=True, timeout=300, check=False)
        finally:
            script.unlink()
    return subprocess.run(["bash", "-e", "-c", s["run"]], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=300, check=False)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as a dict (single-line values)."""
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


class FakeGitHub:
    """The few REST endpoints the comment step calls, on 127.0.0.1, with state in memory."""

    def __init__(self, repo: str, pulls: list[dict[str, Any]],
                 artifacts: list[dict[str, Any]]) -> None:
        self.repo = repo
        self.pulls = pulls
        self.artifacts = artifacts
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._next_id = 100

    def add_comment(self, number: int, login: str, body: str) -> int:
        self._next_id += 1
        self.comments.setdefault(number, []).append(
            {"id": self._next_id, "user": {"login": login}, "body": body})
        return self._next_id

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        from urllib.parse import parse_qs, urlsplit

        self.requests.append((method, path, body))
        url = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        prefix = f"/repos/{self.repo}"
        if not url.path.startswith(prefix):
            return 404, {"message": "Not Found"}
        rest = url.path[len(prefix):]
        if method == "GET" and rest == "/pulls":
            owner, _, branch = query["head"].partition(":")
            return 200, [p for p in self.pulls if query.get("state") == "open"
                         and p["head"]["owner"] == owner and p["head"]["ref"] == branch]
        if method == "GET" and rest.startswith("/actions/runs/") and rest.endswith("/artifacts"):
            run_id = int(rest.split("/")[3])
            arts = [a for a in self.artifacts
                    if a["run_id"] == run_id and a["name"] == query.get("name", a["name"])]
            return 200, {"total_count": len(arts), "artifacts": arts}
        parts = rest.split("/")
        if rest.startswith("/issues/comments/") and method == "PATCH":
            cid = int(parts[3])
            for comments in self.comments.values():
                for c in comments:
                    if c["id"] == cid:
                        c["body"] = body["body"]
                        return 200, c
            return 404, {"message": "Not Found"}
        if rest.startswith("/issues/") and rest.endswith("/comments"):
            number = int(parts[2])
            if method == "GET":
                page, per = int(query.get("page", 1)), int(query.get("per_page", 30))
                every = self.comments.get(number, [])
                return 200, every[(page - 1) * per: page * per]
            if method == "POST":
                cid = self.add_comment(number, "github-actions[bot]", body["body"])
                return 201, self.comments[number][-1] | {"id": cid}
        return 404, {"message": "Not Found"}


@contextmanager
def serve(api: FakeGitHub) -> Iterator[str]:
    """Serve ``api`` on a free loopback port; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            assert self.headers["Authorization"] == "Bearer test-token"
            status, payload = api.handle(self.command, self.path,
                                         json.loads(raw) if raw else None)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _reply

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
