"""Refreshing pickers' choices when a page loads or a tab opens, without losing a pick.

A choices update that reaches Gradio's dropdown while a person is picking puts the earlier
value back, and the pick's own event never fires: the pick is lost without a word (seen in
the browser tests on a busy machine, about one tab opening in seven). Most of these
refreshes would change nothing, so a page keeps the choices its pickers show (a `gr.State`,
built with `shown_choices`) and a refresh that finds the same choices sends nothing.
Refreshes a person asks for (a Refresh button, a named API endpoint) always answer."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ragshield.services.data.datasets import dataset_names
from ragshield.services.database import Store


def shown_choices(*choices: list) -> list[list]:
    """The state's value for pickers built with `choices` (one list per picker)."""
    return [list(each) for each in choices]


def unless_shown(shown: list | None, *updates: dict[str, Any]) -> tuple:
    """The pickers' `updates` (gr.update with choices), then the choices the page shows
    after them; skips in the updates' place when the page shows those choices already."""
    now = shown_choices(*(update["choices"] for update in updates))
    if now == shown:
        return (*[gr.skip()] * len(updates), shown)
    return (*updates, now)


def datasets_unless_shown(store: Store, shown: list | None, pickers: int = 1) -> tuple:
    """`unless_shown` for `pickers` pickers of the store's dataset names."""
    names = dataset_names(store)
    return unless_shown(shown, *[gr.update(choices=names)] * pickers)
