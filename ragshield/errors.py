"""The root of the errors meant for the person using ragshield.

Every face (the CLI, the web app, the HTTP API) catches UserError and shows its message as
it is; any other exception is a bug and shows as one (a traceback, a logged error). Error
classes keep their built-in base too (`class DatasetError(UserError, ValueError)`), so
callers that catch ValueError or LookupError still do.
"""

from __future__ import annotations


class UserError(Exception):
    """An error the person using ragshield caused or can fix (bad input, unknown name,
    unreachable server, missing model package); its message is written for them: one line
    naming the file, line, field or setting at fault."""


class OptionError(UserError, ValueError):
    """An option or setting with a value outside its choices or range, or missing."""
