"""How numbers and tables read, the same in the reports and in the faces: the faces render
with these rather than reaching into ragshield.reports."""

from __future__ import annotations

from ragshield.reports.render import table_html, table_section_html
from ragshield.reports.tables import fmt
from ragshield.reports.tradeoff import shown_percent

__all__ = ["fmt", "shown_percent", "table_html", "table_section_html"]
