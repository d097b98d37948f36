"""``modelprof bisect``: the first commit that made a test's profile cost more."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    Command,
    note,
    parse_tolerance,
    show,
)

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("test", metavar="TEST", help="the test's node id, as you give it to pytest "
                   "from here (tests/test_zoo.py::test_resnet50)")
    p.add_argument("--good", required=True, metavar="REF", help="a commit where the cost was "
                   "right (a tag, branch or hash)")
    p.add_argument("--bad", default="HEAD", metavar="REF",
                   help="a later commit where it is too high (default: HEAD)")

    p.add_argument("--metric", default="flops", metavar="NAME",
                   help="the metric that grew (default: flops): "
                        + ", ".join(m.name for m in BUILTIN_METRICS))
    p.add_argument("--tolerance", type=parse_tolerance, default=0.0, metavar="TOL",
                   help="a commit is bad when the metric is worse than the good commit's by "
                        "more than this: 0 (default, any growth), 0.05 or 5%%")
    p.add_argument("--name", metavar="NAME",
                   help="which profile of a test with several (its marker's name=)")
    p.add_argument("--pytest-args", default="", metavar="ARGS",
                   help="more arguments for each pytest run, one string: '-p no:randomly'")
    p.add_argument("--step-timeout", type=float, default=None, metavar="SECONDS",
                   help="skip a commit whose run takes longer (default: no limit)")


def _run(args: argparse.Namespace) -> int:
    from pytest_modelprof.history.bisect import StepRunner, bisect
    from pytest_modelprof.history.build import pick_metrics
    from pytest_modelprof.history.git import find_repo

    (metric,) = pick_metrics([args.metric])
    repo = find_repo([Path.cwd()])
    runner = StepRunner(repo, args.test, metric, name=args.name, subdir=repo.relative(Path.cwd()),
                        pytest_args=shlex.split(args.pytest_args), timeout=args.step_timeout)
    result = bisect(repo, args.good, args.bad, runner, metric, args.tolerance, log=note)
    good, bad = result.good, result.bad
    assert good.value is not None and bad.value is not None
    lines = [f"good {good.commit.short}: {metric.label} {metric.format(good.value)}",
             f"bad  {bad.commit.short}: {metric.label} {metric.format(bad.value)}"]
    for p in result.skipped:
        lines.append(f"skipped {p.commit.short} {p.commit.subject!r}: {p.skipped}")
    if result.first_bad is None:
        limit = f"more than {args.tolerance * 100:g} %" if args.tolerance else "at all"
        lines.append(f"no regression: {metric.label} at {bad.commit.short} is not worse than at "
                     f"{good.commit.short} {limit}")
        show("\n".join(lines) + "\n")
        return EXIT_FAILED
    first, before = result.first_bad, result.before
    assert first.value is not None and before is not None and before.value is not None
    from pytest_modelprof.history.view import change_of, signed

    delta = first.value - before.value
    change = change_of(before.value, delta / abs(before.value) if before.value else None)
    if result.undecided:
        could = ", ".join(c.short for c in (*result.undecided, first.commit))
        lines.append(f"only skipped commits are left: the first bad commit could be any of "
                     f"{could}")
    else:
        lines.append(f"first bad commit: {first.commit.hash}")
    lines += [
        f"  {first.commit.date[:10]} {first.commit.subject}",
        f"  {metric.label}: {metric.format(before.value)} at {before.commit.short} \u2192 "
        f"{metric.format(first.value)} at {first.commit.short} ({signed(metric, delta)}, "
        f"{change})",
        f"  {result.steps} profiles run",
    ]
    show("\n".join(lines) + "\n")
    return EXIT_OK


COMMAND = Command(
    name="bisect",
    summary="find the commit that made a test's profile more expensive (git bisect run style)",
    description=(
        "Binary-search the first-parent commits between --good and --bad for the first one\n"
        "whose profile of TEST is worse than the good commit's by more than --tolerance.\n"
        "Each step checks the commit out into a temporary git worktree (your tree, index\n"
        "and other worktrees are never touched; it is removed on any exit, SIGTERM and\n"
        "SIGHUP included, with the step's processes) and runs 'python -m pytest TEST\n"
        "--modelprof-update-baselines --modelprof-baseline-dir=TMP' there, so the test's\n"
        "own code at that commit decides the model and its inputs; the checked-out tree\n"
        "comes first on PYTHONPATH, ahead of an editable install of your checkout. A commit\n"
        "whose run fails (it does not build, the test errors or does not exist there) is\n"
        "skipped, like 'git bisect skip', and named. Prints the first bad commit with the\n"
        "figures before and after it. Exit code 0 when found, 1 when --bad is not worse\n"
        "than --good. TEST is first checked against a 'pytest --collect-only' of its file\n"
        "at the good commit: a typo is refused with the closest ids."
    ),
    examples="""\
  modelprof bisect tests/test_zoo.py::test_resnet50 --good v1.2 --bad HEAD
  modelprof bisect tests/test_zoo.py::test_vit --good main~40 --metric traffic --tolerance 2%
  modelprof bisect tests/test_llm.py::test_decoder --good abc1234 --name prefill""",
    add_arguments=_add_arguments,
    run=_run,
)
