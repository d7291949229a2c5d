"""The store on real SQLite and real PostgreSQL: migrations, constraints, pragmas, bad URLs."""

from __future__ import annotations

import threading
from itertools import count

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, inspect, select, text
from sqlalchemy.exc import IntegrityError

from ragshield.store.database import StoreError, alembic_config, create_store_engine, open_store
from ragshield.store.models import (
    AnswerRow,
    Annotator,
    Base,
    Dataset,
    Label,
    LLMCallRow,
    Passage,
    Run,
    Sample,
    VerdictRow,
)
from tests.concurrency import at_once

TABLES = {
    "datasets", "samples", "passages", "runs", "answers", "verdicts", "llm_calls",
    "annotators", "labels",
}


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_open_migrates_to_head_and_creates_every_table(store):
    assert store.revision() == head_revision()
    assert TABLES <= set(inspect(store.engine).get_table_names())


def test_migrations_match_the_models(store):
    """Autogenerate finds nothing to do: the revisions describe exactly the SQLAlchemy models."""
    with store.engine.connect() as connection:
        diffs = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diffs == []


def test_downgrade_to_base_and_upgrade_again(store_url):
    store = open_store(store_url)
    with store.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "base")
    assert not TABLES & set(inspect(store.engine).get_table_names())
    store.close()
    reopened = open_store(store_url)
    assert reopened.revision() == head_revision()
    reopened.close()


OLD_ROWS = [  # a run with one judged answer, as revision 0002 stored it
    "INSERT INTO datasets (id, name, created_at) VALUES (1, 'd', '2024-01-01')",
    "INSERT INTO samples (id, dataset_id, external_id, question, reference_answers, meta) "
    "VALUES (1, 1, 's', 'Who?', '[]', '{}')",
    "INSERT INTO runs (id, dataset_id, config, seed, status, created_at) "
    "VALUES (1, 1, '{}', 0, 'done', '2024-01-01')",
    "INSERT INTO answers (id, run_id, sample_id, answerer, evidence, prompt_tokens, "
    "completion_tokens, seconds, created_at) VALUES (1, 1, 1, 'a', '[]', 0, 0, 0, '2024-01-01')",
    "INSERT INTO verdicts (id, answer_id, judge, available, trace, calls, prompt_tokens, "
    "completion_tokens, cached_prompt_tokens, cache_hits, seconds, created_at) "
    "VALUES (1, 1, 'j', TRUE, '[]', 0, 0, 0, 0, 0, 0, '2024-01-01')",
]


def test_upgrading_an_old_database_keeps_every_row(store_url):
    """Alembic rebuilds a SQLite table by copying it and dropping the old one; with foreign
    keys on, that DROP deleted every row referencing the table (answers and verdicts)."""
    engine = create_store_engine(store_url)  # foreign keys on, as ragshield always opened it
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0002")
        for statement in OLD_ROWS:
            connection.execute(text(statement))
    engine.dispose()
    store = open_store(store_url)
    with store.session() as session:
        assert session.scalar(select(func.count(AnswerRow.id))) == 1
        assert session.scalar(select(func.count(VerdictRow.id))) == 1
    assert store.revision() == head_revision()
    store.close()


def test_reopening_is_idempotent_and_keeps_data(store_url):
    first = open_store(store_url)
    with first.session() as session:
        session.add(Dataset(name="kept"))
    first.close()
    second = open_store(store_url)
    with second.session() as session:
        assert session.scalar(select(Dataset.name)) == "kept"
    second.close()


def test_threads_opening_new_databases_at_once_each_get_a_migrated_store(tmp_path):
    """Alembic keeps the running migration in module globals: without the process's turn,
    eight threads opening eight new SQLite files at once all failed (KeyError)."""
    files = count()  # each thread a new file of its own
    stores = at_once(lambda: open_store(f"sqlite:///{tmp_path / f'store{next(files)}.db'}"), 8)
    for store in stores:
        assert store.revision() == head_revision()
        assert TABLES <= set(inspect(store.engine).get_table_names())
        store.close()


def _sample(session) -> Sample:
    dataset = Dataset(name="d", license="CC BY-SA 4.0")
    sample = Sample(
        dataset=dataset, external_id="q1", question="Who?", reference_answers=["Ada"],
        answerable=True, meta={"domain": "history"},
    )
    sample.passages = [Passage(position=0, text="Ada wrote it.", title="T", score=0.5)]
    session.add(sample)
    session.flush()
    return sample


def test_full_row_round_trip(store):
    with store.session() as session:
        sample = _sample(session)
        run = Run(name="r", config={"judges": ["trivial"]}, code_version="abc", seed=7)
        session.add(run)
        session.flush()
        answer = AnswerRow(run_id=run.id, sample_id=sample.id, answerer="vanilla", text="Ada",
                           evidence=[0])
        session.add(answer)
        session.flush()
        session.add(VerdictRow(answer_id=answer.id, judge="trivial", keep=True,
                               trace=[{"prompt": "p", "output": "o"}], calls=1))
        annotator = Annotator(name="ann")
        session.add(annotator)
        session.flush()
        session.add(Label(sample_id=sample.id, annotator_id=annotator.id, label="answerable",
                          passages_shown=[sample.passages[0].id]))
    with store.session() as session:
        loaded = session.scalar(select(Sample))
        assert loaded.reference_answers == ["Ada"] and loaded.meta == {"domain": "history"}
        assert [p.text for p in loaded.passages] == ["Ada wrote it."]
        verdict = session.scalar(select(VerdictRow))
        assert verdict.trace == [{"prompt": "p", "output": "o"}] and verdict.keep is True
        assert session.scalar(select(Label.label)) == "answerable"
        assert session.scalar(select(Run.config)) == {"judges": ["trivial"]}


def test_foreign_keys_are_enforced(store):
    with pytest.raises(IntegrityError):
        with store.session() as session:
            session.add(Passage(sample_id=999_999, position=0, text="orphan"))


def test_label_value_is_checked(store):
    with store.session() as session:
        sample = _sample(session)
        annotator = Annotator(name="a")
        session.add(annotator)
        session.flush()
        ids = (sample.id, annotator.id)
    with pytest.raises(IntegrityError):
        with store.session() as session:
            session.add(Label(sample_id=ids[0], annotator_id=ids[1], label="maybe"))


def test_one_verdict_per_answer_and_judge(store):
    with store.session() as session:
        sample = _sample(session)
        run = Run()
        session.add(run)
        session.flush()
        answer = AnswerRow(run_id=run.id, sample_id=sample.id, answerer="vanilla")
        session.add(answer)
        session.flush()
        session.add(VerdictRow(answer_id=answer.id, judge="nli"))
        answer_id = answer.id
    with pytest.raises(IntegrityError):
        with store.session() as session:
            session.add(VerdictRow(answer_id=answer_id, judge="nli"))


def test_failed_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError):
        with store.session() as session:
            session.add(LLMCallRow(key="k", backend="b", model="m", method="chat",
                                   request={}, response={}))
            session.flush()
            raise RuntimeError("crash mid-write")
    with store.session() as session:
        assert session.scalar(select(LLMCallRow)) is None


def test_one_transaction_joins_the_thread_s_sessions_and_rolls_back_together(store):
    def add_call(key: str) -> None:
        with store.session() as session:
            session.add(LLMCallRow(key=key, backend="b", model="m", method="chat",
                                   request={}, response={}))
            session.flush()

    def count_in_another_thread() -> None:
        with store.session() as session:
            seen.append((session, session.scalar(select(func.count()).select_from(LLMCallRow))))

    seen: list[tuple[object, int]] = []
    with pytest.raises(RuntimeError):
        with store.one_transaction():
            with store.session() as first, store.session() as second:
                assert first is second
            add_call("a")
            add_call("b")
            worker = threading.Thread(target=count_in_another_thread)
            worker.start()
            worker.join()
            with store.session() as session:  # the block sees its own writes, uncommitted
                assert session.scalar(select(func.count()).select_from(LLMCallRow)) == 2
                assert seen[0][0] is not session and seen[0][1] == 0
            raise RuntimeError("the use case fails after two writes")
    with store.session() as session:
        assert session.scalar(select(LLMCallRow)) is None
    with store.one_transaction():
        add_call("c")
    with store.session() as first:
        with store.session() as second:
            assert first is not second  # outside a block, each session is its own
        assert first.scalar(select(LLMCallRow.key)) == "c"


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'sub' / 'x.db'}")
    with store.engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    store.close()


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("not a url", "bad database URL"),
        ("nosuchdriver://x/y", "cannot use database URL"),
        ("postgresql+psycopg://u:s3cret@127.0.0.1:1/db", "cannot open database"),
        ("sqlite:////proc/forbidden/x.db", "cannot"),
        # URLs that do not parse: the scheme forgotten, a slash lost, a port that is no number
        ("ragshield:s3cret@db.internal:5432/ragshield", "bad database URL"),
        ("postgresql+psycopg:/u:s3cret@h/db", "bad database URL"),
        ("postgresql+psycopg://u:p@s3cret@h:port/db", "database URL"),
    ],
)
def test_bad_database_url_gives_a_clear_error_without_the_password(url, fragment):
    with pytest.raises(StoreError) as err:
        open_store(url)
    assert fragment in str(err.value)
    assert "s3cret" not in str(err.value)
