"""Markdown and HTML from the same tables. Every cell is dataset or model text at heart:
Markdown cells have their pipes and line breaks escaped, HTML cells are HTML-escaped."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import urlencode

from ragshield.reports.tables import SampleLinks
from ragshield.types import Table

STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}th,td{border:1px solid #ccc;
padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}
.note{color:#555;font-size:13px}img{max-width:560px;margin:0 1rem 1rem 0}"""


# Every line break Markdown renderers honour (a \r alone split a table row in two).
_LINE_BREAKS = re.compile("\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]")


def _md_cell(cell: str | SampleLinks) -> str:
    """A table cell as plain text: its pipes and backslashes escaped, its line breaks made
    spaces, and no tag (a dataset's fields are untrusted; "<" is written as an entity)."""
    text = str(cell).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
    return _LINE_BREAKS.sub(" ", text)


def table_markdown(table: Table) -> str:
    lines = [f"## {table.title}", ""]
    if table.note:
        lines += [table.note, ""]
    lines.append("| " + " | ".join(_md_cell(h) for h in table.headers) + " |")
    lines.append("|" + "---|" * len(table.headers))
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def markdown(title: str, tables: list[Table], figures: list[Path]) -> str:
    parts = [f"# {title}\n", *(table_markdown(t) for t in tables)]
    if figures:
        parts.append("## Figures\n\n" + "\n".join(f"![{f.stem}]({f.name})" for f in figures) + "\n")
    return "\n".join(parts)


def _cell_html(cell: str | SampleLinks) -> str:
    """A cell's text, escaped; the ids of SampleLinks as links to their case studies."""
    if not isinstance(cell, SampleLinks) or cell.run_id is None or not cell.ids:
        return html.escape(str(cell))
    links = ", ".join(
        f'<a href="?{html.escape(urlencode({"run": cell.run_id, "sample": sample_id}))}" '
        f'target="_top">{html.escape(sample_id)}</a>' for sample_id in cell.ids[:cell.shown])
    more = len(cell.ids) - cell.shown
    return f"{len(cell.ids)}: {links}" + (f", +{more} more" if more > 0 else "")


def _note_and_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell_html(c)}</td>" for c in row) + "</tr>"
                   for row in table.rows)
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return f"{note}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def table_html(table: Table) -> str:
    return f"<h2>{html.escape(table.title)}</h2>{_note_and_table(table)}"


def table_section_html(table: Table, opened: bool = False) -> str:
    """The table behind its title, as a section a reader opens (closed unless `opened`)."""
    state = " open" if opened else ""
    return (f'<details class="rs-section"{state}><summary><h2>{html.escape(table.title)}</h2>'
            f"</summary>{_note_and_table(table)}</details>")


def html_page(title: str, tables: list[Table], figures: list[Path]) -> str:
    images = "".join(f'<img src="{html.escape(f.name)}" alt="{html.escape(f.stem)}">'
                     for f in figures)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{''.join(table_html(t) for t in tables)}"
            f"{'<h2>Figures</h2>' + images if figures else ''}</body></html>\n")
