"""Helpers of the web app's tests: its endpoints, a Gradio client on the dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import gradio as gr
from gradio_client import Client

from ragshield.ui import dashboard_tab
from tests.conftest import free_port

ENDPOINTS = {
    "/demo_ask", "/demo_samples", "/demo_rules", "/demo_all_judges", "/demo_fast_judges",
    "/demo_runs", "/demo_threshold_judges", "/demo_threshold_judge", "/demo_threshold",
    "/annotate_next", "/annotate_skip", "/annotate_undo", "/annotate_label",
    "/annotate_progress", "/annotate_guidelines", "/annotate_guidelines_save",
    "/browse_runs", "/browse_filter", "/browse_detail",
    "/dashboard_refresh", "/dashboard_live_refresh", "/dashboard_runs", "/dashboard_progress",
    "/dashboard_datasets", "/dashboard_live", "/dashboard_start_run",
}


@contextmanager
def dashboard_client(context) -> Iterator[Client]:
    """The Dashboard tab alone, launched on a free port, and a gradio_client on it."""
    with gr.Blocks() as app, gr.Tab(dashboard_tab.TITLE) as tab:
        dashboard_tab.build(context, app, tab)
    app.queue()
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield Client(f"http://127.0.0.1:{port}/", verbose=False)
    finally:
        app.close()
