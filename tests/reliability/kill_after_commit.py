"""`python -m tests.reliability.kill_after_commit N ARGS...` runs `python -m ragshield ARGS`
in this process and SIGKILLs it right after the N-th commit of a transaction that added a
sample: the moment at which a sample committed apart from its answer is left without one."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session


def main(argv: list[str]) -> None:
    kill_after, args = int(argv[0]), argv[1:]
    added = threading.local()  # whether this thread's open transaction added a sample
    counting = threading.Lock()
    committed = [0]

    def before_statement(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO SAMPLES"):
            added.sample = True

    def after_commit(_session: Session) -> None:
        if getattr(added, "sample", False):
            added.sample = False
            with counting:
                committed[0] += 1
                if committed[0] == kill_after:
                    os.kill(os.getpid(), signal.SIGKILL)

    def after_rollback(_session: Session) -> None:
        added.sample = False

    event.listen(Engine, "before_cursor_execute", before_statement)
    event.listen(Session, "after_commit", after_commit)
    event.listen(Session, "after_rollback", after_rollback)
    from ragshield.cli import main as ragshield_main

    sys.argv = ["ragshield", *args]
    ragshield_main()


if __name__ == "__main__":
    main(sys.argv[1:])
