"""The Dashboard tab."""

from __future__ import annotations

import gradio as gr

from ragshield.ui.context import UiContext

TITLE = "Dashboard"
CSS = ""
HEAD = ""


def build(context: UiContext) -> None:
    """Components and events of the tab (called inside its gr.Tab)."""
    gr.Markdown("Dashboard: not built yet.")
