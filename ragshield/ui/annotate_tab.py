"""The Annotate tab."""

from __future__ import annotations

import gradio as gr

from ragshield.ui.context import UiContext

TITLE = "Annotate"
CSS = ""
HEAD = ""


def build(context: UiContext) -> None:
    """Components and events of the tab (called inside its gr.Tab)."""
    gr.Markdown("Annotate: not built yet.")
