"""The README's pictures, taken from the real app: `python -m ragshield serve` on a new,
empty SQLite database (so it opens on the shipped demo run, as a newcomer's does), every tab
in Debian's chromium at 1400x1000, written to docs/screenshots/<tab>.png. Run it again
whenever the UI changes.

    python scripts/make_screenshots.py [--out docs/screenshots] [--height 1000]

The Demo's picture replays its first example from the shipped call cache (no model time);
the Annotate picture shows the first demo answer with its sentences. Each picture is the
top of the page, `--height` pixels tall: what a person sees before scrolling.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from ragshield.testing.servers import launched_app  # noqa: E402

WIDTH = 1400
WAIT_MS = 60_000
TABS = ("Demo", "Annotate", "Browse", "Dashboard", "Data")


def _ready(page: Page, tab: str) -> None:
    """Wait for what the tab's picture is for."""
    if tab == "Demo":
        page.get_by_role("button", name="A kept answer").click()
        expect(page.locator("#demo-result .rs-demo-decision")).to_be_visible()
    elif tab == "Annotate":
        name = page.get_by_label("Your name (annotator)")
        name.fill("newcomer")
        name.blur()
        expect(page.locator("#annotate-item .annotate-item[data-sample-id]")).to_be_visible()
    elif tab == "Browse":
        expect(page.locator("#browse-samples")).to_contain_text("kept")
    elif tab == "Dashboard":
        expect(page.locator('#dashboard-headline img[data-figure="tradeoff"]')).to_be_visible()
    page.wait_for_timeout(800)  # the last re-render settles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragshield-screenshots-") as folder, \
            launched_app(f"sqlite:///{folder}/new.db", Path(folder)) as (url, _), \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": args.height})
        page.set_default_timeout(WAIT_MS)
        page.goto(url)
        expect(page.locator("#demo-result")).to_be_visible()
        for tab in TABS:
            page.get_by_role("tab", name=tab).click()
            _ready(page, tab)
            path = args.out / f"{tab.lower()}.png"
            page.screenshot(path=str(path))
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                  f"{path.stat().st_size // 1024} KB")
        browser.close()


if __name__ == "__main__":
    main()
