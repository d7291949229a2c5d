"""HTML pages to Markdown (RAG-X turns CRAG's web pages into Markdown before chunking).

Scripts, styles, navigation and other page furniture are dropped first: they are text the
model should never read as evidence. markdownify converts by recursion, about three frames a
level, so elements nested deeper than MAX_DEPTH (unclosed <font> tags pile up thousands) are
read as plain text: no text is lost, only markup too deep to matter.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "footer",
                "header", "form", "button", "aside")
BLANK_RUNS = re.compile(r"\n{3,}")
MAX_DEPTH = 100  # levels of elements converted as markup


def html_to_markdown(html: str) -> str:
    """Readable Markdown of a page's content; empty for a page without text."""
    soup = BeautifulSoup(html, "lxml")
    for tag in soup(DROPPED_TAGS):
        tag.decompose()
    _flatten_deep(soup)
    body = soup.body or soup
    markdown = MarkdownConverter(heading_style="ATX", strip=["img", "a"]).convert_soup(body)
    lines = [line.rstrip() for line in markdown.splitlines()]
    return BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def _flatten_deep(soup: BeautifulSoup) -> None:
    """Replace what each element at MAX_DEPTH holds by its text, when that holds elements;
    the tree is walked without recursion."""
    stack: list[tuple[Tag, int]] = [(soup, 0)]
    while stack:
        tag, depth = stack.pop()
        children = [child for child in tag.contents if isinstance(child, Tag)]
        if depth < MAX_DEPTH:
            stack.extend((child, depth + 1) for child in children)
        elif children:
            tag.string = tag.get_text("\n")
