"""Text as it is generated, for a page that shows the answer while the model writes it.

A caller sets a sink for the calls it makes (`streaming_to`); a backend that generates token
by token hands the sink the text so far after each token. The sink lives in a context
variable, so only the calls made inside the `with` block (in that thread) stream: the
Demo streams the answer, not the judges' calls. A call served from the call cache, or by a
backend that does not stream, reaches the sink not at all: the whole answer arrives at once.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

TextSink = Callable[[str], None]  # called with the whole text generated so far

_SINK: ContextVar[TextSink | None] = ContextVar("ragshield_text_sink", default=None)


@contextmanager
def streaming_to(sink: TextSink) -> Iterator[None]:
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def text_sink() -> TextSink | None:
    """The sink of the calls being made now, if any."""
    return _SINK.get()
