"""The app's Gradio queue polls slowly while it has no work (issue 14: Gradio's 1 ms poll kept
an idle app at 6-7% of a core) and at Gradio's own intervals while it has some. No timing:
the intervals the queue's loops read are checked directly."""

from __future__ import annotations

import inspect

import gradio as gr
from gradio import queueing

from ragshield.ui.quiet_queue import (BUSY_POLL_S, BUSY_PROGRESS_S, IDLE_POLL_S, IDLE_PROGRESS_S,
                                      QuietBlocks, QuietQueue)


def _intervals(queue: queueing.Queue) -> tuple[float, float]:
    return queue.sleep_when_free, queue.progress_update_sleep_when_free


def test_gradio_loops_still_read_the_intervals_quiet_queue_decides() -> None:
    # QuietQueue works through these two attributes; a Gradio upgrade that renames them
    # would bring the 1 ms poll back silently.
    assert "self.sleep_when_free" in inspect.getsource(queueing.Queue.start_processing)
    assert "self.progress_update_sleep_when_free" in inspect.getsource(
        queueing.Queue.start_progress_updates)
    plain = gr.Blocks()._queue
    assert _intervals(plain) == (BUSY_POLL_S, BUSY_PROGRESS_S)  # Gradio's own, on Linux


def test_quiet_blocks_makes_every_queue_quiet() -> None:
    with QuietBlocks() as app:
        gr.Button("x").click(lambda: None)
    assert type(app._queue) is QuietQueue  # the one Blocks.__init__ makes
    assert app.queue(default_concurrency_limit=4) is app  # as app.py calls it
    assert type(app._queue) is QuietQueue
    assert app._queue.default_concurrency_limit == 4


def test_idle_queue_polls_slowly_and_busy_queue_at_gradio_speed() -> None:
    queue = QuietBlocks().queue(default_concurrency_limit=2)._queue
    queue.active_jobs = [None, None]  # as Queue.start() leaves it
    assert queue.idle
    assert _intervals(queue) == (IDLE_POLL_S, IDLE_PROGRESS_S)
    assert IDLE_POLL_S >= 20 * BUSY_POLL_S and IDLE_PROGRESS_S >= 20 * BUSY_PROGRESS_S

    queue.active_jobs = [[object()], None]  # an event running
    assert not queue.idle
    assert _intervals(queue) == (BUSY_POLL_S, BUSY_PROGRESS_S)

    queue.active_jobs = [None, None]
    waiting = queueing.EventQueue("fn", 2)
    waiting.queue.append(object())  # type: ignore[arg-type]  # an event waiting
    queue.event_queue_per_concurrency_id["fn"] = waiting
    assert not queue.idle
    assert _intervals(queue) == (BUSY_POLL_S, BUSY_PROGRESS_S)

    waiting.queue.clear()
    assert _intervals(queue) == (IDLE_POLL_S, IDLE_PROGRESS_S)


def test_gradio_cannot_set_the_intervals_back() -> None:
    queue = QuietBlocks()._queue
    queue.active_jobs = []
    queue.sleep_when_free = 0.001  # what Queue.__init__ does
    queue.progress_update_sleep_when_free = 0.01
    assert _intervals(queue) == (IDLE_POLL_S, IDLE_PROGRESS_S)


def test_the_app_uses_the_quiet_queue(settings) -> None:
    from ragshield.ui.app import build_app

    app = build_app(settings)
    app.queue(default_concurrency_limit=4)
    assert type(app._queue) is QuietQueue
