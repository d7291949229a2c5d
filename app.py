"""python app.py [--host H] [--port P] [--auth FILE] [--api-only] [--api-keys FILE]
[--upstream URL]: the ragshield web app and the guard API (/v1, its OpenAPI page at
/v1/docs) in one server, on the embedded defaults and the demo dataset.

With --auth, annotators log in and their labels carry their login name. With --api-only
the server serves the API alone. The API needs keys (--api-keys, or RAGSHIELD_API_KEYS)
unless it serves on a loopback address. --upstream is the OpenAI-compatible endpoint that
POST /v1/chat/completions forwards to (or RAGSHIELD_UPSTREAM_BASE_URL; its key in
RAGSHIELD_UPSTREAM_API_KEY)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ragshield.config import Settings
    from ragshield.services.asking import OpenedModels
    from ragshield.store.database import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--auth", type=Path, default=None,
                        help="file of name:password lines; annotators must log in")
    parser.add_argument("--api-only", action="store_true", help="serve the guard API alone")
    parser.add_argument("--api-keys", type=Path, default=None,
                        help="file of API keys, one per line")
    parser.add_argument("--upstream", default=None,
                        help="the OpenAI-compatible base URL the proxy forwards to")
    args = parser.parse_args()

    import uvicorn

    from ragshield.api.app import build_api
    from ragshield.api.keys import KeyCheck, check_exposure, read_keys
    from ragshield.config import Settings
    from ragshield.errors import UserError
    from ragshield.services.asking import OpenedModels
    from ragshield.services.guard import Guard, ModelGate
    from ragshield.store.database import open_store

    overrides = {key: value for key, value in (("api_keys_file", args.api_keys),
                                               ("upstream_base_url", args.upstream)) if value}
    try:
        settings = Settings(**overrides)
        keys = read_keys(settings)
        check_exposure(args.host, keys)
        store = open_store(settings.database_url)
        model_lock = threading.Lock()  # one in-process model: the app and the API take turns
        models = OpenedModels(settings, store)
        guard = Guard(settings, store, models, ModelGate(settings, model_lock))
        server = build_api(settings, guard, KeyCheck(keys))
        if not args.api_only:
            server = _with_web_app(server, settings, store, models, model_lock, args.auth)
    except UserError as error:
        sys.exit("error: " + " ".join(str(error).split()))  # one line: psycopg's span two
    listening = _listen(args.host, args.port)
    print(f"ragshield serves on http://{args.host}:{args.port}/ (API docs: /v1/docs)",
          flush=True)
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
        sys.exit(f"error: cannot serve on {host}:{port}: {error.strerror or error}")
    return listening


def _with_web_app(server: FastAPI, settings: Settings, store: Store, models: OpenedModels,
                  model_lock: threading.Lock, auth_file: Path | None) -> FastAPI:
    """The Gradio app mounted at / of the API's server."""
    import gradio as gr

    from ragshield.ui.app import build_app, launch_options
    from ragshield.ui.auth import read_auth_file

    auth = read_auth_file(auth_file) if auth_file else None
    app = build_app(settings, store, models=models, model_lock=model_lock)
    app.queue(default_concurrency_limit=4)
    options = launch_options()
    return gr.mount_gradio_app(
        server, app, path="/", auth=auth,
        auth_message="Log in with your annotator name." if auth else None,
        app_kwargs=options.pop("app_kwargs"), **options)


if __name__ == "__main__":
    main()
