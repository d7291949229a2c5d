"""HTML pages to Markdown (RAG-X turns CRAG's web pages into Markdown before chunking).

Scripts, styles, navigation and other page furniture are dropped first: they are text the
model should never read as evidence.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "footer",
                "header", "form", "button", "aside")
BLANK_RUNS = re.compile(r"\n{3,}")


def html_to_markdown(html: str) -> str:
    """Readable Markdown of a page's content; empty for a page without text."""
    soup = BeautifulSoup(html, "lxml")
    for tag in soup(DROPPED_TAGS):
        tag.decompose()
    body = soup.body or soup
    markdown = MarkdownConverter(heading_style="ATX", strip=["img", "a"]).convert_soup(body)
    lines = [line.rstrip() for line in markdown.splitlines()]
    return BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
