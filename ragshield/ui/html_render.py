"""HTML fragments for the UI. Dataset and model text is untrusted: every piece of it goes
through `esc` before it reaches the page, so `<script>` shows as text."""

from __future__ import annotations

import html
from typing import Any, Sequence

from ragshield.services.questions.conversation import SPEAKERS, history_of
from ragshield.services.questions.claim_marks import ClaimMark, unsupported
from ragshield.types import passage_label


def esc(value: Any) -> str:
    """Text made safe for HTML content and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def message_html(text: str, kind: str = "info") -> str:
    """A readable notice in the page (kind: info, warning or error), never a traceback."""
    return f'<div class="rs-msg rs-msg-{esc(kind)}">{esc(text)}</div>'


def table_html(columns: list[str], rows: list[list[Any]], *, table_id: str | None = None) -> str:
    """A plain HTML table with every cell escaped."""
    id_attr = f' id="{esc(table_id)}"' if table_id else ""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<table class="rs-table"{id_attr}><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table>')


# Unsupported sentences are marked by a wavy underline and a word beside them, not by colour
# alone; the score shows beside the word and on hover.
CLAIM_CSS = """
.rs-claim-unsupported { text-decoration: underline wavy #b00020; text-underline-offset: 3px;
  background: #fff1f1; }
.rs-claim-unread { text-decoration: underline dotted #666; text-underline-offset: 3px; }
.rs-claim-flag { font-size: 0.7em; font-weight: 600; color: #8a1010; margin: 0 0.2em;
  white-space: nowrap; }
.rs-claim-legend { font-size: 0.8em; color: #555; }
"""


def _claim_html(text: str, mark: ClaimMark) -> str:
    score = "unread" if mark.score is None else f"{mark.score:.2f}"
    where = "" if mark.passage is None else f"; closest passage: {passage_label(mark.passage)}"
    if mark.supported is True:
        return (f'<span class="rs-claim-supported" title="supported by the passages: '
                f'P(supported) = {esc(score)}{esc(where)}">{esc(text)}</span>')
    css, word = (("rs-claim-unread", "unread") if mark.supported is None
                 else ("rs-claim-unsupported", "unsupported"))
    title = f"{word}: P(supported) = {score}{where}"
    flag = word if mark.score is None else f"{word} {score}"
    return (f'<span class="{css}" title="{esc(title)}">{esc(text)}</span>'
            f'<span class="rs-claim-flag">[{esc(flag)}]</span>')


def marked_answer_html(text: str, marks: Sequence[ClaimMark]) -> str:
    """The answer with each claim the support judge did not find supported marked in place
    (escaped, like every piece of model text), followed by a one-line legend."""
    if not marks:
        return esc(text)
    parts, position = [], 0
    for mark in marks:
        parts.append(esc(text[position:mark.start]))
        parts.append(_claim_html(text[mark.start:mark.end], mark))
        position = mark.end
    parts.append(esc(text[position:]))
    failing = len(unsupported(marks))
    legend = (f"support: {len(marks) - failing} of {len(marks)} sentences supported by the "
              f"passages" + (" (the others are underlined and flagged)" if failing else ""))
    return "".join(parts) + f'<div class="rs-claim-legend">{esc(legend)}</div>'


def conversation_html(meta: dict[str, Any]) -> str:
    """The conversation a sample's question came in (its row's `history`), oldest turn
    first, escaped; empty without one."""
    turns = history_of(meta)
    if not turns:
        return ""
    items = "".join(f'<li><b>{esc(SPEAKERS.get(turn.role, turn.role))}:</b> '
                    f'<span class="rs-turn-text">{esc(turn.text)}</span></li>' for turn in turns)
    return (f'<div class="rs-conversation"><b>Earlier in the conversation</b> ({len(turns)} '
            f'turn{"s" if len(turns) != 1 else ""}):<ol>{items}</ol></div>')
