"""python app.py [--host H] [--port P] [--auth FILE]: the ragshield web app on the embedded
defaults and the demo dataset. With --auth, annotators log in and their labels carry
their login name."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--auth", type=Path, default=None,
                        help="file of name:password lines; annotators must log in")
    args = parser.parse_args()

    from ragshield.config import Settings
    from ragshield.errors import UserError
    from ragshield.ui.app import build_app, launch_options
    from ragshield.ui.auth import read_auth_file

    try:
        auth = read_auth_file(args.auth) if args.auth else None
        app = build_app(Settings())
    except UserError as error:
        sys.exit("error: " + " ".join(str(error).split()))  # one line: psycopg's span two
    app.queue(default_concurrency_limit=4)
    app.launch(server_name=args.host, server_port=args.port, auth=auth,
               auth_message="Log in with your annotator name." if auth else None,
               **launch_options())


if __name__ == "__main__":
    main()
