"""``python -m pytest_modelprof.cli``."""

from pytest_modelprof.cli import main

raise SystemExit(main())
