"""Playwright on Debian's chromium for the browser tests (Playwright downloads no browser
here: it drives /usr/bin/chromium through executable_path). The `browser` and `page`
fixtures live in tests/conftest.py; a browser test module defines `app_url`, the launched
app it drives."""

from __future__ import annotations

import re
import shutil

from playwright.sync_api import Page, expect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 900}
WAIT_MS = 30_000  # a 2-core machine shared with other test runs: wait generously

expect.set_options(timeout=WAIT_MS)


def open_tab(page: Page, title: str) -> None:
    page.get_by_role("tab", name=title).click()


def no_traceback(page: Page) -> None:
    """No stack trace in the page and no Gradio error toast (an exception in a handler)."""
    assert "Traceback" not in page.locator("body").inner_text()
    assert page.locator(".toast-body.error").count() == 0


def pick(page: Page, label: str, option: str) -> None:
    """Choose `option` (a substring of its text) in the dropdown labelled `label`."""
    dropdown = page.get_by_label(label, exact=True).filter(visible=True)
    dropdown.click()
    dropdown.fill("")
    # Typed key by key, the text filters the choices (a long list shows its first 100 only).
    dropdown.press_sequentially(option)
    page.get_by_role("option", name=re.compile(re.escape(option))).first.click()
