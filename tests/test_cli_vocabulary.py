"""The CLI's vocabulary (docs/ARCHITECTURE.md): every command of the click tree that
`python -m ragshield` runs is walked, and the rules are checked on its parameters. A command
that writes a file takes it as --out; a listing takes --json; one concept has one name."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Iterator, get_args, get_type_hints

import pytest
import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from ragshield.cli import app

# concept -> (its option, the names that must not stand for it)
VOCABULARY: dict[str, tuple[str, set[str]]] = {
    "the file or folder a command writes": (
        "--out", {"--to", "--output", "-o", "--dest", "--destination", "--write"}),
    "JSON output": ("--json", {"--as-json", "-j", "--format-json", "--machine"}),
    "dataset": ("--dataset", {"--data", "--dataset-name", "--ds", "--data-set"}),
    "run": ("--run", {"--run-id", "--rid", "--run-name"}),
    "database": ("--database-url", {"--db", "--database", "--db-url", "--store"}),
    "judge": ("--judge", {"--judge-name", "--scorer", "--source"}),
    "sample": ("--sample", {"--sample-id", "--id", "--item"}),
    "annotator": ("--annotator", {"--user", "--who", "--annotator-name", "--labeller"}),
    "retrieval method": ("--retrieval", {"--mode", "--method", "--retriever",
                                         "--search-mode"}),
    "corpus": ("--corpus", {"--corpus-name", "--kb", "--collection"}),
    "model": ("--model", {"--llm", "--model-name"}),
    "endpoint of the model": ("--base-url", {"--endpoint", "--url", "--api-base"}),
    "at most N samples": ("--limit", {"--max", "--max-samples", "--count", "-n"}),
    "random seed": ("--seed", {"--random-seed", "--rng-seed"}),
    "file format": ("--format", {"--fmt", "--file-format", "--type"}),
    "policy version": ("--version", {"--policy-version", "--rev", "--revision"}),
    "no confirmation": ("--yes", {"--assume-yes", "--no-confirm", "--no-input"}),
}
# The commands that write a file or folder (the rule: they take --out).
WRITERS = {"report", "runs export", "labels export", "policy export"}
# Options that name a file a command reads beside its main input.
READ_OPTIONS = {"--verdicts", "--set", "--auth", "--api-keys"}
# The last word of a command that lists or shows stored things (the rule: it takes --json).
LISTING_WORDS = {"list", "show", "samples", "history", "progress", "formats"}


def _commands(group: TyperGroup, path: tuple[str, ...] = ()
              ) -> Iterator[tuple[str, TyperCommand]]:
    for name, command in group.commands.items():
        if isinstance(command, TyperGroup):
            yield from _commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


COMMANDS = dict(_commands(typer.main.get_command(app)))


def _options(command: TyperCommand) -> dict[str, TyperOption]:
    """Every name of every option of the command (both names of --flag/--no-flag)."""
    return {name: param for param in command.params if isinstance(param, TyperOption)
            for name in (*param.opts, *param.secondary_opts)}


def _path_parameters(command: TyperCommand) -> set[str]:
    """The names of the command's parameters that take a file or folder."""
    hints = get_type_hints(inspect.unwrap(command.callback))
    return {name for name, hint in hints.items() if Path in (hint, *get_args(hint))}


def test_the_tree_is_walked():
    assert {"doctor", "ask", "run", "runs list", "policy export", "serve", "app"} <= set(COMMANDS)


def test_every_writer_takes_out_and_every_exporter_is_a_writer():
    exporters = {name for name in COMMANDS if name.split()[-1] in {"export", "report"}}
    assert exporters <= WRITERS
    for name in WRITERS:
        out = _options(COMMANDS[name]).get("--out")
        assert out is not None and out.required, f"`{name}` must take --out FILE"


def test_a_file_option_is_out_or_a_named_input():
    for name, command in COMMANDS.items():
        paths = _path_parameters(command)
        for option, param in _options(command).items():
            if param.name in paths:
                assert option in READ_OPTIONS | {"--out"}, (
                    f"`{name} {option}`: a file a command writes is --out; add a file it "
                    "reads to READ_OPTIONS")


def test_every_listing_takes_json():
    listings = [name for name in COMMANDS if name.split()[-1] in LISTING_WORDS]
    assert {"datasets list", "runs list", "policy list", "judges list", "corpus list",
            "models list", "labels show", "policy show"} <= set(listings)
    missing = [name for name in listings if "--json" not in _options(COMMANDS[name])]
    assert not missing, f"listings without --json: {missing}"


@pytest.mark.parametrize("concept", VOCABULARY)
def test_one_name_per_concept(concept):
    option, synonyms = VOCABULARY[concept]
    arguments = {synonym.lstrip("-").replace("-", "_") for synonym in synonyms}
    found = [f"`{name} {param_name}`" for name, command in COMMANDS.items()
             for param_name in [*_options(command),
                                *(p.name for p in command.params
                                  if isinstance(p, TyperArgument))]
             if param_name in synonyms | arguments]
    assert not found, f"{concept} is {option}, not: {', '.join(found)}"


def test_an_option_means_the_same_everywhere():
    """An option name is a flag everywhere or takes a value everywhere, and reaches the
    code under one parameter name."""
    seen: dict[str, tuple[bool, str | None, str]] = {}
    for name, command in COMMANDS.items():
        for option, param in _options(command).items():
            shape = (param.is_flag, param.name)
            first = seen.setdefault(option, (*shape, name))
            assert shape == first[:2], f"{option} differs in `{name}` and `{first[2]}`"


def test_the_model_option_names_the_default_that_answers():
    """`run --help` said the 0.5B answers by default; the 1.5B does where it is installed
    (packaged_models.default_answer_model), and the help must say so."""
    from ragshield.llm.packaged_models import LARGER_MODEL, SMALLER_MODEL

    run = typer.main.get_command(app).commands["run"]
    usage = next(p.help for p in run.params if "--model" in p.opts)
    assert f"{LARGER_MODEL} (default where its package is installed, else {SMALLER_MODEL})" \
        in usage
    assert f"{SMALLER_MODEL} (default)" not in usage
