"""`python -m ragshield ...`: the command line. Each module adds the commands of one area;
commands only wire library functions and print."""

from ragshield.cli.app import app, main

__all__ = ["app", "main"]
