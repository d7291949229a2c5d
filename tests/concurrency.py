"""Calls made at the same moment from several threads, for the tests of races."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")


def at_once(call: Callable[[], T], times: int,
            expected: type[BaseException] | tuple[type[BaseException], ...] = ()
            ) -> list[T | BaseException]:
    """`call` in `times` threads released together: each one's result, or the `expected`
    error it raised (any other error fails the test with its traceback)."""
    start = threading.Barrier(times)

    def one(_: int) -> T | BaseException:
        start.wait()
        try:
            return call()
        except expected as error:
            return error

    with ThreadPoolExecutor(times) as pool:
        return list(pool.map(one, range(times)))
