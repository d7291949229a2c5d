"""The People panel of the Annotate tab (ui/people_panel.py): its handlers on a real store,
without a browser, for an admin, an annotator and an app without logins."""

from __future__ import annotations

from types import SimpleNamespace

from dataclasses import dataclass

import gradio as gr
import pytest

from ragshield.services.annotation.passwords import password_matches
from ragshield.services.annotation.people import ADMIN, ANNOTATOR, Access, Logins
from ragshield.store.accounts import account
from ragshield.store.labels import add_annotator, add_label
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.ui import people_panel
from ragshield.ui.context import UiContext

PASSWORD = "correct horse"
HOSTILE = "<script>alert('x')</script>"
ERROR = 'class="rs-msg rs-msg-error"'
SKIP = gr.skip()


@dataclass
class FakeRequest:
    """What the handlers read from a gr.Request: the login name (None without --auth)."""
    username: str | None


ROOT, ANN, NOBODY = FakeRequest("root"), FakeRequest("ann"), FakeRequest(None)


def make_context(store, settings, access: Access) -> UiContext:
    import_samples(store, "toy", [Sample(id=f"s{i}", question="q?", passages=[Passage(text="p")])
                                  for i in range(3)])
    return UiContext(settings=settings, store=store, access=access)


@pytest.fixture
def with_logins(store, settings) -> UiContext:
    return make_context(store, settings, Access(logins=True,
                                                file_roles={"root": ADMIN, "ann": ANNOTATOR}))


@pytest.fixture
def local(store, settings) -> UiContext:
    return make_context(store, settings, Access())


def test_the_table_shows_everyone_and_escapes_names(with_logins: UiContext) -> None:
    for name, label in ((HOSTILE, "answerable"), ("ann", "answerable")):
        add_annotator(with_logins.store, name)
        add_label(with_logins.store, "toy", "s0", name, label)
    html = people_panel.people_html(with_logins, "toy")
    assert HOSTILE not in html and "&lt;script&gt;" in html
    assert 'id="people-table"' in html
    row = html.split("<td>ann</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td>annotator</td><td>auth file</td><td>1</td><td>1 of 3 labelled</td>" in row
    assert "on 1" in row  # one sample shared with the hostile name


def test_an_unknown_dataset_is_an_error_message(with_logins: UiContext) -> None:
    html = people_panel.people_html(with_logins, "nope")
    assert ERROR in html and "nope" in html


def test_only_admins_see_the_form_but_everyone_without_logins(with_logins: UiContext,
                                                              local: UiContext) -> None:
    assert people_panel.may_manage(with_logins, ROOT)
    assert not people_panel.may_manage(with_logins, ANN)
    assert not people_panel.may_manage(with_logins, NOBODY)
    assert people_panel.may_manage(local, NOBODY)
    assert "an admin" in people_panel.whoami_html(with_logins, ROOT)
    assert "Only an admin may" in people_panel.whoami_html(with_logins, ANN)
    assert "without logins" in people_panel.whoami_html(local, NOBODY)


def test_an_admin_adds_a_person_who_can_then_log_in(with_logins: UiContext) -> None:
    message, table, choices = people_panel.add_person(with_logins, "eve", PASSWORD, ADMIN,
                                                      "toy", ROOT)
    assert "Added eve as admin" in message and ERROR not in message
    assert "<td>eve</td><td>admin</td><td>app</td>" in table
    assert choices["choices"] == ["eve"]  # the logins the panel may change
    assert Logins(with_logins.store, {}).check("eve", PASSWORD)


def test_a_non_admin_is_refused_and_nothing_is_stored(with_logins: UiContext) -> None:
    message, table, choices = people_panel.add_person(with_logins, "mallory", PASSWORD, ADMIN,
                                                      "toy", ANN)
    assert ERROR in message and "Only an admin may add people." in message
    assert table == SKIP and choices == SKIP
    assert account(with_logins.store, "mallory") is None


def test_roles_and_disabling_through_the_panel(with_logins: UiContext) -> None:
    people_panel.add_person(with_logins, "eve", PASSWORD, ANNOTATOR, "toy", ROOT)
    message, table, _ = people_panel.change_role(with_logins, "eve", ADMIN, "toy", ROOT)
    assert "eve is now admin." in message and "<td>eve</td><td>admin</td>" in table
    # eve is logged in in two browsers; root in one (Gradio's session tokens).
    tokens = {"t1": "eve", "t2": "root", "t3": "eve"}
    by_root = SimpleNamespace(username="root",
                              request=SimpleNamespace(app=SimpleNamespace(tokens=tokens)))
    message, table, _ = people_panel.set_disabled(with_logins, "eve", True, "toy", by_root)
    assert "can no longer log in" in message and "<td>admin (disabled)</td>" in table
    assert "2 open sessions ended" in message and tokens == {"t2": "root"}
    assert not Logins(with_logins.store, {}).check("eve", PASSWORD)
    message, _, _ = people_panel.set_disabled(with_logins, "eve", False, "toy", ROOT)
    assert "can log in again" in message
    assert Logins(with_logins.store, {}).check("eve", PASSWORD)
    # A forgotten password: an admin sets a new one; the old one no longer logs in.
    tokens["t4"] = "eve"
    message, _, _ = people_panel.reset_password(with_logins, "eve", "another-secret", "toy",
                                                by_root)
    assert "eve has a new password; 1 open session ended." in message and "t4" not in tokens
    assert Logins(with_logins.store, {}).check("eve", "another-secret")
    assert not Logins(with_logins.store, {}).check("eve", PASSWORD)
    for refused in (people_panel.reset_password(with_logins, "eve", "short", "toy", ROOT)[0],
                    people_panel.reset_password(with_logins, "eve", "another-one", "toy",
                                                ANN)[0]):
        assert ERROR in refused
    assert Logins(with_logins.store, {}).check("eve", "another-secret")
    refused, _, _ = people_panel.set_disabled(with_logins, "ann", True, "toy", ROOT)
    assert ERROR in refused and "logs in with the auth file" in refused
    for handler in (lambda: people_panel.change_role(with_logins, None, ADMIN, "toy", ROOT),
                    lambda: people_panel.set_disabled(with_logins, "", True, "toy", ROOT)):
        assert "Choose a person first." in handler()[0]


def test_without_logins_the_local_user_adds_people(local: UiContext) -> None:
    message, _, _ = people_panel.add_person(local, "eve", PASSWORD, ANNOTATOR, "toy", NOBODY)
    assert "Added eve" in message
    found = account(local.store, "eve")
    assert found.created_by is None and password_matches(PASSWORD, found.password_hash)
    short, _, _ = people_panel.add_person(local, "frank", "short", ANNOTATOR, "toy", NOBODY)
    assert ERROR in short and "at least 8 characters" in short


def test_the_panel_offers_no_api_endpoint(local: UiContext) -> None:
    """Passwords travel through its events: none of them is callable by an API client."""
    with gr.Blocks() as page:
        people_panel.build(local, page)
    assert page.get_api_info()["named_endpoints"] == {}
    assert len(page.fns) == 7
