"""`python -m tests.reliability.failing_guard ARGS...` is `python -m ragshield ARGS` (a
`serve` command) with a bug planted in the guard: every judged call raises
RuntimeError("planted bug"), so a test can see what the server's log holds of a bug."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from ragshield.cli import main
from ragshield.services.guarding.guard import Guard


def planted_bug(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise RuntimeError("planted bug")


if __name__ == "__main__":
    Guard._judged = planted_bug  # type: ignore[method-assign]
    main(sys.argv[1:])
