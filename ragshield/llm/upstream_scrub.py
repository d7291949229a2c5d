"""The one way an upstream's text reaches a guard client: everything the upstream sent (its
replies, its streamed chunks, its error messages) passes through `Scrub` first, so that the
upstream's own key, which an upstream may echo, never does.

A key is masked wherever any MIN_RUN of its characters in a row show, not only whole: an
echo cut short, or spelt with its first character as a JSON escape (`\\u0073k-...`), still
shows most of it. An error message is scrubbed before it is cut to MAX_MESSAGE_CHARS (a cut
could leave part of the key), and its JSON escapes are read first, so that they cannot spell
the key either."""

from __future__ import annotations

import re
from typing import Any

MAX_MESSAGE_CHARS = 300  # of an upstream's error message, shown in the guard's own
MIN_RUN = 8  # characters of the key in a row that are masked wherever they show
MASK = "[upstream key]"
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


class Scrub:
    """Masks one upstream's key (None: the upstream has none, and nothing is masked)."""

    def __init__(self, key: str | None) -> None:
        self._runs: re.Pattern[str] | None = None
        if key:
            size = min(MIN_RUN, len(key))
            runs = sorted({key[start:start + size] for start in range(len(key) - size + 1)})
            # A lookahead finds every run, overlapping ones too.
            self._runs = re.compile("(?=(" + "|".join(map(re.escape, runs)) + "))")
            self._size = size

    def text(self, text: str) -> str:
        """`text` with every run of the key's characters replaced by MASK."""
        if self._runs is None:
            return text
        spans: list[list[int]] = []
        for found in self._runs.finditer(text):
            start, end = found.start(), found.start() + self._size
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        if not spans:
            return text
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], MASK]
            last = end
        return "".join([*pieces, text[last:]])

    def value(self, value: Any) -> Any:
        """A JSON value with `text` applied to every string and key in it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def message(self, text: str) -> str:
        """An upstream's error message as the guard shows it: JSON escapes read, on one line
        (lone surrogates replaced, so that it can be sent on), scrubbed, then cut short."""
        text = _ESCAPE.sub(lambda escape: chr(int(escape[1], 16)), text)
        line = " ".join(text.split()).encode("utf-8", "replace").decode("utf-8")
        return self.text(line)[:MAX_MESSAGE_CHARS]
