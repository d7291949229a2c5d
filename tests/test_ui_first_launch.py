"""The first ten minutes: `python app.py` on a new, empty database, in a real browser. Within
60 s of launch the shipped demo run is there: Browse lists its 160 samples, the Dashboard
shows the metric table and every curve (the switch to the larger model included), and an
example question in the Demo is replayed from the call cache. With RAGSHIELD_SCREENSHOTS=1
the three tabs' screenshots are saved for the README."""

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

from tests.browser_support import no_traceback, open_tab, save_screenshot  # noqa: E402

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
    save_screenshot(page, "browse")

    open_tab(page, "Dashboard")
    tables = page.locator("#dashboard-tables")
    for judge in ("counterfactual", "p_true", "token_prob", "stacked"):
        expect(tables).to_contain_text(judge)
    for figure in ("fallback", "switch"):
        expect(page.locator(f'#dashboard-figures img[data-figure="{figure}"]')).to_be_visible()
    save_screenshot(page, "dashboard")

    open_tab(page, "Demo")
    page.get_by_role("button", name="A kept answer").click()
    result = page.locator("#demo-result")
    expect(result.locator(".rs-demo-replayed")).to_be_visible()
    expect(result.locator(".rs-demo-decision .rs-demo-badge")).to_have_text("keep")
    no_traceback(page)
    save_screenshot(page, "demo")
    elapsed = time.monotonic() - LAUNCHED["at"]
    assert elapsed < FIRST_LAUNCH_S, f"first launch took {elapsed:.0f} s"
