"""`python -m tests.reliability.kill_at_statement K REPORT ARGS...` runs `python -m ragshield
ARGS` in this process and SIGKILLs it just before its K-th database step (each SQL statement
and each COMMIT is a step), so a seed picks an exact crash point: inside a migration, a
dataset import, or a sample's transaction. K = 0 never kills; at a normal exit REPORT gets
{"steps": how many there were, "run_created": the step that inserted the run}.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


def main(argv: list[str]) -> None:
    kill_at, report, args = int(argv[0]), Path(argv[1]), argv[2:]
    seen = {"steps": 0, "run_created": 0}

    def step(statement: str = "") -> None:
        seen["steps"] += 1
        if statement.lstrip().upper().startswith("INSERT INTO RUNS"):
            seen["run_created"] = seen["steps"]
        if seen["steps"] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def before_statement(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        step(statement)

    event.listen(Engine, "before_cursor_execute", before_statement)
    event.listen(Engine, "commit", lambda _conn: step())
    atexit.register(lambda: report.write_text(json.dumps(seen)))
    from ragshield.cli import main as ragshield_main

    sys.argv = ["ragshield", *args]
    ragshield_main()


if __name__ == "__main__":
    main(sys.argv[1:])
