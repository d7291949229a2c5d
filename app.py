"""python app.py [--host H] [--port P]: the ragshield web app on the embedded defaults."""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    args = parser.parse_args()

    from ragshield.config import Settings
    from ragshield.ui.app import build_app

    build_app(Settings()).launch(server_name=args.host, server_port=args.port)


if __name__ == "__main__":
    main()
