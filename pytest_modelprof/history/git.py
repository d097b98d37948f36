"""Reading a repository's history: one ``git log`` over the baseline folders, one
``git cat-file --batch`` for every blob it names. Standard library only, no torch.

Paths are given to git as literal pathspecs (``--literal-pathspecs``): baseline file names
contain ``[`` and ``]``, which git would otherwise read as a glob.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pytest_modelprof.errors import ModelprofError

__all__ = [
    "GitError",
    "Repo",
    "Commit",
    "LogEntry",
    "find_repo",
    "commits",
    "read_log",
    "read_blobs",
    "list_tree",
]

_NULL = "0" * 40


class GitError(ModelprofError):
    """git is missing, a path is not in a repository, a REF is unknown: says what to do."""


@dataclass(frozen=True)
class Commit:
    """One commit as the history shows it."""

    hash: str
    date: str  # committer date, UTC, ISO 8601 ("2026-11-25T17:38:13Z")
    subject: str

    @property
    def short(self) -> str:
        return self.hash[:8]


@dataclass(frozen=True)
class Change:
    """One file's change in one commit (``git log --raw``): status A, M, D, R (or C, T)."""

    status: str
    path: str
    blob: str  # the new blob; the null id for a deletion
    old_path: str | None = None  # the source of a rename or copy


@dataclass(frozen=True)
class LogEntry:
    commit: Commit
    changes: tuple[Change, ...]


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never the user's pager, editor prompts or a locale that translates messages we parse.
    env.update({"GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    return env


def run_git(
    cwd: Path, *args: str, check: bool = True, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``git -C cwd args`` with output captured; a missing git is a :class:`GitError`."""
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, input=input, env=_git_env(),
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH); install git to read the "
                       "baselines' history") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(args[:2])} failed: {message[-1] if message else '?'}")
    return done


@dataclass(frozen=True)
class Repo:
    """A work tree's top folder."""

    root: Path

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        """The output of ``git args`` run at the top of the work tree."""
        return run_git(self.root, "--literal-pathspecs", *args, input=input).stdout

    def resolve(self, ref: str) -> str:
        """The full hash of the commit ``ref`` names; an unknown ref says so."""
        done = run_git(self.root, "rev-parse", "--verify", "--quiet", "--end-of-options",
                       f"{ref}^{{commit}}", check=False)
        if done.returncode != 0 or not done.stdout.strip():
            raise GitError(f"unknown REF {ref!r}: no commit of {self.root} has that name (use a "
                           f"branch, a tag or a commit hash; `git log --oneline` lists them)")
        return done.stdout.decode().strip()

    def is_shallow(self) -> bool:
        return self.git("rev-parse", "--is-shallow-repository").strip() == b"true"

    def relative(self, path: Path) -> str:
        """``path`` relative to the top of the work tree, with ``/`` (``""`` for the top)."""
        rel = path.resolve().relative_to(self.root)
        return rel.as_posix() if rel.parts else ""


def find_repo(paths: Sequence[Path]) -> Repo:
    """The one work tree that holds every path (a path need not exist: it may be history)."""
    roots: dict[Path, Path] = {}
    for path in paths:
        probe = path.resolve()
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if probe.is_file():
            probe = probe.parent
        done = run_git(probe, "rev-parse", "--show-toplevel", check=False)
        if done.returncode != 0:
            raise GitError(f"{path} is not inside a git repository: history and bisect read "
                           f"the committed versions of the baselines, so run them on a clone "
                           f"(or cd into one)")
        roots[Path(done.stdout.decode().strip()).resolve()] = path
    if len(roots) > 1:
        listing = "; ".join(f"{p} in {r}" for r, p in roots.items())
        raise GitError(f"the paths lie in {len(roots)} repositories ({listing}); give paths "
                       f"of one repository")
    (root,) = roots
    return Repo(root)


def _date(timestamp: str) -> str:
    return datetime.fromtimestamp(int(timestamp), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_log(repo: Repo, pathspecs: Sequence[str], *, since: str | None = None,
             head: str = "HEAD") -> list[LogEntry]:
    """Every first-parent commit that changed a file under ``pathspecs``, oldest first, with
    its changes and their blob ids (renames detected). ``since``: only commits after it."""
    rev = f"{since}..{head}" if since else head
    raw = repo.git(
        # --no-color, --no-show-signature: a user's log config must not reach the parser.
        "log", "--no-color", "--no-show-signature", "--reverse", "--first-parent",
        "--diff-merges=first-parent", "-M", "--raw", "--no-abbrev", "-z",
        "--format=%x1e%H%x1f%ct%x1f%s", rev, "--", *(pathspecs or ["."]),
    )
    return parse_log(raw)


def commits(repo: Repo, *revs: str) -> list[Commit]:
    """The commits ``git log revs`` names (``-1 HASH``, ``A..B`` with options), as given."""
    raw = repo.git("log", "--no-color", "--no-show-signature", "--no-patch", "-z",
                   "--format=%x1e%H%x1f%ct%x1f%s", *revs)
    return [e.commit for e in parse_log(raw)]


def parse_log(raw: bytes) -> list[LogEntry]:
    """Parse the output of :func:`read_log`'s ``git log`` (records split by ``\\x1e``)."""
    entries: list[LogEntry] = []
    for record in raw.split(b"\x1e")[1:]:
        header, _, body = record.partition(b"\0")
        commit_hash, timestamp, subject = header.decode("utf-8", "replace").split("\x1f", 2)
        tokens = body.lstrip(b"\n").split(b"\0")
        changes: list[Change] = []
        i = 0
        while i < len(tokens):
            meta = tokens[i].decode()
            if not meta.startswith(":"):
                i += 1
                continue
            _, _, _, blob, status = meta[1:].split(" ")
            kind = status[0]
            if kind in "RC":
                old, new = tokens[i + 1].decode("utf-8", "surrogateescape"), tokens[i + 2].decode(
                    "utf-8", "surrogateescape")
                changes.append(Change(kind, new, blob, old))
                i += 3
            else:
                path = tokens[i + 1].decode("utf-8", "surrogateescape")
                changes.append(Change(kind, path, _NULL if kind == "D" else blob))
                i += 2
        entries.append(LogEntry(Commit(commit_hash, _date(timestamp), subject), tuple(changes)))
    return entries


def list_tree(repo: Repo, ref: str, pathspecs: Sequence[str]) -> dict[str, str]:
    """path -> blob id of every file under ``pathspecs`` at ``ref``."""
    raw = repo.git("ls-tree", "-r", "-z", "--full-tree", ref, "--", *(pathspecs or ["."]))
    out: dict[str, str] = {}
    for line in raw.split(b"\0"):
        if not line:
            continue
        meta, _, path = line.partition(b"\t")
        _, kind, blob = meta.decode().split(" ")
        if kind == "blob":
            out[path.decode("utf-8", "surrogateescape")] = blob
    return out


def read_blobs(repo: Repo, blobs: Iterable[str]) -> dict[str, bytes]:
    """The content of every blob, from one ``git cat-file --batch`` process. A writer thread
    feeds the ids while this thread reads, so neither pipe can fill up and stall the other."""
    wanted = sorted(set(blobs) - {_NULL})
    if not wanted:
        return {}
    proc = subprocess.Popen(
        ["git", "-C", str(repo.root), "cat-file", "--batch"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write("".join(f"{b}\n" for b in wanted).encode())
        finally:
            proc.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out: dict[str, bytes] = {}
    try:
        for _ in wanted:
            header = proc.stdout.readline().decode().split()
            if len(header) < 3:  # "<id> missing": a shallow clone lacks it
                continue
            size = int(header[2])
            out[header[0]] = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after the content
    finally:
        writer.join()
        proc.stdout.close()
        proc.wait()
    return out
