"""The Dashboard's policy panel, called without a browser on the judged demo run of
tests/test_policies.py: preview (nothing stored), save, the versions table, pin and unpin as
the Demo sees them, the watch figures, readable errors and escaping; and the accordion built
into the Dashboard."""

from __future__ import annotations

import base64
import html
import re

import gradio as gr
import pytest

from ragshield.config import DEFAULT_DECISION_RULE

from ragshield.errors import UserError
from ragshield.services.annotation.people import ADMIN, ANNOTATOR, Access
from ragshield.services.learning.pinned_policy import pinned
from ragshield.services.learning.policies import list_policies
from ragshield.services.runs.runs import form_defaults
from ragshield.ui import dashboard_tab
from ragshield.ui.context import UiContext
from ragshield.ui.demo_tab import DemoForm, STORED, ask, followed_defaults, rule_defaults
from ragshield.ui.policy_panel import (judge_choices, pin_html, preview_html, save_html,
                                       saved_html, unpin_html, version_choices, watch_html)
from tests.fakes import ScriptedLLM
from tests.judged_demo import JUDGE, judged_demo_run

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
pytestmark = SQLITE_ONLY  # the services under the panel have their PostgreSQL tests
ERROR = 'class="rs-msg rs-msg-error"'


@pytest.fixture
def judged(store, settings):
    """(the panel's context, the judged demo run's world, the run id)."""
    world, run_id = judged_demo_run(store, settings, [JUDGE])
    return UiContext(settings=settings, store=store), world, run_id


def images(page: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'base64,([A-Za-z0-9+/=]+)"', page)]


def test_preview_then_save_then_the_saved_versions(judged):
    context, _, run_id = judged
    assert judge_choices(context, run_id) == [JUDGE, "stacked"]
    assert judge_choices(context, None) == []
    page = html.unescape(preview_html(context, run_id, JUDGE, 0.2, 0.1, None))
    assert "Of the answers shown, at most 20% are wrong or unsupported, with 90% confidence."\
        in page
    assert re.search(r"Calibration labels: (\d+) \(\1 from people, 0 from reference answers, "
                     r"0 from unanswerable flags\)", page)
    assert "Coverage on the calibration labels" in page and "Answer when the score is" in page
    [histogram] = images(page)
    assert histogram.startswith(b"\x89PNG") and list_policies(context.store) == []

    saved = save_html(context, run_id, JUDGE, 0.2, 0.1, None, "guard")
    assert "Saved policy:guard@1." in saved and ERROR not in saved
    assert f"its judges read as in this run: {JUDGE} by qwen-0.5b" in saved
    assert "Saved policy:guard@2." in save_html(context, run_id, JUDGE, 0.2, 0.1, "", "guard")
    assert [p.rule for p in list_policies(context.store)] == ["policy:guard@1",
                                                            "policy:guard@2"]
    versions = saved_html(context, run_id)
    assert versions.count("<td>policy:guard@") == 2 and "<td>pinned</td>" not in versions
    assert version_choices(context) == (["policy:guard@1", "policy:guard@2"],
                                        "policy:guard@2")


def test_errors_and_promises_the_labels_cannot_keep_read_as_messages(judged):
    context, _, run_id = judged
    strict = html.unescape(preview_html(context, run_id, JUDGE, 0.01, 0.05))
    assert re.search(r"No threshold keeps this promise on these labels: it needs about \d+ "
                     r"more labels at the current error rate\.", strict)
    assert "needs at least 368 labelled samples" in strict and images(strict)
    assert "give a number between 0 and 1" in preview_html(context, run_id, JUDGE, "lots", 0.1)
    for alpha in (5, float("nan"), 1):  # "at most 500% are wrong" was previewed before
        refused = preview_html(context, run_id, JUDGE, alpha, 0.1)
        assert "alpha: give a number between 0 and 1" in refused and "Promise" not in refused
    assert "Choose a judge first." in preview_html(context, run_id, None, 0.2, 0.1)
    assert "No run chosen" in preview_html(context, None, JUDGE, 0.2, 0.1)
    assert "judge &#x27;nli&#x27; gave no score" in preview_html(context, run_id, "nli", 0.2, 0.1)
    assert "Type a name for the policy first." in save_html(context, run_id, JUDGE, 0.2, 0.1,
                                                            None, " ")
    hostile = save_html(context, run_id, JUDGE, 0.2, 0.1, None, "<b>x</b>")
    assert "&lt;b&gt;x&lt;/b&gt;" in hostile and "<b>x</b>" not in hostile
    assert "<b>x</b>" not in saved_html(context, run_id)
    assert ERROR in pin_html(context, "policy:missing@1")


def test_pinning_makes_the_version_the_demos_default_rule(judged):
    context, world, run_id = judged
    save_html(context, run_id, JUDGE, 0.3, 0.1, None, "guard")
    built = rule_defaults(context)  # as a Demo page built now shows it
    pinned = pin_html(context, "policy:guard@1", "ann")
    assert "policy:guard@1 is now the default rule of the Demo and the API" in pinned
    assert "<td>pinned</td>" in saved_html(context, run_id)
    assert version_choices(context)[1] == "policy:guard@1"
    judges, rules, rule = rule_defaults(context)
    assert rule == "policy:guard@1" and rule in rules and JUDGE in judges
    judges_update, rule_update, shown = followed_defaults(context, built)
    assert rule_update.value == "policy:guard@1" and JUDGE in judges_update.value
    assert shown == (judges, rules, rule)
    # Opening the tab again changes nothing the person set after that.
    assert followed_defaults(context, shown) == (gr.skip(),) * 3

    context.models._opened[None] = ScriptedLLM(respond=world.respond)
    sample_id = next(iter(world.samples.values())).id
    form = DemoForm(source=STORED, dataset="demo", sample_id=sample_id, judges=(JUDGE,),
                    rule=rule)
    page = html.unescape(list(ask(context, form))[-1])
    assert "rule <b>policy:guard@1</b>" in page
    assert "Why this rule: the pinned policy guard@1, pinned by ann on" in page

    unpinned = html.unescape(unpin_html(context))
    assert f"No policy is pinned: the default rule is {DEFAULT_DECISION_RULE} again" in unpinned
    assert rule_defaults(context) == built
    assert followed_defaults(context, shown)[1].value == built[2]  # the unpinned default
    assert followed_defaults(context, built) == (gr.skip(),) * 3
    assert "<td>pinned</td>" not in saved_html(context, run_id)


def test_the_start_form_follows_a_pin_when_the_dashboard_is_opened(judged):
    context, _, run_id = judged
    save_html(context, run_id, JUDGE, 0.3, 0.1, None, "guard")
    shown = form_defaults(context.settings, context.store)
    assert shown.rule != "policy:guard@1"
    pin_html(context, "policy:guard@1", "ann")
    judges, rule, now = dashboard_tab.followed_form(context, shown)
    assert rule["value"] == "policy:guard@1" and "policy:guard@1" in rule["choices"]
    assert judges.value == ["trivial", JUDGE] and now == form_defaults(context.settings,
                                                                       context.store)
    judges, rule, unchanged = dashboard_tab.followed_form(context, now)
    assert judges == unchanged == gr.skip() and "value" not in rule  # the choices only
    unpin_html(context)
    assert dashboard_tab.followed_form(context, now)[2] == shown


def test_the_watch_is_a_figure_per_policy_in_use(judged):
    context, _, run_id = judged
    assert "No policy in use reads this run" in watch_html(context, run_id)
    save_html(context, run_id, JUDGE, 0.3, 0.1, None, "guard")
    page = watch_html(context, run_id)
    assert 'data-figure="watch policy:guard@1"' in page
    [figure] = images(page)
    assert figure.startswith(b"\x89PNG")


def test_the_dashboard_builds_the_policy_accordion(judged):
    context, _, _ = judged
    with gr.Blocks() as page, gr.Tab(dashboard_tab.TITLE) as tab:
        dashboard_tab.build(context, page, tab)
    labels = [block.label for block in page.blocks.values() if isinstance(block, gr.Accordion)]
    assert labels.index("Policy") < labels.index("Start a run")


def test_with_logins_only_an_admin_saves_pins_and_unpins(judged):
    """An API key that names a policy decides by its newest version, and a pin is the
    default rule of the Demo and the API: an annotator's page must not change either."""
    context, _, run_id = judged
    context.access = Access(logins=True, file_roles={"boss": ADMIN, "ann": ANNOTATOR})
    refused = save_html(context, run_id, JUDGE, 0.2, 0.1, None, "guard", "ann")
    assert ERROR in refused and "Only an admin may save policies." in refused
    assert list_policies(context.store) == []
    assert "Saved policy:guard@1." in save_html(context, run_id, JUDGE, 0.2, 0.1, None, "guard",
                                                "boss")
    assert "Only an admin may pin policies." in pin_html(context, "policy:guard@1", "ann")
    assert pinned(context.store) is None
    assert ERROR not in pin_html(context, "policy:guard@1", "boss")
    assert "Only an admin may unpin policies." in unpin_html(context, "ann")
    assert pinned(context.store).rule == "policy:guard@1"
    assert ERROR not in unpin_html(context, "boss") and pinned(context.store) is None


def test_with_logins_only_an_admin_trains_a_judge(judged):
    """A policy reads a trained judge by name: training it again (or anew) changes what the
    guard lets through, as a pin does."""
    from ragshield.ui.dashboard_tab import start_training

    class NoTrainer:  # nothing may start for an annotator; an admin gets as far as starting
        def __init__(self) -> None:
            self.started: list[str] = []

        def start(self, name: str, dataset: str, hard_negatives: bool = False) -> None:
            self.started.append(name)
            raise UserError("stopped here by the test")

    context, _, _ = judged
    context.access = Access(logins=True, file_roles={"boss": ADMIN, "ann": ANNOTATOR})
    trainer = NoTrainer()
    refused = start_training(context, trainer, "demo", "mine", False, "ann")  # type: ignore
    assert ERROR in refused and "Only an admin may train judges." in refused
    assert trainer.started == []
    allowed = start_training(context, trainer, "demo", "mine", False, "boss")  # type: ignore
    assert "stopped here by the test" in allowed and trainer.started == ["mine"]
