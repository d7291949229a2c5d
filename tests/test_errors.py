"""One root class for the errors meant for users (ragshield.errors.UserError): every error
class of the package is one, or is listed below as internal with its reason; the CLI shows a
UserError as one line `error: ...` with exit status 1 and lets anything else through as the
bug it is."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragshield
from ragshield.cli.app import app
from ragshield.datasets.errors import DatasetFormatError
from ragshield.errors import OptionError, UserError
from ragshield.policies.risk_control import PolicyFitError
from ragshield.llm.upstream import UpstreamRefused
from ragshield.metrics.summary import VerdictTableError
from ragshield.store.dataset_deletion import DatasetInUseError, DatasetUsage
from ragshield.strict_json import JsonValueError

ROOT = Path(__file__).resolve().parents[1]

# Exceptions of the package that are not meant for users, and why.
INTERNAL = {
    "ragshield.cli.run.Terminated":
        "a KeyboardInterrupt raised on SIGTERM to stop a run the way Ctrl-C does",
    "ragshield.pipeline.SampleFailed":
        "caught by execute_run and recorded as the sample's failure; never reaches a face",
    "ragshield.services.guarding.guard.ModelUnavailable":
        "a fault of the server (its model cannot be opened): the API answers 503 and logs "
        "the cause, which names server paths, instead of showing it to the caller",
    "ragshield.ui.page_questions.QuestionStopped":
        "ends the thread of a Demo question that a newer question of the page replaced; "
        "nothing is shown of it",
}
# A message for the classes whose constructor takes more than the message.
EXAMPLES = {
    UpstreamRefused: (lambda: UpstreamRefused("the upstream http://127.0.0.1:9/v1 answered "
                                              "400: model not found", 400),
                      "the upstream http://127.0.0.1:9/v1 answered 400: model not found"),
    DatasetFormatError: (lambda: DatasetFormatError("data.jsonl", "expected a string",
                                                    where="line 3", field="question"),
                         "data.jsonl, line 3, field 'question': expected a string"),
    VerdictTableError: (lambda: VerdictTableError("keep must be true or false", line=4),
                        "line 4: keep must be true or false"),
    JsonValueError: (lambda: JsonValueError("NaN is not a number", field="score"),
                     "field 'score': NaN is not a number"),
    PolicyFitError: (lambda: PolicyFitError("no threshold keeps risk <= 0.1", more_labels=40),
                     "no threshold keeps risk <= 0.1"),
    DatasetInUseError: (lambda: DatasetInUseError(DatasetUsage("demo", 3, 6, [1], 0, 0)),
                        "dataset 'demo' is used by run(s) 1; delete with --force to remove "
                        "them too"),
}


def _modules() -> list[str]:
    """Every module of the package but __main__ (importing it runs the CLI)."""
    return [info.name for info in pkgutil.walk_packages(ragshield.__path__, "ragshield.")
            if info.name.rsplit(".", 1)[-1] != "__main__"]


@cache
def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package, by dotted name."""
    found = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == name):
                found[f"{name}.{value.__qualname__}"] = value
    return found


def user_error_classes() -> list[type[UserError]]:
    classes = [cls for cls in exception_classes().values() if issubclass(cls, UserError)]
    return sorted({OptionError, *classes}, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def test_every_exception_of_the_package_is_a_user_error_or_listed_as_internal():
    classes = exception_classes()
    stray = sorted(name for name, cls in classes.items()
                   if not issubclass(cls, UserError) and name not in INTERNAL)
    assert not stray, (f"{stray}: subclass ragshield.errors.UserError (keeping the built-in "
                       "base) if a person can fix what it reports, else list it in INTERNAL "
                       "with the reason")
    assert set(INTERNAL) <= set(classes), "INTERNAL lists a class that no longer exists"
    assert not [name for name in INTERNAL if issubclass(classes[name], UserError)]
    assert len(user_error_classes()) > 40  # the walk found the package's modules


def _own_constructor(cls: type) -> bool:
    return any("__init__" in vars(base) for base in cls.__mro__ if base.__module__ != "builtins")


def _round_trip_fault(cls: type[UserError]) -> str | None:
    """Why `cls` is not importable from its module or does not keep its one-line message;
    None when it does."""
    module = importlib.import_module(cls.__module__)
    if getattr(module, cls.__qualname__, None) is not cls:
        return "not importable from its module"
    if cls in EXAMPLES:
        make, message = EXAMPLES[cls]
        error = make()
    elif _own_constructor(cls):
        return "has its own constructor: add an example to EXAMPLES"
    else:
        message = "data.jsonl, line 3, field 'question': expected a string"
        error = cls(message)
    if str(error) != message or "\n" in str(error):
        return f"its message reads {str(error)!r}, not {message!r}"
    with pytest.raises(UserError, match="^" + re.escape(message)):
        raise error
    return None


def test_every_user_error_is_importable_and_its_message_round_trips():
    # One test over every class, not one test per class: listing them at collection would
    # import every module of the package (torch and all) in each test worker.
    faults = {cls.__qualname__: fault for cls in user_error_classes()
              if (fault := _round_trip_fault(cls)) is not None}
    assert not faults, faults


def test_user_errors_keep_their_built_in_bases():
    """Callers that catch ValueError or LookupError keep catching them."""
    from ragshield.llm.base import LLMError
    from ragshield.store.run_errors import UnknownRunError
    from ragshield.store.samples import UnknownDatasetError

    assert issubclass(OptionError, ValueError)
    assert issubclass(DatasetFormatError, ValueError)
    assert issubclass(UnknownDatasetError, LookupError) and issubclass(UnknownRunError, LookupError)
    assert issubclass(LLMError, RuntimeError)


# -- the CLI -------------------------------------------------------------------------------

def _corpus_list_raising(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                         error: Exception) -> None:
    """`corpus list` (no database, no model) with its library call raising `error`."""
    def raising(*args, **kwargs):
        raise error

    monkeypatch.setenv("RAGSHIELD_CORPORA_DIR", str(tmp_path / "corpora"))
    monkeypatch.setattr("ragshield.retrieval.corpus_store.list_corpora", raising)


def test_the_cli_shows_a_user_error_as_one_line_with_exit_status_1(monkeypatch, tmp_path):
    _corpus_list_raising(monkeypatch, tmp_path, OptionError("k must be at least 1, got 0"))
    result = CliRunner().invoke(app, ["corpus", "list"])
    assert result.exit_code == 1
    assert result.stderr == "error: k must be at least 1, got 0\n"
    assert result.stdout == ""


def test_the_cli_shows_a_library_user_error_as_one_line(tmp_path):
    missing = tmp_path / "missing.jsonl"
    result = CliRunner().invoke(app, ["metrics", "--verdicts", str(missing)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot read {missing}")
    assert result.stderr.count("\n") == 1


def test_a_bad_setting_is_a_user_error():
    result = CliRunner().invoke(app, ["metrics", "1", "--backend", "bogus"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: settings: backend: ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("error", [RuntimeError("boom"), ValueError("boom"), KeyError("boom")],
                         ids=lambda error: type(error).__name__)
def test_the_cli_lets_any_other_error_through(monkeypatch, tmp_path, error):
    """Plain ValueError and KeyError too: only UserError is a message for the user."""
    _corpus_list_raising(monkeypatch, tmp_path, error)
    result = CliRunner().invoke(app, ["corpus", "list"])
    assert result.exit_code == 1
    assert result.exception is error
    assert "error: " not in result.stderr
    with pytest.raises(type(error)):
        CliRunner().invoke(app, ["corpus", "list"], catch_exceptions=False)


def test_a_bug_in_the_cli_prints_a_traceback(python_processes, tmp_path):
    """As a user runs it: the process prints the traceback, not an `error:` line."""
    script = ("import sys, ragshield.retrieval.corpus_store as store\n"
              "def boom(*args, **kwargs):\n"
              "    raise RuntimeError('a bug, not a user error')\n"
              "store.list_corpora = boom\n"
              "from ragshield.cli.app import app\n"
              "sys.argv = ['ragshield', 'corpus', 'list']\n"
              "app(prog_name='ragshield')\n")
    result = subprocess.run(
        [python_processes, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "RAGSHIELD_CORPORA_DIR": str(tmp_path / "corpora"),
             "_TYPER_STANDARD_TRACEBACK": "1", "NO_COLOR": "1"})
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "RuntimeError: a bug, not a user error" in result.stderr
    assert "error: a bug" not in result.stderr
