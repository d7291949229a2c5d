"""`ragshield app` and `ragshield serve`: the web app and the guard API (/v1, its OpenAPI
page at /v1/docs) in one server, on the embedded defaults and the demo dataset. The one module
of a face that imports the other two faces: it mounts the web app on the API's server.

With --auth, annotators log in and their labels carry their login name; admins (a role in
the auth file, or given in the app) add people and delete data. With --api-only
the server serves the API alone. The API needs keys (--api-keys, or RAGSHIELD_API_KEYS)
unless it serves on a loopback address. --upstream is the OpenAI-compatible endpoint that
POST /v1/chat/completions forwards to (or RAGSHIELD_UPSTREAM_BASE_URL; its key in
RAGSHIELD_UPSTREAM_API_KEY)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ragshield.cli.errors import fail

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ragshield.services.shield import Shield

Host = Annotated[str, typer.Option("--host", help="The address to serve on.")]
Port = Annotated[int, typer.Option("--port", help="The port to serve on.")]
Auth = Annotated[Optional[Path], typer.Option(
    "--auth", help="A file of name:password[:admin] lines; annotators must log in.")]
ApiKeys = Annotated[Optional[Path], typer.Option(
    "--api-keys", help="A file of API keys, one per line.")]
Upstream = Annotated[Optional[str], typer.Option(
    "--upstream", help="The OpenAI-compatible base URL the proxy forwards to.")]


def web_app(host: Host = "127.0.0.1", port: Port = 7860, auth: Auth = None,
            api_keys: ApiKeys = None, upstream: Upstream = None) -> None:
    """Serve the web app and the guard API in one server (`serve` without --api-only)."""
    serve(host, port, auth, False, api_keys, upstream)


def serve(host: Host = "127.0.0.1", port: Port = 7860, auth: Auth = None,
          api_only: bool = typer.Option(False, "--api-only", help="Serve the guard API alone."),
          api_keys: ApiKeys = None, upstream: Upstream = None) -> None:
    """Serve the guard API (/v1, docs at /v1/docs) and, unless --api-only, the web app at /.
    Stops on Ctrl-C or SIGTERM, giving calls in flight a few seconds."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import uvicorn

    from ragshield.api.app import build_api
    from ragshield.api.keys import KeyCheck, check_exposure, read_keys
    from ragshield.cli.llm_options import load_settings
    from ragshield.errors import UserError
    from ragshield.services.database import open_store
    from ragshield.services.guarding.guard import Guard
    from ragshield.services.guarding.guard_listeners import guard_listeners
    from ragshield.services.shield import Shield

    overrides = {key: value for key, value in (("api_keys_file", api_keys),
                                               ("upstream_base_url", upstream)) if value}
    try:
        # One shield for the server: the app and the API share its store, its models and
        # the turns at them (one in-process model).
        settings = load_settings(**overrides)
        keys = read_keys(settings)
        check_exposure(host, keys)
        shield = Shield(settings, open_store(settings.database_url))
        guard = Guard(shield.settings, shield.store, shield.models, shield.gate, shield.finders,
                      guard_listeners(shield.settings, shield.store))
        server = build_api(shield.settings, guard, KeyCheck(keys))
        if not api_only:
            server = _with_web_app(server, shield, auth)
    except UserError as error:
        fail(" ".join(str(error).split()))  # one line: psycopg's span two
    listening = _listen(host, port)
    typer.echo(f"ragshield serves on http://{host}:{port}/ (API docs: /v1/docs)")
    # On SIGTERM, calls in flight get a few seconds; open page streams do not hold the exit.
    config = uvicorn.Config(server, log_level="warning", timeout_graceful_shutdown=3)
    uvicorn.Server(config).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The bound socket, or one line saying why it cannot be bound."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM)[0]
        listening = socket.socket(family, kind, proto)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
    except OSError as error:
        fail(f"cannot serve on {host}:{port}: {error.strerror or error}")
    return listening


def _with_web_app(server: FastAPI, shield: Shield, auth_file: Path | None) -> FastAPI:
    """The Gradio app mounted at / of the API's server. With an auth file, the users of the file and
    the enabled accounts an admin added in the app log in (the file wins on a name clash:
    services/annotation/people.py); a warning says so when nobody of them is an admin."""
    import gradio as gr

    from ragshield.services.annotation.people import Access, Logins, admin_warning
    from ragshield.ui.app import build_app, launch_options
    from ragshield.ui.auth import gradio_auth, read_auth_file

    users = read_auth_file(auth_file) if auth_file else []
    access = Access(logins=bool(users), file_roles={user.name: user.role for user in users})
    passwords = {user.name: user.password for user in users}
    auth = gradio_auth(Logins(shield.store, passwords).check) if users else None
    warning = admin_warning(shield.store, access)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    app = build_app(shield.settings, shield.store, models=shield.models,
                    model_lock=shield.gate.local, access=access)
    app.queue(default_concurrency_limit=4)
    options = launch_options(shield.settings, shield.store, access)
    return gr.mount_gradio_app(
        server, app, path="/", auth=auth,
        auth_message="Log in with your annotator name." if auth else None,
        app_kwargs=options.pop("app_kwargs"), **options)
