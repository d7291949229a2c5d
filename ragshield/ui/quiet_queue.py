"""Gradio's event queue, quiet while the app is idle.

Gradio's queue runs two polling loops on the server's event loop: one looks for new events
every `sleep_when_free` seconds (1 ms on Linux), one for progress messages every
`progress_update_sleep_when_free` seconds (10 ms). They run whether or not anybody is
connected: about 750 wake-ups a second, which kept an idle app at 6-7% of a core (issue 14,
scripts/bench_idle.py). QuietQueue keeps Gradio's intervals while there is work (an event
waiting or running) and polls at IDLE_POLL_S / IDLE_PROGRESS_S while there is none.

The trade-off: the first event after a quiet spell (a click on an idle app) waits up to
IDLE_POLL_S (0.1 s, 50 ms on average) before it starts; events that arrive while the queue
is busy start as fast as before. Gradio polls every 50 ms on Windows; 0.1 s measured 0.4-0.65%
of a core idle here against 0.8% for 50 ms, as uvicorn's own 0.1 s tick and the main
thread's 0.1 s sleep (Blocks.block_thread) stay. The first progress message of an event
waits up to IDLE_PROGRESS_S (no handler here reports gr.Progress). Timers (the Dashboard's
live refresh) tick in the browser, not on the server: without a page open they cost nothing.

Use QuietBlocks in place of gr.Blocks: every queue it makes (Blocks.__init__ makes one,
and app.queue() a new one) is a QuietQueue.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio import queueing

BUSY_POLL_S = 0.001  # Gradio's own intervals (Linux) while there is work
BUSY_PROGRESS_S = 0.01
IDLE_POLL_S = 0.1  # while idle (Gradio polls every 0.05 s on Windows)
IDLE_PROGRESS_S = 0.5


class QuietQueue(queueing.Queue):
    """gradio.queueing.Queue whose polling intervals depend on whether it has work."""

    @property
    def idle(self) -> bool:
        """No event waiting and none running."""
        return len(self) == 0 and all(job is None for job in self.active_jobs)

    # Gradio's loops read these before every sleep. Its __init__ assigns fixed values; the
    # setters ignore them (a property with a setter wins over the instance's __dict__).
    @property
    def sleep_when_free(self) -> float:
        return IDLE_POLL_S if self.idle else BUSY_POLL_S

    @sleep_when_free.setter
    def sleep_when_free(self, _value: float) -> None:
        pass

    @property
    def progress_update_sleep_when_free(self) -> float:
        return IDLE_PROGRESS_S if self.idle else BUSY_PROGRESS_S

    @progress_update_sleep_when_free.setter
    def progress_update_sleep_when_free(self, _value: float) -> None:
        pass


class QuietBlocks(gr.Blocks):
    """gr.Blocks whose queue is a QuietQueue."""

    def queue(self, *args: Any, **kwargs: Any) -> QuietBlocks:
        super().queue(*args, **kwargs)
        # Blocks.queue builds gradio.queueing.Queue itself; QuietQueue adds no state, only
        # the two properties, so the new queue becomes one in place.
        self._queue.__class__ = QuietQueue
        return self
