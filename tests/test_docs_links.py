"""The README and the docs pages link only to files that exist (a moved section broke links
before), and the README stays short: what it is, the commands, the snippet, the words, where
we stand and an index; the rest lives in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), a target without a scheme and not only an anchor.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 200


def test_every_relative_link_of_the_docs_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_is_short_and_shows_every_tab():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    for tab in ("demo", "annotate", "browse", "dashboard", "data"):
        assert f"docs/screenshots/{tab}.png" in text
    assert "make test" in text and "make test-fast" in text and "Apache License 2.0" in text
