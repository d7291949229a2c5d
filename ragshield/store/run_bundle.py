"""A run in one file: its configuration, every answer and verdict (traces included) and the
LLM calls behind them, as xz-compressed JSON. `write_bundle` takes a finished run out of a
store; `read_bundle` checks a file and `load_bundle` puts it into another store, where the
run shows like any other and an identical question is replayed from the call cache.

The app ships one (ragshield/assets/demo/run.json.xz, made by scripts/make_demo_run.py) so
that a new database has a full demo run at first launch."""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import FromClause, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from ragshield import strict_json
from ragshield.claims import MAX_CLAIMS
from ragshield.errors import UserError
from ragshield.output_files import write_atomically
from ragshield.store.database import Store
from ragshield.store.models import (AnswerRow, Dataset, LLMCallRow, Run, RunFailure, Sample,
                                    VerdictRow, as_utc)

FORMAT = "ragshield.run-bundle"
FORMAT_VERSION = 1
# Columns a bundle leaves out: ids and links of the store it came from, and times.
_LOCAL = {"id", "run_id", "sample_id", "answer_id", "created_at"}


class BundleError(UserError, ValueError):
    """A bundle file that cannot be read or does not fit the store; names the file and
    the field at fault."""


@dataclass(frozen=True)
class Bundle:
    """A read bundle: what it says about itself, and its rows as plain dicts."""

    path: Path
    code_version: str
    created_at: str
    dataset: str
    run: dict[str, Any]
    answers: list[dict[str, Any]]  # each with "sample" (its external id) and "verdicts"
    llm_calls: list[dict[str, Any]]


def _columns(table: FromClause) -> list[str]:
    return [column.name for column in table.columns if column.name not in _LOCAL]


def _row(obj: Any, columns: list[str]) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in columns}


def write_bundle(store: Store, run_id: int, path: Path, *, code_version: str,
                 calls: bool = False) -> Path:
    """Write run `run_id` of `store` to `path`; with `calls`, every LLM call the store holds
    too (a store made for the run alone, as the demo run's: other runs' calls would go
    with it)."""
    answer_columns = _columns(AnswerRow.__table__)
    verdict_columns = _columns(VerdictRow.__table__)
    call_columns = _columns(LLMCallRow.__table__)
    with store.session() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise BundleError(f"no run {run_id} in the store")
        dataset = session.scalar(select(Dataset.name).where(Dataset.id == run.dataset_id))
        external = {row.id: (row.external_id, row.question) for row in session.execute(
            select(Sample.id, Sample.external_id, Sample.question).join(
                AnswerRow, AnswerRow.sample_id == Sample.id).where(AnswerRow.run_id == run_id))}
        verdicts: dict[int, list[dict[str, Any]]] = {}
        for verdict in session.scalars(select(VerdictRow).join(AnswerRow).where(
                AnswerRow.run_id == run_id).order_by(VerdictRow.id)):
            verdicts.setdefault(verdict.answer_id, []).append(_row(verdict, verdict_columns))
        # The question goes with each answer: an import checks it is the same sample.
        answers = [{"sample": external[answer.sample_id][0],
                    "question": external[answer.sample_id][1], **_row(answer, answer_columns),
                    "verdicts": verdicts.get(answer.id, [])}
                   for answer in session.scalars(select(AnswerRow).where(
                       AnswerRow.run_id == run_id).order_by(AnswerRow.id))]
        held = [_row(call, call_columns) for call in session.scalars(
            select(LLMCallRow).order_by(LLMCallRow.id))] if calls else []
        failed = [{"sample": sample_id, "error": error, "attempts": attempts}
                  for sample_id, error, attempts in session.execute(
                      select(Sample.external_id, RunFailure.error, RunFailure.attempts)
                      .join(Sample, Sample.id == RunFailure.sample_id)
                      .where(RunFailure.run_id == run_id).order_by(RunFailure.id))]
        body = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "code_version": code_version,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dataset": dataset,
            "run": {"name": run.name, "config": run.config, "seed": run.seed,
                    "status": run.status, "samples_total": run.samples_total,
                    "code_version": run.code_version,
                    "finished_at": run.finished_at.isoformat() if run.finished_at else None,
                    "failures": failed},
            "answers": answers, "llm_calls": held,
        }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder of the path should be
        raise BundleError(f"cannot write {path}: {exc.strerror or exc}") from None

    def write(target: Path) -> None:
        try:
            _write_json(target, body)
        except ValueError:  # a NaN or Infinity that an older version stored: written as null
            _write_json(target, strict_json.finite(body))

    write_atomically(path, write, BundleError)  # a folder or a full disk: one error line
    return path


def _write_json(path: Path, body: dict[str, Any]) -> None:
    """Strict JSON (no NaN or Infinity, which strict parsers refuse), streamed to `path`."""
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as handle:
        json.dump(body, handle, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _field(body: dict[str, Any], name: str, kind: type, path: Path) -> Any:
    value = body.get(name)
    if not isinstance(value, kind):
        raise BundleError(f"{path}: field {name!r} must be a {kind.__name__}, "
                          f"got {type(value).__name__}")
    return value


def read_bundle(path: Path, max_unpacked: int | None = None) -> Bundle:
    """The bundle at `path`; BundleError naming the file and field when it is not one, or
    when it unpacks to more than `max_unpacked` characters (a small upload can unpack to
    gigabytes)."""
    try:
        with lzma.open(path, "rt", encoding="utf-8") as handle:
            text = handle.read(-1 if max_unpacked is None else max_unpacked + 1)
        if max_unpacked is not None and len(text) > max_unpacked:
            raise BundleError(f"{path}: unpacks to more than {max_unpacked / 1e6:.0f} MB of "
                              "JSON; import it with `python -m ragshield runs import`")
        # Strict: no NaN, and no lone surrogate or NUL (no database stores the one, nor
        # PostgreSQL the other, and the app's pages could not be sent with a surrogate).
        body = strict_json.loads(text, storable=True)
    except strict_json.JsonValueError as exc:
        raise BundleError(f"{path}: {exc}") from None
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BundleError(f"{path}: is a folder, not a run bundle") from None
    except (lzma.LZMAError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path}: not an xz-compressed JSON run bundle ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise BundleError(f"{path}: field 'format' must be {FORMAT!r}")
    if body.get("format_version") != FORMAT_VERSION:
        raise BundleError(f"{path}: field 'format_version' is {body.get('format_version')!r}; "
                          f"this version of ragshield reads {FORMAT_VERSION}")
    answers = _field(body, "answers", list, path)
    for index, answer in enumerate(answers):
        if not isinstance(answer, dict) or not isinstance(answer.get("sample"), str) \
                or not isinstance(answer.get("verdicts"), list):
            raise BundleError(f"{path}: answers[{index}] needs a 'sample' id and 'verdicts'")
        _check_claims(answer["verdicts"], path, f"answers[{index}]")
    run = _field(body, "run", dict, path)
    _field(run, "config", dict, path)
    return Bundle(path, _field(body, "code_version", str, path),
                  _field(body, "created_at", str, path), _field(body, "dataset", str, path),
                  run, answers, _field(body, "llm_calls", list, path))


def _check_claims(verdicts: list[Any], path: Path, where: str) -> None:
    """BundleError for a verdict with more claims than the support judge writes (MAX_CLAIMS):
    refused, not cut, so that no part of a bundle is dropped unsaid."""
    for index, verdict in enumerate(verdicts):
        details = verdict.get("details") if isinstance(verdict, dict) else None
        claims = details.get("claims") if isinstance(details, dict) else None
        if isinstance(claims, list) and len(claims) > MAX_CLAIMS:
            raise BundleError(f"{path}: field {where}.verdicts[{index}].details.claims holds "
                              f"{len(claims):,} claims; a verdict has at most {MAX_CLAIMS}")


@contextmanager
def _entry(path: Path, where: str) -> Iterator[None]:
    """A value of the bundle's entry `where` that the store cannot take (a seed that is no
    number, a repeated answer) as a BundleError naming the file and the entry; the import's
    transaction is then rolled back whole."""
    try:
        yield
    except BundleError:
        raise
    except (TypeError, ValueError, AttributeError, SQLAlchemyError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BundleError(f"{path}: {where}: a value this store cannot take ({message}); "
                          "nothing was imported") from None


def _object(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BundleError(f"{path}: {where}: each entry must be an object, got {value!r:.40}")
    return value


def _known(row: dict[str, Any], columns: list[str], path: Path, where: str) -> dict[str, Any]:
    unknown = sorted(set(row) - set(columns))
    if unknown:
        raise BundleError(f"{path}: {where} has unknown field(s) {unknown}")
    return row


def load_bundle(store: Store, bundle: Bundle) -> int:
    """Add the bundle's run to `store` (whose dataset `bundle.dataset` must hold every
    sample it answers) with its LLM calls, in one transaction; returns the new run's id.
    Calls the store already holds are kept as they are."""
    answer_columns = _columns(AnswerRow.__table__)
    verdict_columns = _columns(VerdictRow.__table__)
    call_columns = _columns(LLMCallRow.__table__)
    path = bundle.path
    with store.session() as session:
        dataset_id = session.scalar(select(Dataset.id).where(Dataset.name == bundle.dataset))
        if dataset_id is None:
            raise BundleError(f"{path}: dataset {bundle.dataset!r} is not in the store")
        samples = {row.external_id: (row.id, row.question) for row in session.execute(
            select(Sample.external_id, Sample.id, Sample.question).where(
                Sample.dataset_id == dataset_id))}
        missing = sorted({a["sample"] for a in bundle.answers} - set(samples))
        if missing:
            raise BundleError(f"{path}: {len(missing)} answered sample(s) are not in dataset "
                              f"{bundle.dataset!r}, e.g. {missing[:3]}")
        other = sorted({a["sample"] for a in bundle.answers
                        if "question" in a and a["question"] != samples[a["sample"]][1]})
        if other:  # same ids, other samples: the answers would go to questions never asked
            raise BundleError(f"{path}: {len(other)} answered sample(s) of dataset "
                              f"{bundle.dataset!r} here ask another question than in the "
                              f"bundle, e.g. {other[:3]}; import into the dataset it was made on")
        with _entry(path, "run"):
            finished = bundle.run.get("finished_at")
            run = Run(name=bundle.run.get("name"), dataset_id=dataset_id,
                      config=bundle.run["config"], code_version=bundle.run.get("code_version"),
                      seed=int(bundle.run.get("seed") or 0),
                      status=bundle.run.get("status", "done"),
                      samples_total=int(bundle.run.get("samples_total") or 0),
                      finished_at=as_utc(datetime.fromisoformat(finished)) if finished else None)
            session.add(run)
            session.flush()
        with _entry(path, "run.failures"):
            for failure in bundle.run.get("failures") or ():  # older bundles have none
                failure = _object(failure, path, "run.failures")
                if failure.get("sample") not in samples:
                    raise BundleError(f"{path}: run.failures: sample {failure.get('sample')!r} "
                                      f"is not in dataset {bundle.dataset!r}")
                session.add(RunFailure(run_id=run.id, sample_id=samples[failure["sample"]][0],
                                       error=str(failure.get("error") or ""),
                                       attempts=int(failure.get("attempts") or 1)))
            session.flush()
        for index, item in enumerate(bundle.answers):
            where = f"answers[{index}]"
            with _entry(path, where):
                fields = {k: v for k, v in item.items()
                          if k not in ("sample", "question", "verdicts")}
                answer = AnswerRow(run_id=run.id, sample_id=samples[item["sample"]][0],
                                   **_known(fields, answer_columns, path, where))
                session.add(answer)
                session.flush()
                session.add_all(VerdictRow(answer_id=answer.id,
                                           **_known(_object(v, path, where), verdict_columns,
                                                    path, f"{where}.verdicts"))
                                for v in item["verdicts"])
                session.flush()
        with _entry(path, "llm_calls"):
            held = set(session.scalars(select(LLMCallRow.key)))
            fresh = [_known(_object(call, path, "llm_calls"), call_columns, path, "llm_calls")
                     for call in bundle.llm_calls]
            fresh = [call for call in fresh if call.get("key") not in held]
            if fresh:
                session.execute(insert(LLMCallRow), fresh)
        return run.id


def run_count(store: Store) -> int:
    with store.session() as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0
