"""`python app.py [options]` is `python -m ragshield serve [options]`: the web app and the
guard API in one server (see `python -m ragshield serve --help`)."""

import sys

from ragshield.cli import main

if __name__ == "__main__":
    main(["serve", *sys.argv[1:]])
