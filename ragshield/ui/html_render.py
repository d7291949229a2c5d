"""HTML fragments for the UI. Dataset and model text is untrusted: every piece of it goes
through `esc` before it reaches the page, so `<script>` shows as text."""

from __future__ import annotations

import html
from typing import Any


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
