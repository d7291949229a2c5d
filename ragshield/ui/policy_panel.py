"""The Dashboard's policy panel: a policy in three clicks (a judge and a promise, a preview of what
it buys on the run's labels, save), the saved versions with the risk each shows on the run, one of
them pinned as the default rule of the Demo and the API, and the watch as a picture. What it shows
comes from ragshield.services.learning.policy_preview; this module renders it. The handlers are
plain functions of the UiContext; `build_policy_panel` only wires them."""

from __future__ import annotations

import base64
from typing import Any, Literal, overload

import gradio as gr

from ragshield.errors import OptionError, UserError
from ragshield.services.annotation.people import require_admin
from ragshield.services.form_values import whole_number
from ragshield.services.learning.pinned_policy import pin_policy, pinned, unpin
from ragshield.services.learning.policies import fit_run_policy, list_policies
from ragshield.services.learning.policy_preview import (KINDS, Policy, Preview, percent,
                                                        preview_policy, scored_judges,
                                                        versions_table, watch_curves)
from ragshield.services.questions.settlement import default_rule
from ragshield.services.rendering import fmt, table_html
from ragshield.types import Table
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import esc, message_html

DEFAULT_ALPHA, DEFAULT_DELTA = 0.2, 0.1  # as `ragshield policy fit`
INTRO = ("A policy answers when a judge's score is high enough, withholds when it is low, and "
         "asks a person in between, with a promise fitted on this run's labels. Pick a judge "
         "and a promise, preview what it buys (nothing is stored), then save it. A saved "
         "version can be pinned: the Demo and the API then decide by it when no rule is "
         "named.")
NO_RUN = "No run chosen: pick one at the top of the Dashboard."


def _png_html(png: bytes, name: str) -> str:
    return (f'<img alt="{esc(name)}" data-figure="{esc(name)}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">')


@overload
def _share(value: Any, what: str, optional: Literal[False] = False) -> float: ...
@overload
def _share(value: Any, what: str, optional: bool) -> float | None: ...


def _share(value: Any, what: str, optional: bool = False) -> float | None:
    """A share typed into a number box; None for an empty optional one (a browser sends an
    empty number box as 0, which no promise's share may be)."""
    if value in (None, "", 0) and optional:
        return None
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = float("nan")
    if not 0 < share < 1:  # NaN too: a promise "at most nan%" was previewed
        raise OptionError(f"{what}: give a number between 0 and 1, got {value!r}")
    return share


def _run(run_id: Any) -> int:
    if run_id in (None, ""):
        raise UserError(NO_RUN)
    return whole_number(run_id, "run", minimum=1)


def judge_choices(context: UiContext, run_id: Any) -> list[str]:
    """The judges a policy on the run can read (the stacked judge last); none without a run
    or scores."""
    try:
        return scored_judges(context.tables.get(_run(run_id), "human"))
    except UserError:
        return []


def _thresholds(policy: Policy) -> str:
    if policy.withhold_below is None:
        below = "ask a person below it"
    elif policy.withhold_below == policy.answer_at:
        below = "withhold below it"
    else:
        below = (f"withhold below {fmt(policy.withhold_below, 3)}, and ask a person in "
                 "between")
    return f"Answer when the score is at least {fmt(policy.answer_at, 3)}; {below}."


def _coverage_html(preview: Preview) -> str:
    """What the thresholds do on the calibration labels."""
    c = preview.policy.calibration if preview.policy else None
    if c is None or not c.labels:
        return ""
    rows = [["answered", str(c.answered), percent(c.answered / c.labels)],
            ["asked a person (deferred)", str(c.deferred), percent(c.deferred / c.labels)],
            ["withheld", str(c.withheld), percent(c.withheld / c.labels)]]
    risk = ("" if c.risk is None else
            f"Wrong among the answered: {fmt(c.risk, 3)} ({c.bad_answered} of {c.answered}).")
    return table_html(Table("Coverage on the calibration labels", ["outcome", "labels", "share"],
                            rows, risk))


def _labels_text(preview: Preview) -> str:
    kinds = ", ".join(f"{preview.labels[kind]} from {words}" for kind, words in KINDS.items())
    text = f"Calibration labels: {preview.calibration_size} ({kinds})"
    if preview.unscored:
        text += f"; the judge gave {preview.unscored} of them no score (a policy defers those)"
    authors = preview.authors
    if authors.people:
        shown = ", ".join(f"{name} ({count})" for name, count in list(authors.people.items())[:5])
        more = len(authors.people) - 5
        text += f". People's labels are by {shown}" + (f" and {more} more" if more > 0 else "")
        if authors.by_sentences:
            text += (f"; {authors.by_sentences} of these answers were judged by their "
                     "sentence labels (every sentence supported, or one not)")
    if preview.trained_on:
        text += (f". The stacked judge learnt from {preview.trained_on} other labels, kept "
                 "apart from these")
    if preview.holdout:
        text += (f". A random {percent(preview.holdout)} of the samples is kept apart: it "
                 "watches the promise once the policy is saved")
    return text + "."


def preview_html(context: UiContext, run_id: Any, judge: str | None, alpha: Any, delta: Any,
                 beta: Any = None) -> str:
    """The promise in words, the labels it rests on by kind, the coverage it buys and the
    calibration scores under its bands; or why no threshold keeps it. Nothing is stored."""
    try:
        if not judge:
            raise UserError("Choose a judge first.")
        run = _run(run_id)
        preview = preview_policy(context.store, run, judge,
                                 alpha=_share(alpha, "alpha"), delta=_share(delta, "delta"),
                                 beta=_share(beta, "beta", optional=True),
                                 tables=context.tables.get(run, "human"))
    except UserError as error:
        return message_html(str(error), "error")
    parts = [f"<h2>Preview: {esc(judge)} on run {run} (not saved)</h2>",
             f'<p class="rs-promise"><b>Promise:</b> {esc(preview.promise)}</p>',
             f'<p class="note">{esc(_labels_text(preview))}</p>']
    if preview.policy is not None:
        parts += [f"<p>{esc(_thresholds(preview.policy))}</p>", _coverage_html(preview)]
    else:
        more = (f": it needs about {preview.more_labels} more labels at the current error rate"
                if preview.more_labels is not None else "")
        parts += [message_html(f"No threshold keeps this promise on these labels{more}.",
                               "warning"),
                  message_html(str(preview.problem), "error")]
    figure = _png_html(preview.histogram, "calibration scores")
    return f'<div class="rs-dashboard">{"".join(parts)}<div class="rs-figures">{figure}</div></div>'


def save_html(context: UiContext, run_id: Any, judge: str | None, alpha: Any, delta: Any,
              beta: Any, name: str | None, by: str | None = None) -> str:
    """Fit as previewed and store the policy as the next version of `name` (with logins, an
    admin's action: an API key that names the policy decides by its newest version)."""
    try:
        require_admin(context.store, context.access, by, "save policies")
        if not judge:
            raise UserError("Choose a judge first.")
        if not (name or "").strip():
            raise UserError("Type a name for the policy first.")
        run = _run(run_id)
        policy = fit_run_policy(context.store, run, judge, (name or "").strip(),
                                alpha=_share(alpha, "alpha"), delta=_share(delta, "delta"),
                                beta=_share(beta, "beta", optional=True),
                                tables=context.tables.get(run, "human"))
    except UserError as error:
        return message_html(str(error), "error")
    return message_html(f"Saved {policy.rule}. {policy.promise()} Wherever it decides, its "
                        f"judges read as in this run: {policy.readers_words()}. Pin it below "
                        "to make it the default rule.")


def saved_html(context: UiContext, run_id: Any) -> str:
    """The saved versions, with the risk each shows on the run and the pinned one."""
    try:
        tables = context.tables.get(_run(run_id), "human")
        table = versions_table(context.store, tables, tables.config["dataset"])
    except UserError as error:
        return message_html(str(error), "error")
    return f'<div class="rs-dashboard">{table_html(table)}</div>'


def version_choices(context: UiContext) -> tuple[list[str], str | None]:
    """Every stored version (policy:NAME@VERSION), and the one to select: the pinned one,
    else the newest saved."""
    pin = pinned(context.store)
    policies = list_policies(context.store)
    newest = max(policies, key=lambda policy: policy.created_at, default=None)
    return ([policy.rule for policy in policies],
            pin.rule if pin is not None else newest.rule if newest is not None else None)


def pin_html(context: UiContext, rule: str | None, by: str | None = None) -> str:
    """Make the version the default rule of the Demo and the API (with logins, an admin's
    action)."""
    try:
        require_admin(context.store, context.access, by, "pin policies")
        pin = pin_policy(context.store, rule or "", by)
    except UserError as error:
        return message_html(str(error), "error")
    return message_html(f"{pin.rule} is now the default rule of the Demo and the API (and of "
                        "runs started without a rule).")


def unpin_html(context: UiContext, by: str | None = None) -> str:
    """Back to the configured default rule (with logins, an admin's action)."""
    try:
        require_admin(context.store, context.access, by, "unpin policies")
    except UserError as error:
        return message_html(str(error), "error")
    unpin(context.store)
    configured = default_rule(context.settings, context.store)
    return message_html(f"No policy is pinned: the default rule is {configured.rule} again "
                        f"({configured.reason}).")


def watch_html(context: UiContext, run_id: Any) -> str:
    """Each policy in use: observed risk on the run's labels it was not fitted on, as they
    came, with its 95% interval, against the promise."""
    try:
        tables = context.tables.get(_run(run_id), "human")
        curves = watch_curves(context.store, tables, tables.config["dataset"])
    except UserError as error:
        return message_html(str(error), "error")
    if not curves:
        return message_html("No policy in use reads this run's judges, or none has labels it "
                            "was not fitted on here yet.")
    images = "".join(_png_html(curve.png, f"watch {curve.policy.rule}") for curve in curves)
    return ('<div class="rs-dashboard"><h2>The watch: promised and observed risk</h2>'
            '<p class="note">The pinned policy and the newest version of each other policy '
            "whose judges scored this run. A breach: the whole interval above the promise "
            f'line.</p><div class="rs-figures">{images}</div></div>')


# -- wiring -----------------------------------------------------------------------------

def build_policy_panel(context: UiContext, run_picker: gr.Dropdown) -> None:
    """The "Policy" accordion, on the run chosen in `run_picker`; it reads the run only
    while open."""
    with gr.Accordion("Policy", open=False) as accordion:
        gr.Markdown(INTRO)
        with gr.Row():
            judge = gr.Dropdown(choices=[], value=None, label="Judge (its score decides)",
                                allow_custom_value=True)
            alpha = gr.Number(value=DEFAULT_ALPHA, label="alpha: at most this share of the "
                                                          "answers shown are wrong")
            delta = gr.Number(value=DEFAULT_DELTA, label="delta: ... with confidence 1 - delta")
            beta = gr.Number(value=None, label="beta (optional, 0: none): at most this share "
                                               "of the withheld were good")
        with gr.Row():
            preview_button = gr.Button("Preview", variant="primary")
            name = gr.Textbox(label="Policy name", placeholder="e.g. support-bot")
            save_button = gr.Button("Save as policy")
        save_message = gr.HTML()
        preview_out = gr.HTML(elem_id="dashboard-policy-preview")
        saved_out = gr.HTML(elem_id="dashboard-policy-versions")
        with gr.Row():
            version = gr.Dropdown(choices=[], value=None, label="Version",
                                  allow_custom_value=True)
            pin_button = gr.Button("Pin as the default rule")
            unpin_button = gr.Button("Unpin")
        pin_message = gr.HTML()
        watch_out = gr.HTML(elem_id="dashboard-policy-watch")
    opened = gr.State(False)

    def versions() -> gr.Dropdown:
        choices, value = version_choices(context)
        return gr.Dropdown(choices=choices, value=value)

    def shown(run_id: Any, chosen: str | None) -> tuple:
        choices = judge_choices(context, run_id)
        value = chosen if chosen in choices else (choices[0] if choices else None)
        return (gr.Dropdown(choices=choices, value=value), saved_html(context, run_id),
                versions(), watch_html(context, run_id))

    def on_open(run_id: Any, chosen: str | None) -> tuple:
        return (True, *shown(run_id, chosen))

    def on_run(run_id: Any, chosen: str | None, is_open: bool) -> tuple:
        return shown(run_id, chosen) if is_open else (gr.skip(),) * 4

    def on_save(run_id, judge_name, alpha_value, delta_value, beta_value, policy_name,
                request: gr.Request) -> tuple:
        return (save_html(context, run_id, judge_name, alpha_value, delta_value, beta_value,
                          policy_name, getattr(request, "username", None)),
                saved_html(context, run_id), versions())

    def on_pin(run_id: Any, rule: str | None, request: gr.Request) -> tuple:
        message = pin_html(context, rule, getattr(request, "username", None))
        return message, saved_html(context, run_id), watch_html(context, run_id)

    def on_unpin(run_id: Any, request: gr.Request) -> tuple:
        return (unpin_html(context, getattr(request, "username", None)),
                saved_html(context, run_id), watch_html(context, run_id))

    refreshed = [judge, saved_out, version, watch_out]
    accordion.expand(on_open, [run_picker, judge], [opened, *refreshed],
                     api_visibility="private")
    accordion.collapse(lambda: False, outputs=opened, api_visibility="private")
    run_picker.change(on_run, [run_picker, judge, opened], refreshed, api_visibility="private",
                      trigger_mode="always_last")
    form = [run_picker, judge, alpha, delta, beta]
    preview_button.click(lambda *values: preview_html(context, *values), form, preview_out,
                         api_visibility="private")
    save_button.click(on_save, [*form, name], [save_message, saved_out, version],
                      api_visibility="private")
    pin_button.click(on_pin, [run_picker, version], [pin_message, saved_out, watch_out],
                     api_visibility="private")
    unpin_button.click(on_unpin, run_picker, [pin_message, saved_out, watch_out],
                       api_visibility="private")
