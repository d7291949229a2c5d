"""The first ten minutes: `python app.py` on a new, empty database, in a real browser. Within
60 s of launch the shipped demo run is there: Browse lists its 160 samples, the Dashboard
shows the metric table and every curve (the switch to the larger model included), and an
example question in the Demo is replayed from the call cache. At 1400x1000, a laptop's
screen, the Dashboard's headline cards and its large chart are above the fold, every figure
has a text alternative, and Browse's rows carry their badges. The README's pictures come from
scripts/make_screenshots.py."""

from __future__ import annotations

import os
import re
import time
from typing import Iterator

import pytest

from ragshield.datasets.demo import DEMO_RUN

if os.environ.get("RAGSHIELD_SKIP_BROWSER") == "1":
    pytest.skip("RAGSHIELD_SKIP_BROWSER=1", allow_module_level=True)

from playwright.sync_api import Page, expect  # noqa: E402

from tests.browser_support import WAIT_MS, no_traceback, open_tab, pick  # noqa: E402

FIRST_LAUNCH_S = 60
LAUNCHED: dict[str, float] = {}


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory, launch_app,
            packaged_models) -> Iterator[str]:
    """The app on a database that does not exist yet; the time it was started."""
    assert DEMO_RUN.is_file(), "the shipped demo run is missing: scripts/make_demo_run.py"
    folder = tmp_path_factory.mktemp("first-launch")
    LAUNCHED["at"] = time.monotonic()
    with launch_app(folder, f"sqlite:///{folder / 'new.db'}") as url:
        yield url


def test_a_new_database_shows_the_demo_run_within_a_minute(page: Page) -> None:
    open_tab(page, "Browse")
    summary = page.get_by_text(re.compile(r"showing \d+ of \d+ matching samples"))
    expect(summary).to_contain_text("of 160 matching samples")

    open_tab(page, "Dashboard")
    tables = page.locator("#dashboard-tables")
    for judge in ("counterfactual", "p_true", "token_prob", "stacked"):
        expect(tables).to_contain_text(judge)
    page.locator("#dashboard-figures summary").click()  # the research curves, behind a title
    for figure in ("fallback", "switch"):
        expect(page.locator(f'#dashboard-figures img[data-figure="{figure}"]')).to_be_visible()

    open_tab(page, "Demo")
    page.get_by_role("button", name="A kept answer").click()
    result = page.locator("#demo-result")
    expect(result.locator(".rs-demo-replayed")).to_be_visible()
    expect(result.locator(".rs-demo-decision .rs-demo-badge")).to_have_text("keep")
    no_traceback(page)
    elapsed = time.monotonic() - LAUNCHED["at"]
    assert elapsed < FIRST_LAUNCH_S, f"first launch took {elapsed:.0f} s"


GLANCE = {"width": 1400, "height": 1000}


@pytest.fixture
def glance(browser, app_url: str) -> Iterator[Page]:
    """The app at 1400x1000 in a fresh browser context."""
    context = browser.new_context(viewport=GLANCE)
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    opened.goto(app_url)
    expect(opened.locator("#demo-result")).to_be_visible()
    yield opened
    context.close()


def above_the_fold(page: Page, selector: str) -> None:
    """The element is wholly on the first screen, the page unscrolled."""
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not laid out"
    assert box["y"] >= 0 and box["y"] + box["height"] <= GLANCE["height"], (selector, box)


def test_the_dashboard_opens_on_cards_and_the_trade_off_at_a_glance(glance: Page) -> None:
    open_tab(glance, "Dashboard")
    chart = glance.locator('#dashboard-headline img[data-figure="tradeoff"]')
    expect(chart).to_be_visible()
    for card in ("shown", "wrong", "right"):
        expect(glance.locator(f'.rs-card[data-card="{card}"]')).to_contain_text("95% interval")
        above_the_fold(glance, f'.rs-card[data-card="{card}"]')
    above_the_fold(glance, '#dashboard-headline img[data-figure="tradeoff"]')
    assert chart.evaluate("image => image.naturalWidth") >= 900  # drawn large, not scaled up
    # Every figure of the page says what it shows, with numbers.
    for image in glance.locator("#dashboard-headline img, #dashboard-figures img").all():
        alt = image.get_attribute("alt") or ""
        assert alt.strip(), image.get_attribute("data-figure")
    assert "%" in (chart.get_attribute("alt") or "")
    # The research tables are a click away, unchanged.
    risk = glance.locator("#dashboard-tables details", has_text="Risk control (RC-RAG)")
    expect(risk.locator("table")).to_be_hidden()
    risk.locator("summary").click()
    expect(risk.locator("table")).to_be_visible()
    no_traceback(glance)


def test_browse_rows_carry_their_badges(glance: Page) -> None:
    open_tab(glance, "Browse")
    # The Demo question of the first test made a newer (live) run: pick the shipped one.
    pick(glance, "Run (newest first)", "#1 ")
    expect(glance.get_by_text(re.compile(r"showing \d+ of \d+ matching"))).to_contain_text(
        "of 160 matching")
    table = glance.locator("#browse-samples")
    expect(table).to_contain_text("withheld")
    for header in ("shown?", "answer is", "unsupported", "judges against", "people say"):
        expect(table.get_by_role("columnheader", name=header).first).to_be_visible()
    header = table.locator("thead").first.bounding_box()
    assert header is not None and header["height"] < 80, header  # one line of names
    first = glance.locator("[role=row].virtual-row").first
    expect(first).to_contain_text(re.compile(r"[✓✗] (kept|withheld)"))
    expect(first).to_contain_text(re.compile(r"[✓✗–] (right|wrong|refused)"))
    glance.get_by_label("Shown?").click()
    glance.get_by_role("option", name="kept").first.click()
    expect(glance.get_by_text(re.compile(r"showing \d+ of \d+ matching"))).not_to_contain_text(
        "of 160 matching")
    no_traceback(glance)


def test_a_demo_answer_opens_on_a_screen_in_browse(glance: Page) -> None:
    """From the Demo, the kept question's link opens its case study in Browse, which starts
    with the answer at a glance: question, answer, outcome and reason, passages."""
    glance.get_by_role("button", name="A kept answer").click()
    link = glance.locator("#demo-result .rs-demo-screen")
    expect(link).to_be_visible()
    link.click()
    expect(glance.get_by_role("tab", name="Browse")).to_have_attribute("aria-selected", "true")
    panel = glance.locator(".rs-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".rs-panel-outcome")).to_contain_text(re.compile(r"^(Shown|Withheld)"))
    no_traceback(glance)
