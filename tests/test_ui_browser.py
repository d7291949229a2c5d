"""The launched app in a real browser: Debian's chromium driven by Playwright. Each tab
renders; a stored demo question yields verdict badges; a label keyed with a hotkey lands in
the database and `u` takes it back; a Browse filter narrows the table; the Dashboard shows
figures and its metric table; hostile dataset text shows as text and runs no script; errors
are readable messages."""

from __future__ import annotations

import os
import re

import pytest

from ragshield.judges.builtin import JUDGES
from tests.ui_launch import (CHEAP_JUDGES, HOSTILE_DATASET, HOSTILE_IMG, HOSTILE_SCRIPT,
                             SYNTHETIC_JUDGES, SYNTHETIC_SAMPLES, PreparedStore, current_label)

if os.environ.get("RAGSHIELD_SKIP_BROWSER") == "1":
    pytest.skip("RAGSHIELD_SKIP_BROWSER=1", allow_module_level=True)

from playwright.sync_api import Locator, Page, expect  # noqa: E402

from tests.browser_support import no_traceback, open_tab, pick  # noqa: E402

ANSWER_WAIT_MS = 150_000  # the embedded model answers and judges a demo question
# -- every tab ------------------------------------------------------------------------------

TAB_LANDMARKS = {"Demo": "#demo-result", "Annotate": "#annotate-help",
                 "Browse": "#browse-samples", "Dashboard": "#dashboard-tables"}


def test_each_tab_renders(page: Page) -> None:
    for title, landmark in TAB_LANDMARKS.items():
        open_tab(page, title)
        expect(page.get_by_role("tab", name=title)).to_have_attribute("aria-selected", "true")
        expect(page.locator(landmark).first).to_be_visible()
        no_traceback(page)


# -- Demo -----------------------------------------------------------------------------------

def test_demo_stored_question_gets_verdict_badges(page: Page, prepared: PreparedStore,
                                                  packaged_models) -> None:
    page.get_by_label("stored sample", exact=True).check()
    pick(page, "Stored sample (uses its own passages)", prepared.demo_sample_id)
    for judge in JUDGES:
        page.get_by_label(judge, exact=True).filter(visible=True).set_checked(
            judge in CHEAP_JUDGES)
    expect(page.get_by_label("Decision rule", exact=True)).to_have_value("majority")
    page.get_by_role("button", name="Ask", exact=True).click()

    result = page.locator("#demo-result")
    expect(result.locator(".rs-demo-decision")).to_be_visible(timeout=ANSWER_WAIT_MS)
    for judge in CHEAP_JUDGES:
        badge = result.locator(f'.rs-demo-verdict[data-judge="{judge}"] .rs-demo-badge')
        expect(badge).to_have_text(re.compile("^(keep|abstain|unavailable|error)$"))
    expect(result.locator(".rs-demo-answer").first).not_to_be_empty()
    expect(result.locator(".rs-demo-status")).to_contain_text("Done in")
    no_traceback(page)


# -- Annotate -------------------------------------------------------------------------------

def start_annotating(page: Page, name: str) -> Locator:
    """Open Annotate, type the annotator's name and leave the box; the shown item."""
    open_tab(page, "Annotate")
    name_box = page.get_by_label("Your name (annotator)")
    name_box.fill(name)
    name_box.blur()
    item = page.locator("#annotate-item .annotate-item[data-sample-id]")
    expect(item).to_be_visible()
    expect(page.locator("#annotate-progress")).to_contain_text("0 of")
    return item


def test_annotate_hotkey_label_lands_in_the_database_and_u_undoes(
        page: Page, prepared: PreparedStore) -> None:
    item = start_annotating(page, "hotkey-tester")
    sample_id = item.get_attribute("data-sample-id")

    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("1")
    message = page.locator("#annotate-message")
    expect(message).to_contain_text(f"Stored: {sample_id} is answerable for hotkey-tester.")
    expect(item).not_to_have_attribute("data-sample-id", sample_id)
    assert current_label(prepared.database_url, "demo", sample_id, "hotkey-tester") == "answerable"
    expect(page.locator("#annotate-progress")).to_contain_text("1 of")

    page.keyboard.press("u")
    expect(message).to_contain_text(f"Undone on {sample_id}.")
    expect(item).to_have_attribute("data-sample-id", sample_id)
    assert current_label(prepared.database_url, "demo", sample_id, "hotkey-tester") is None


def test_hotkeys_are_left_alone_while_typing(page: Page, prepared: PreparedStore) -> None:
    item = start_annotating(page, "typing-tester")
    sample_id = item.get_attribute("data-sample-id")
    note = page.locator("#annotate-note textarea")
    note.click()
    page.keyboard.type("12 su")
    expect(note).to_have_value("12 su")
    assert current_label(prepared.database_url, "demo", sample_id, "typing-tester") is None
    expect(item).to_have_attribute("data-sample-id", sample_id)


def sentence_rows(database_url: str, dataset: str, sample_id: str) -> list[tuple[str, str]]:
    """Every sentence label row of the sample, oldest first: (sentence, label or retracted)."""
    from sqlalchemy import select

    from ragshield.store.database import open_store
    from ragshield.store.models import Sample as SampleRow
    from ragshield.store.models import SentenceLabel

    store = open_store(database_url, migrate=False)
    try:
        with store.session() as session:
            rows = session.execute(
                select(SentenceLabel.sentence, SentenceLabel.label, SentenceLabel.retracted)
                .join(SampleRow, SampleRow.id == SentenceLabel.sample_id)
                .where(SampleRow.external_id == sample_id).order_by(SentenceLabel.id)).all()
    finally:
        store.close()
    return [(sentence, "retracted" if retracted else label) for sentence, label, retracted in rows]


def test_sentence_labels_by_keyboard_undo_and_a_double_click(
        page: Page, prepared: PreparedStore, settings) -> None:
    """Issue 57: j enters sentence mode on the first sentence, 1 and 2 mark the sentences
    one after the other, u takes the last mark back, a double click on a mark stores one
    label, and Esc gives 1 back to the sample's label."""
    from ragshield.pipeline import RunModels, execute_run, start_run
    from ragshield.run_config import RunConfig
    from ragshield.store.database import open_store
    from ragshield.store.sample_import import import_samples
    from ragshield.types import Passage, Sample
    from tests.fakes import ScriptedLLM

    dataset, first, second = "sentence-keys", "Rollo led the Normans.", "He was a king."
    store = open_store(prepared.database_url)
    import_samples(store, dataset, [Sample(id=f"k{i}", question=f"Who led them {i}?",
                                           passages=[Passage(text="Rollo led the Normans.")])
                                    for i in range(2)])
    run = start_run(store, RunConfig(dataset=dataset, judges=["trivial"], rule="trivial"))
    execute_run(store, run, settings, progress=False, models=RunModels(
        main=ScriptedLLM(respond=lambda m: f"Answer: {first} {second}")))
    store.close()

    start_annotating(page, "keys-ann")
    pick(page, "Dataset", dataset)
    page.get_by_label("Show the answer of the newest run").check()
    item = page.locator("#annotate-item .annotate-item[data-sample-id]")
    expect(item).to_have_attribute("data-sample-id", "k0")
    sentences = page.locator("#annotate-sentence-pick")
    expect(sentences).to_contain_text(f"1. {first}")
    expect(sentences).to_contain_text(f"2. {second}")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    message = page.locator("#annotate-message")
    page.keyboard.press("j")
    expect(page.locator("#annotate-root")).to_have_class(re.compile("annotate-sentence-mode"))
    page.keyboard.press("1")
    expect(message).to_contain_text("Stored: sentence 1 of k0 is supported for keys-ann.")
    expect(sentences).to_contain_text("yours: supported")
    page.keyboard.press("2")  # the pick moved on to sentence 2
    expect(message).to_contain_text("Stored: sentence 2 of k0 is unsupported for keys-ann.")
    page.keyboard.press("u")
    expect(message).to_contain_text("Undone on k0.")
    assert sentence_rows(prepared.database_url, dataset, "k0") == [
        (first, "supported"), (second, "unsupported"), (second, "retracted")]
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(sentences.locator("input[type=radio]").nth(1)).to_be_checked()
    page.locator("#annotate-sentence-unsure").dblclick()
    expect(message).to_contain_text("sentence 2 of k0 is unsure for keys-ann.")
    page.wait_for_timeout(1000)  # the second click's request lands too
    assert sentence_rows(prepared.database_url, dataset, "k0")[3:] == [(second, "unsure")]
    page.keyboard.press("Escape")
    expect(page.locator("#annotate-root")).not_to_have_class(
        re.compile("annotate-sentence-mode"))
    page.keyboard.press("1")
    expect(message).to_contain_text("Stored: k0 is answerable for keys-ann.")
    expect(item).to_have_attribute("data-sample-id", "k1")
    no_traceback(page)


# -- Browse ---------------------------------------------------------------------------------

def table_rows(page: Page) -> Locator:
    return page.locator("[role=row].virtual-row")


def test_browse_filters_narrow_the_table_and_a_row_opens_its_case(
        page: Page, prepared: PreparedStore) -> None:
    open_tab(page, "Browse")
    # The Demo test before this one kept its question in a newer (live) run: pick ours.
    pick(page, "Run (newest first)", f"#{prepared.run_id} ")
    summary = page.get_by_text(re.compile(r"showing \d+ of \d+ matching samples"))
    expect(summary).to_contain_text(f"showing {SYNTHETIC_SAMPLES} of {SYNTHETIC_SAMPLES}")
    expect(table_rows(page).first).to_be_visible()
    shown_before = table_rows(page).count()
    assert shown_before >= 5

    search = page.get_by_label("Search (question, answer, sample id)")
    search.fill("thing 12?")
    search.press("Enter")
    expect(summary).to_contain_text("showing 1 of 1")
    expect(table_rows(page)).to_have_count(1)
    expect(table_rows(page).first).to_contain_text("syn-000012")

    search.fill("")
    search.press("Enter")
    page.get_by_label("labelled", exact=True).check()
    expect(summary).to_contain_text("showing 5 of 5")
    expect(table_rows(page)).to_have_count(5)

    table_rows(page).nth(1).locator("[role=gridcell]").first.click()
    expect(page.get_by_label("Sample id", exact=True)).to_have_value("syn-000010")
    case = page.locator(".rs-case")
    expect(case).to_contain_text("Synthetic question 10: what is thing 10?")
    for judge in SYNTHETIC_JUDGES:
        expect(case).to_contain_text(judge)
    no_traceback(page)


def test_browse_unknown_sample_is_a_readable_error(page: Page) -> None:
    open_tab(page, "Browse")
    expect(table_rows(page).first).to_be_visible()
    sample = page.get_by_label("Sample id", exact=True)
    sample.fill("no-such-sample")
    sample.press("Enter")
    error = page.locator(".rs-msg-error")
    expect(error).to_contain_text("no-such-sample")
    no_traceback(page)


# -- Dashboard ------------------------------------------------------------------------------

def test_dashboard_shows_figures_and_the_metric_table(page: Page) -> None:
    open_tab(page, "Dashboard")
    page.locator("#dashboard-figures summary").click()  # the research curves, behind a title
    figures = page.locator('#dashboard-figures img[src^="data:image/png;base64,"]')
    expect(figures.first).to_be_visible()
    assert figures.count() >= 2
    assert page.evaluate("(img) => img.naturalWidth", figures.first.element_handle()) > 100
    tables = page.locator("#dashboard-tables")
    expect(tables.locator("table").first).to_be_visible()
    for judge in SYNTHETIC_JUDGES:
        expect(tables).to_contain_text(judge)
    expect(page.locator("#dashboard-annotation")).to_contain_text("synthetic-annotator")
    no_traceback(page)


def test_a_false_keep_opens_its_case_study_in_one_click(page: Page,
                                                      prepared: PreparedStore) -> None:
    open_tab(page, "Dashboard")
    pick(page, "Run", f"#{prepared.run_id} ")
    link = page.locator('#dashboard-agreement a[href*="sample="]').first
    expect(link).to_be_visible()
    sample_id = link.inner_text()
    link.click()
    expect(page.get_by_role("tab", name="Browse")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_label("Sample id", exact=True)).to_have_value(sample_id)
    expect(page.locator(".rs-case")).to_contain_text(sample_id)
    no_traceback(page)


# -- hostile text -----------------------------------------------------------------------------

def test_hostile_text_shows_as_text_and_runs_nothing(page: Page) -> None:
    open_tab(page, "Annotate")
    pick(page, "Dataset", HOSTILE_DATASET)
    item = start_annotating(page, "xss-tester")
    expect(item).to_contain_text(f"{HOSTILE_SCRIPT} Who wrote this?")
    expect(item).to_contain_text(f"{HOSTILE_IMG} Nobody wrote it.")
    assert item.locator("script, img").count() == 0

    open_tab(page, "Demo")
    pick(page, "Dataset", HOSTILE_DATASET)
    expect(page.locator("#demo-result")).to_contain_text("Dataset hostile: 2 samples")
    page.get_by_label("Stored sample (uses its own passages)", exact=True).click()
    expect(page.get_by_role("option").first).to_contain_text(HOSTILE_SCRIPT)
    assert page.evaluate("typeof window.__xss") == "undefined"
