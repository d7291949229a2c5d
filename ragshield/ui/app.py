"""build_app(settings): the Gradio app, five tabs over one store. The tabs only wire
library functions (the same ones the CLI calls) to components; each tab lives in its own
module with its handlers as plain functions, tested without a browser. A tab module
exposes TITLE, CSS (its stylesheet), HEAD (scripts for the page head) and
build(context, page, tab), which makes its components inside its gr.Tab `tab`; what one tab
changes that another shows (a dataset uploaded, a policy pinned, a run started) the other
re-reads when it is opened (`tab.select`) as well as at the page's load."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from ragshield.config import Settings
from ragshield.services.annotation.people import Access, caller_may_manage
from ragshield.services.database import Store, open_store
from ragshield.services.questions.asking import OpenedModels
from ragshield.ui import annotate_tab, browse_tab, dashboard_tab, data_tab, demo_tab
from ragshield.ui.context import UiContext
from ragshield.ui.html_render import CLAIM_CSS
from ragshield.ui.login_gate import LoginGate
from ragshield.ui.login_throttle import ThrottleLogins
from ragshield.ui.quiet_queue import QuietBlocks
from ragshield.ui.upload_gate import UploadBounds, UploadGate
from ragshield.ui.uploaded_files import UploadedFilesOnly

TABS = (demo_tab, annotate_tab, browse_tab, dashboard_tab, data_tab)

BASE_CSS = """
.rs-msg { padding: 0.5em 0.8em; border-radius: 6px; margin: 0.3em 0; }
.rs-msg-info { background: #eef4ff; }
.rs-msg-warning { background: #fff6e0; }
.rs-msg-error { background: #ffecec; color: #8a1010; }
.rs-table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
.rs-table th, .rs-table td { border: 1px solid #ddd; padding: 3px 6px; text-align: left;
  vertical-align: top; }
""" + CLAIM_CSS  # unsupported sentences are marked in the Demo, Browse and Annotate alike


class AppBlocks(UploadedFilesOnly, QuietBlocks):
    """The app's Blocks: its queue quiet while idle (quiet_queue.py), its events given only
    files uploaded to it (uploaded_files.py)."""


def build_app(settings: Settings, store: Store | None = None,
              models: OpenedModels | None = None,
              model_lock: threading.Lock | None = None,
              access: Access | None = None) -> gr.Blocks:
    """The app on `settings` (and `store`, opened from settings.database_url if not given).
    The demo dataset and the shipped demo run are loaded into an empty database first (the
    run only where the database holds no run). A server that also serves the
    guard API passes the models and the lock on them that the API uses, so that the two
    take turns at the one in-process model; one with logins passes their `access` (who
    may manage people and data)."""
    from ragshield.services.data.demo_run import load_demo_run

    store = store or open_store(settings.database_url)
    load_demo_run(store)
    context = UiContext(settings=settings, store=store,
                        model_lock=model_lock or threading.Lock(), access=access or Access())
    if models is not None:
        context.models = models
    with AppBlocks(title="ragshield") as app:
        gr.Markdown("# ragshield\nRisk control for retrieval-augmented question answering: "
                    "does the answer deserve to be shown, or should the system say "
                    "\"I don't know\"?")
        with gr.Tabs() as tabs:
            for tab in TABS:
                with gr.Tab(tab.TITLE, id=tab.TITLE.lower(),
                            elem_id=f"tab-{tab.TITLE.lower()}") as shown:
                    tab.build(context, app, shown)
        app.load(_tab_of_link, None, tabs, api_visibility="private")
    return app


def _tab_of_link(request: gr.Request) -> Any:
    """Browse, for a page link to a case study (`?run=R&sample=ID`); else no change."""
    return gr.Tabs(selected="browse") if "sample" in request.query_params else gr.update()


def launch_options(settings: Settings, store: Store,
                   access: Access | None = None) -> dict[str, Any]:
    """Page-level options (Gradio 6 takes them in launch()): the stylesheet of every tab,
    the scripts in the page head (the Annotate hotkeys), and the middleware that keeps the
    app behind its logins (login_gate, login_throttle; both idle without logins) and
    bounds its uploads (upload_gate: with logins, admins only). Pages are rendered by
    Python, not by Gradio's Node server, which would stand in front of that middleware and
    give every client its address."""
    css = BASE_CSS + "".join(tab.CSS for tab in TABS)
    head = "".join(tab.HEAD for tab in TABS)
    may_upload = partial(caller_may_manage, store, access or Access())
    middleware = [Middleware(LoginGate), Middleware(ThrottleLogins),
                  Middleware(UploadGate, may_upload=may_upload,
                             bounds=UploadBounds.of(settings))]
    return {"css": css, "head": head, "ssr_mode": False,
            # An upload over the Data tab's limit is refused as it arrives, not once stored.
            "max_file_size": settings.upload_max_bytes,
            "app_kwargs": {"middleware": middleware}}
