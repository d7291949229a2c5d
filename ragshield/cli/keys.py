"""`ragshield keys new`: an API key for the guard, and its line for the keys file."""

from __future__ import annotations

from typing import Optional

import typer

from ragshield.cli.errors import user_errors

app = typer.Typer(no_args_is_help=True, help="API keys of the guard API.")


@app.command("new")
def new(name: Optional[str] = typer.Option(None, "--name", help="Who holds it (stored with "
                                           "their calls)."),
        judges: Optional[str] = typer.Option(None, "--judges", help="Their calls' default "
                                             "judges, comma-separated."),
        rule: Optional[str] = typer.Option(None, "--rule", help="Their calls' default rule, "
                                           "e.g. policy:NAME@VERSION."),
        fixed: bool = typer.Option(False, "--fixed", help="Their calls may not name other "
                                   "judges or another rule."),
        on_unsupported: Optional[str] = typer.Option(
            None, "--on-unsupported", help="What their calls do with an answer the passages "
            "do not all support, where a call names nothing: withhold or redact.")) -> None:
    """Make a random key. The key goes to its holder; the keys file (serve --api-keys) gets
    the line below it, which holds the key's SHA-256 digest, not the key: keep the key now,
    it is not written anywhere."""
    from ragshield.config import Settings
    from ragshield.services.guarding.key_defaults import missing_trained, new_key

    fields = [f"{field}={value}" for field, value in
              (("name", name), ("judges", judges), ("rule", rule),
               ("fixed", "yes" if fixed else None), ("on_unsupported", on_unsupported))
              if value is not None]
    with user_errors():
        secret, line = new_key(fields)
        missing = missing_trained(judges, Settings())
    typer.echo(f"key (for its holder): {secret}")
    typer.echo(f"line for the keys file: {line}")
    if missing:  # the key may be for another machine's server: said, not refused
        typer.echo(f"warning: {missing}; a server without it refuses this line of its keys "
                   "file", err=True)
