"""Costs over commits: ``modelprof history`` reads every committed version of the baselines
from git, ``modelprof bisect`` finds the commit that made a test's profile more expensive.

``git`` (log and blobs), ``build`` (series per test and metric), ``model`` (the JSON
document), ``view``/``charts``/``render`` (text, Markdown, HTML) and ``bisect`` (temporary
worktrees, one pytest run per step). Nothing here imports torch.
"""

from __future__ import annotations

from pytest_modelprof.history.build import HistoryError, read_history
from pytest_modelprof.history.model import HistoryDocument

__all__ = ["HistoryDocument", "HistoryError", "read_history"]
