"""What the CI service a run is in tells it, read from the environment. Standard library only
(a leaf): the plugin asks before deciding to load anything for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["AUTO", "on_github_actions"]

#: ``--modelprof-timing-base auto`` (the default): the merge base of a pull request in GitHub
#: Actions, else off.
AUTO: Final = "auto"


def on_github_actions(env: Mapping[str, str]) -> bool:
    """Whether this runs as a step of a GitHub Actions job."""
    return env.get("GITHUB_ACTIONS") == "true"
