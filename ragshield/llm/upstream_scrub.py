"""The one way a remote server's text reaches a guard client, the store or a log: everything
the proxy's upstream sent (its replies, its streamed chunks, its error messages) and every
error of the judges' backend passes through `Scrub` first, so that the server's own key,
which a server may echo, never does; and `shown_url` is the one way their URLs are shown.

A key is masked wherever any MIN_RUN of its characters in a row show, not only whole: an
echo cut short, or spelt with its first character as a JSON escape (`\\u0073k-...`), still
shows most of it. An error message is scrubbed before it is cut to MAX_MESSAGE_CHARS (a cut
could leave part of the key), and its JSON escapes are read first, so that they cannot spell
the key either. Text that comes in pieces (a streamed answer) is scrubbed joined: `Held` lets
it out as it comes, less the tail that a run of the key could still be straddling."""

from __future__ import annotations

import re
from typing import Any

import httpx

MAX_MESSAGE_CHARS = 300  # of an upstream's error message, shown in the guard's own
MIN_RUN = 8  # characters of the key in a row that are masked wherever they show
MASK = "[upstream key]"
HIDDEN = "***"  # in a URL shown: its password, its query's values
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_BARE_USERINFO = re.compile(r"//[^/]*@")  # of a URL httpx cannot read


class Scrub:
    """Masks one server's key with `mask` (None: the server has none, and nothing is
    masked)."""

    def __init__(self, key: str | None, mask: str = MASK) -> None:
        self._runs: re.Pattern[str] | None = None
        self._size, self.mask = 0, mask
        if key:
            size = min(MIN_RUN, len(key))
            runs = sorted({key[start:start + size] for start in range(len(key) - size + 1)})
            # A lookahead finds every run, overlapping ones too.
            self._runs = re.compile("(?=(" + "|".join(map(re.escape, runs)) + "))")
            self._size = size

    @property
    def reach(self) -> int:
        """How many characters one masked run spans: text let out in pieces holds back this
        many, so that a run straddling two pieces is seen whole (0: nothing is masked)."""
        return self._size

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where `text` shows the key: the runs' spans, those that overlap or touch joined."""
        spans: list[tuple[int, int]] = []
        for found in self._runs.finditer(text) if self._runs is not None else ():
            start, end = found.start(), found.start() + self._size
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], end))
            else:
                spans.append((start, end))
        return spans

    def text(self, text: str) -> str:
        """`text` with every run of the key's characters replaced by the mask."""
        pieces, last = [], 0
        for start, end in self.spans(text):
            pieces += [text[last:start], self.mask]
            last = end
        return "".join([*pieces, text[last:]])

    def shows_key(self, text: str) -> bool:
        return bool(self.spans(text))

    def value(self, value: Any) -> Any:
        """A JSON value with `text` applied to every string and key in it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def line(self, text: str) -> str:
        """A server's message as the guard shows it: JSON escapes read, on one line (lone
        surrogates replaced, so that it can be sent on), scrubbed."""
        text = _ESCAPE.sub(lambda escape: chr(int(escape[1], 16)), text)
        line = " ".join(text.split()).encode("utf-8", "replace").decode("utf-8")
        return self.text(line)

    def message(self, text: str) -> str:
        """An upstream's error message as the guard shows it: `line`, then cut short."""
        return self.line(text)[:MAX_MESSAGE_CHARS]

    def held(self) -> Held:
        return Held(self)


class Held:
    """Text that comes in pieces, let out scrubbed as it comes: all of it but the tail that
    a run of the key may still be straddling (the last `reach` characters, and a masked span
    that reaches into them), which `flush` lets out at the end. What is let out adds up to
    `Scrub.text` of the whole: a span is only ever let out whole, and every run that starts
    before the cut has all its characters in."""

    def __init__(self, scrub: Scrub) -> None:
        self._scrub, self._pending = scrub, ""

    def take(self, piece: str) -> str:
        """What of the text so far may go out now, scrubbed."""
        self._pending += piece
        cut = self._cut(self._pending)
        out, self._pending = self._pending[:cut], self._pending[cut:]
        return self._scrub.text(out)

    def flush(self) -> str:
        """The rest, scrubbed: the text has ended."""
        out, self._pending = self._pending, ""
        return self._scrub.text(out)

    def _cut(self, text: str) -> int:
        """Where `text` can be cut: `reach` before its end, moved back to the start of a
        masked span that reaches it (a span ending at the cut would join one after it)."""
        cut = max(0, len(text) - self._scrub.reach)
        for start, end in self._scrub.spans(text):
            if start < cut <= end:
                return start
        return cut


def shown_url(url: str) -> str:
    """The URL as messages and the health check show it: its password (or a lone user name,
    which is often a key) and its query's values hidden (`?api-key=` holds a key, and other
    names may), its fragment left out."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:  # the userinfo and the query by hand: all that may hide a key
        return _BARE_USERINFO.sub("//" + HIDDEN + "@", url.split("#")[0].split("?")[0])
    shown = parsed.copy_with(userinfo=_userinfo(parsed.userinfo), query=None, fragment=None)
    query = b"&".join(part.split(b"=")[0] + b"=" + HIDDEN.encode()
                      for part in parsed.query.split(b"&") if part)
    return str(shown.copy_with(query=query)) if query else str(shown)


def _userinfo(userinfo: bytes) -> bytes:
    """`user:***` for `user:password`; a lone user name (often a key) hidden whole."""
    if not userinfo:
        return b""
    user, colon, _password = userinfo.partition(b":")
    return user + b":" + HIDDEN.encode() if colon else HIDDEN.encode()
