"""The People panel at the bottom of the Annotate tab: everyone who labels or may log in, with their
role, where their login comes from, their labels, their progress on a dataset and their agreement
with each of the others there (Cohen's kappa on the samples both labelled). An admin, or anyone in
an app without logins, also gets a form to add a person and to change, disable or enable a login
added in the app; the others see the table only (and services/annotation/people.py refuses them
anyway). The rules live in services/annotation/people.py."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ragshield.errors import UserError
from ragshield.services.annotation import people as people_service
from ragshield.services.annotation.labelling import default_dataset
from ragshield.services.annotation.people import ACCOUNT_ROLES, ANNOTATOR, FROM_APP, Person
from ragshield.services.data.datasets import dataset_names
from ragshield.services.rendering import fmt
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import message_html, table_html
from ragshield.ui.login_gate import end_sessions

COLUMNS = ["person", "role", "login", "labels (all datasets)", "progress here",
           "mean kappa with the others", "kappa with each (samples both labelled)"]
EVENTS: dict[str, Any] = {"queue": False, "api_visibility": "private"}


def _login(request: Any) -> str | None:
    return getattr(request, "username", None)


# -- rendering ------------------------------------------------------------------------------

def _role_text(person: Person) -> str:
    role = person.role or "-"
    return f"{role} (disabled)" if person.disabled else role


def _progress_text(person: Person) -> str:
    done = person.progress
    skipped = f", {done.skipped} skipped" if done.skipped else ""
    return f"{done.labelled} of {done.total} labelled{skipped}"


def _pairs_text(person: Person) -> str:
    return " · ".join(f"{other} {fmt(pair.kappa, 2)} on {pair.shared}"
                      for other, pair in sorted(person.agreement.items())) or "none shared"


def people_table(people: list[Person]) -> str:
    """The table of everyone, every cell escaped."""
    if not people:
        return message_html("Nobody has labelled or may log in yet.")
    return table_html(COLUMNS, [[person.name, _role_text(person), person.login or "none",
                                 person.labels, _progress_text(person),
                                 fmt(person.mean_kappa, 2), _pairs_text(person)]
                                for person in people], table_id="people-table")


def _listing(context: UiContext, dataset: str) -> tuple[str, list[str]]:
    """(the table's HTML, the names of the logins the app may change)."""
    try:
        people = people_service.list_people(context.store, context.access, dataset)
    except UserError as error:
        return message_html(str(error), "error"), []
    return people_table(people), [p.name for p in people if p.login == FROM_APP]


# -- handlers -------------------------------------------------------------------------------

def people_html(context: UiContext, dataset: str) -> str:
    """Everyone with what they did in `dataset`, or why that cannot be shown."""
    return _listing(context, dataset)[0]


def may_manage(context: UiContext, request: Any) -> bool:
    """Whether the form to manage people is shown to the person behind `request`."""
    return people_service.caller_may_manage(context.store, context.access, _login(request))


def whoami_html(context: UiContext, request: Any) -> str:
    """A line saying who the viewer is and what they may do here."""
    if not context.access.logins:
        return message_html("The app runs without logins: whoever uses it may manage people. "
                            "The logins added here are used once it runs with --auth FILE.")
    name = _login(request)
    role = people_service.role_of(context.store, context.access.file_roles, name)
    if people_service.may_manage(True, role):
        return message_html(f"You are logged in as {name}, an admin.")
    return message_html(f"You are logged in as {name}. Only an admin may add people or change "
                        "their logins.")


def _after(context: UiContext, dataset: str, done: str) -> tuple[str, str, Any]:
    table, names = _listing(context, dataset)
    return message_html(done), table, gr.update(choices=names)


def _refused(error: UserError | str) -> tuple[str, Any, Any]:
    return message_html(str(error), "error"), gr.skip(), gr.skip()


NOBODY_CHOSEN = "Choose a person first."


def add_person(context: UiContext, name: str, password: str, role: str, dataset: str,
               request: Any = None) -> tuple[str, Any, Any]:
    """Add a login; (message, table, choices of the logins the app may change)."""
    try:
        added = people_service.add_person(context.store, context.access, name, password, role,
                                          _login(request))
    except UserError as error:
        return _refused(error)
    return _after(context, dataset, f"Added {added} as {role}: they can log in now.")


def change_role(context: UiContext, name: str | None, role: str, dataset: str,
                request: Any = None) -> tuple[str, Any, Any]:
    if not name:
        return _refused(NOBODY_CHOSEN)
    try:
        people_service.set_role(context.store, context.access, name, role, _login(request))
    except UserError as error:
        return _refused(error)
    return _after(context, dataset, f"{name} is now {role}.")


def set_disabled(context: UiContext, name: str | None, disabled: bool, dataset: str,
                 request: Any = None) -> tuple[str, Any, Any]:
    if not name:
        return _refused(NOBODY_CHOSEN)
    try:
        people_service.set_disabled(context.store, context.access, name, disabled,
                                    _login(request))
    except UserError as error:
        return _refused(error)
    done = (f"{name} can no longer log in (their labels stay){_logged_out(request, name)}"
            if disabled else f"{name} can log in again.")
    return _after(context, dataset, done)


def _logged_out(request: Any, name: str) -> str:
    """The end of a sentence: `name` logged out of every open session, and how many."""
    ended = end_sessions(request, name)
    return f"; {ended} open session{'s' if ended != 1 else ''} ended." if ended else "."


def reset_password(context: UiContext, name: str | None, password: str, dataset: str,
                   request: Any = None) -> tuple[str, Any, Any]:
    if not name:
        return _refused(NOBODY_CHOSEN)
    try:
        people_service.reset_password(context.store, context.access, name, password or "",
                                      _login(request))
    except UserError as error:
        return _refused(error)
    return _after(context, dataset, f"{name} has a new password{_logged_out(request, name)}")


# -- the panel ------------------------------------------------------------------------------

def build(context: UiContext, page: gr.Blocks) -> None:
    """The accordion and its events, inside the Annotate tab of `page` (whose load event
    it leaves alone: the panel reads the store when it opens)."""
    names = dataset_names(context.store)
    with gr.Accordion("People", open=False, elem_id="people") as accordion:
        whoami = gr.HTML(elem_id="people-whoami")
        with gr.Row():
            dataset_box = gr.Dropdown(names, value=default_dataset(names),
                                      allow_custom_value=True, label="Progress and agreement on",
                                      elem_id="people-dataset", scale=3)
            refresh = gr.Button("Refresh", elem_id="people-refresh", scale=1)
        table = gr.HTML(elem_id="people-table-view")
        with gr.Column(visible=False, elem_id="people-manage") as manage:
            message = gr.HTML(elem_id="people-message")
            gr.Markdown("**Add a person** (a password of at least 8 characters)")
            with gr.Row():
                new_name = gr.Textbox(label="Name", elem_id="people-new-name")
                new_password = gr.Textbox(label="Password", type="password",
                                          elem_id="people-new-password")
                new_role = gr.Radio(list(ACCOUNT_ROLES), value=ANNOTATOR, label="Role",
                                    elem_id="people-new-role")
                add = gr.Button("Add", variant="primary", elem_id="people-add")
            gr.Markdown("**Change a login added in the app** (the auth file's are changed "
                        "in the file)")
            with gr.Row():
                person = gr.Dropdown([], label="Person", elem_id="people-person")
                role = gr.Radio(list(ACCOUNT_ROLES), value=ANNOTATOR, label="Role",
                                elem_id="people-role")
                set_role = gr.Button("Set role", elem_id="people-set-role")
                disable = gr.Button("Disable", variant="stop", elem_id="people-disable")
                enable = gr.Button("Enable", elem_id="people-enable")
            with gr.Row():
                reset = gr.Textbox(label="New password for this person", type="password",
                                   elem_id="people-reset-password")
                set_password = gr.Button("Set password", elem_id="people-set-password")

    def on_open(dataset: str, request: gr.Request):
        """Read when the accordion opens, not with every page: the table reads every label."""
        listing, logins = _listing(context, dataset)
        return (whoami_html(context, request), gr.update(choices=dataset_names(context.store)),
                listing, gr.update(visible=may_manage(context, request)),
                gr.update(choices=logins))

    def on_add(name, password, new_role, dataset, request: gr.Request):
        return *add_person(context, name, password, new_role, dataset, request), ""

    def on_role(name, new_role, dataset, request: gr.Request):
        return change_role(context, name, new_role, dataset, request)

    def on_disabled(disabled: bool):
        def handler(name, dataset, request: gr.Request):
            return set_disabled(context, name, disabled, dataset, request)
        return handler

    outputs = [message, table, person]
    accordion.expand(on_open, dataset_box, [whoami, dataset_box, table, manage, person],
                     **EVENTS)
    gr.on([refresh.click, dataset_box.input], lambda dataset: people_html(context, dataset),
          dataset_box, table, trigger_mode="always_last", **EVENTS)
    add.click(on_add, [new_name, new_password, new_role, dataset_box],
              [*outputs, new_password], **EVENTS)
    set_role.click(on_role, [person, role, dataset_box], outputs, **EVENTS)
    disable.click(on_disabled(True), [person, dataset_box], outputs, **EVENTS)
    enable.click(on_disabled(False), [person, dataset_box], outputs, **EVENTS)
    def on_password(name, password, dataset, request: gr.Request):
        return *reset_password(context, name, password, dataset, request), ""

    set_password.click(on_password, [person, reset, dataset_box], [*outputs, reset], **EVENTS)

