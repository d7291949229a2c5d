"""Pickers refreshed when a page loads or a tab opens send nothing when the page shows those
choices already (a choices update landing during a pick loses the pick in the browser), and
the listeners that a person's inputs trigger in a row run for the newest one (Gradio drops a
trigger that comes while its listener is pending, unless it is "always_last")."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pytest

from ragshield.services.data.datasets import dataset_names, ensure_demo_dataset
from ragshield.ui.app import build_app
from ragshield.ui.picker_refresh import datasets_unless_shown, shown_choices, unless_shown

SKIP = gr.skip()


def test_the_same_choices_send_nothing_and_new_ones_are_remembered() -> None:
    shown = shown_choices(["a", "b"], [("run 1", 1)])
    same = unless_shown(shown, gr.update(choices=["a", "b"]),
                        gr.update(choices=[("run 1", 1)], value=1))
    assert same == (SKIP, SKIP, shown)

    datasets, runs = gr.update(choices=["a", "b", "c"]), gr.update(choices=[("run 1", 1)])
    assert unless_shown(shown, datasets, runs) == (
        datasets, runs, [["a", "b", "c"], [("run 1", 1)]])
    # None: the page's choices are not known (a named endpoint, a forced refresh)
    assert unless_shown(None, runs) == (runs, [[("run 1", 1)]])


def test_the_store_datasets_are_compared_with_what_the_page_shows(sqlite_store) -> None:
    store = sqlite_store
    ensure_demo_dataset(store)
    names = dataset_names(store)
    assert names == ["demo"]
    assert datasets_unless_shown(store, shown_choices(names, names), pickers=2) == (
        SKIP, SKIP, [names, names])
    update, second, now = datasets_unless_shown(store, shown_choices(names[1:], names),
                                                pickers=2)
    assert update["choices"] == second["choices"] == names and now == [names, names]


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> dict[str, Any]:
    from ragshield.config import Settings

    home = tmp_path_factory.mktemp("picker-app")
    settings = Settings(database_url=f"sqlite:///{home / 'app.db'}")
    return build_app(settings).get_config_file()


def _types(config: dict[str, Any]) -> dict[int, str]:
    return {component["id"]: component["type"] for component in config["components"]}


def test_every_automatic_picker_refresh_keeps_what_the_page_shows(config) -> None:
    """A listener of a page load or a tab opening that updates a dropdown also reads and
    writes a state (the choices shown), so that it can send nothing when they are the same."""
    types = _types(config)
    tabs = {id_ for id_, kind in types.items() if kind == "tabitem"}
    automatic = [dep for dep in config["dependencies"]
                 if any(event == "load" or (event == "select" and target in tabs)
                        for target, event in dep["targets"])]
    refreshing = [dep for dep in automatic
                  if any(types.get(out) == "dropdown" for out in dep["outputs"])]
    assert len(refreshing) >= 6  # Demo, Annotate (load and tab), Browse, Data, Dashboard
    for dep in refreshing:
        states = {out for out in dep["outputs"] if types.get(out) == "state"}
        assert states & set(dep["inputs"]), (dep.get("api_name"), dep["targets"])


@pytest.mark.parametrize("api_name", ["annotate_next", "annotate_remember_name", "browse_runs"])
def test_a_persons_inputs_in_a_row_run_for_the_newest(config, api_name) -> None:
    dep = next(dep for dep in config["dependencies"] if dep.get("api_name") == api_name)
    assert dep["trigger_mode"] == "always_last"
