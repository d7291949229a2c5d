"""The error of a run id that names no run: raised by the run queries (store/runs.py) and
by claiming a run (store/run_owner.py, which runs.py reads a run's shown status from)."""

from __future__ import annotations

from ragshield.errors import UserError


class UnknownRunError(UserError, LookupError):
    """No run has the id asked for."""
