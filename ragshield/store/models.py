"""SQLAlchemy 2 table models. Schema changes go through an Alembic revision in migrations/."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    text as sql_text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

LABEL_VALUES = ("answerable", "unanswerable", "unsure")
SENTENCE_LABEL_VALUES = ("supported", "unsupported", "unsure")
# What a login may do in the app (services/annotation/people.py).
ACCOUNT_ROLES = ("admin", "annotator")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """A stored time with its zone: SQLite hands back naive datetimes, written in UTC (and a
    time read from a file without a zone is taken as UTC too)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: DateTime(timezone=True)}


class Dataset(Base):
    __tablename__ = "datasets"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    license: Mapped[str | None] = mapped_column(String(200))
    guidelines: Mapped[str | None] = mapped_column(Text)  # Markdown shown to annotators
    guidelines_updated_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    samples: Mapped[list[Sample]] = relationship(back_populates="dataset", cascade="all")


class Sample(Base):
    __tablename__ = "samples"
    # (dataset, id): the label queue reads a dataset's samples in order and stops at the
    # first open one (store/annotation_queue.py); an index on the dataset alone needs a sort.
    __table_args__ = (UniqueConstraint("dataset_id", "external_id"),
                      Index("ix_samples_dataset_order", "dataset_id", "id"))
    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    question: Mapped[str] = mapped_column(Text)
    reference_answers: Mapped[list[Any]] = mapped_column(default=list)
    answerable: Mapped[bool | None] = mapped_column(Boolean)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # An outside system's answer (types.GivenAnswer as JSON), judged by runs of given answers.
    given_answer: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    dataset: Mapped[Dataset] = relationship(back_populates="samples")
    passages: Mapped[list[Passage]] = relationship(
        back_populates="sample", cascade="all", order_by="Passage.position"
    )


class Passage(Base):
    __tablename__ = "passages"
    __table_args__ = (UniqueConstraint("sample_id", "position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    doc_id: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=sql_text("'{}'"))
    sample: Mapped[Sample] = relationship(back_populates="passages")


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str | None] = mapped_column(String(200))
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    code_version: Mapped[str | None] = mapped_column(String(100))
    seed: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    samples_total: Mapped[int] = mapped_column(Integer, default=0, server_default=sql_text("0"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    # The process executing the run (see store/run_owner.py); all null while none does.
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    owner_token: Mapped[str | None] = mapped_column(String(64))
    owner_since: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]


class RunFailure(Base):
    """A sample whose answer or verdicts could not be produced in a run; removed once a
    resume succeeds on it."""

    __tablename__ = "run_failures"
    __table_args__ = (UniqueConstraint("run_id", "sample_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    error: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AnswerRow(Base):
    """One answer of a run. `role` "main" is the judged answer; "norag" (the answer without
    passages) and "larger" (a larger model's answer) feed the fallback and switch curves."""

    __tablename__ = "answers"
    __table_args__ = (
        UniqueConstraint("run_id", "sample_id", "role", name="uq_answers_run_sample_role"),
        Index("ix_answers_run_disagreement", "run_id", "disagreement", "sample_id"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(20), default="main", server_default="main")
    answerer: Mapped[str] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(300))
    text: Mapped[str | None] = mapped_column(Text)
    raw: Mapped[str | None] = mapped_column(Text)
    evidence: Mapped[list[Any]] = mapped_column(default=list)
    refusal: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    parse_error: Mapped[str | None] = mapped_column(Text)
    cites_internal_knowledge: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false())
    # The passages shown (retrieved ones differ from the dataset's), the prompt and the calls.
    passages: Mapped[list[Any]] = mapped_column(default=list, server_default=sql_text("'[]'"))
    messages: Mapped[list[Any]] = mapped_column(default=list, server_default=sql_text("'[]'"))
    trace: Mapped[list[Any]] = mapped_column(default=list, server_default=sql_text("'[]'"))
    # How split the judges are on this answer, 0 (unanimous) to 1 (half keep, half not):
    # the disagreement-first annotation queue orders by it.
    disagreement: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class VerdictRow(Base):
    __tablename__ = "verdicts"
    __table_args__ = (UniqueConstraint("answer_id", "judge"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id", ondelete="CASCADE"))
    judge: Mapped[str] = mapped_column(String(100))
    keep: Mapped[bool | None] = mapped_column(Boolean)
    score: Mapped[float | None] = mapped_column(Float)
    rationale: Mapped[str | None] = mapped_column(Text)
    available: Mapped[bool] = mapped_column(Boolean, default=True)
    error: Mapped[str | None] = mapped_column(Text)
    parse_error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=sql_text("'{}'"))
    trace: Mapped[list[Any]] = mapped_column(default=list)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cached_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_hits: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class LLMCallRow(Base):
    """The LLM call cache: one row per distinct (backend, model, method, request)."""

    __tablename__ = "llm_calls"
    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the request
    backend: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(300))
    method: Mapped[str] = mapped_column(String(20))  # "chat" | "score"
    request: Mapped[dict[str, Any]]
    response: Mapped[dict[str, Any]]
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Annotator(Base):
    __tablename__ = "annotators"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Account(Base):
    """A login an admin added in the app, for one annotator. Kept apart from Annotator,
    whose free-text `role` describes a person (expert, student): an account's `role` is
    what they may do (ACCOUNT_ROLES). The password is stored as a salted scrypt hash."""

    __tablename__ = "accounts"
    __table_args__ = (
        CheckConstraint(
            f"role IN ({', '.join(repr(v) for v in ACCOUNT_ROLES)})", name="ck_accounts_role"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotators.id", ondelete="CASCADE"), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(20))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_by: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Label(Base):
    """One answerability judgement by one person. A change adds a row; rows are never updated.
    A person's current label on a sample is their newest row; a `retracted` row (an undo of
    a first label) means they have none.

    Each row names the version it follows (`previous_id`; none for the first), and the
    database allows one successor per version and one first version per (sample, person):
    two requests that both saw the same current label cannot both add a version after it.
    The loser of such a race reads the new current label and decides again."""

    __tablename__ = "labels"
    __table_args__ = (
        CheckConstraint(
            f"label IN ({', '.join(repr(v) for v in LABEL_VALUES)})", name="ck_labels_label_value"
        ),
        Index("ix_labels_sample_annotator", "sample_id", "annotator_id", "created_at"),
        Index("ix_labels_annotator_sample", "annotator_id", "sample_id"),
        UniqueConstraint("request_id", name="uq_labels_request_id"),
        Index("uq_labels_previous", "previous_id", unique=True),
        Index("uq_labels_first_version", "sample_id", "annotator_id", unique=True,
              sqlite_where=sql_text("previous_id IS NULL"),
              postgresql_where=sql_text("previous_id IS NULL")),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    answer_id: Mapped[int | None] = mapped_column(ForeignKey("answers.id", ondelete="SET NULL"))
    label: Mapped[str] = mapped_column(String(20))
    answer_correct: Mapped[bool | None] = mapped_column(Boolean)
    note: Mapped[str | None] = mapped_column(Text)
    passages_shown: Mapped[list[Any]] = mapped_column(default=list)
    retracted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Set by clients that may send the same submission twice (a retry, a double click):
    # the second one is recognised and not stored again.
    request_id: Mapped[str | None] = mapped_column(String(64))
    # Set on a row written by an undo: the row whose change it takes back.
    reverts_id: Mapped[int | None] = mapped_column(
        ForeignKey("labels.id", ondelete="SET NULL", name="fk_labels_reverts_id"))
    # The version this row follows: the person's current row on the sample when it was added.
    previous_id: Mapped[int | None] = mapped_column(
        ForeignKey("labels.id", ondelete="CASCADE", name="fk_labels_previous_id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SentenceLabel(Base):
    """One person's judgement of one sentence of an answer: supported by the passages, not
    supported, or can't tell. Rows are never updated; versions chain per (sample, answer
    text, span, person) exactly as Label's do (`previous_id`, one successor per version, one
    first version per key). The label belongs to the answer's text (`answer_sha256`) and span,
    not to one stored answer row: a re-judged answer, or another run's answer of the same
    words, keeps it; `answer_id` records which row was shown."""

    __tablename__ = "sentence_labels"
    __table_args__ = (
        CheckConstraint(f"label IN ({', '.join(repr(v) for v in SENTENCE_LABEL_VALUES)})",
                        name="ck_sentence_labels_label_value"),
        CheckConstraint("span_start >= 0 AND span_end > span_start",
                        name="ck_sentence_labels_span"),
        Index("ix_sentence_labels_sample_annotator", "sample_id", "annotator_id"),
        UniqueConstraint("request_id", name="uq_sentence_labels_request_id"),
        Index("uq_sentence_labels_previous", "previous_id", unique=True),
        Index("uq_sentence_labels_first_version", "sample_id", "answer_sha256", "span_start",
              "span_end", "annotator_id", unique=True,
              sqlite_where=sql_text("previous_id IS NULL"),
              postgresql_where=sql_text("previous_id IS NULL")),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    answer_id: Mapped[int | None] = mapped_column(ForeignKey("answers.id", ondelete="SET NULL"))
    answer_sha256: Mapped[str] = mapped_column(String(64))
    span_start: Mapped[int] = mapped_column(Integer)
    span_end: Mapped[int] = mapped_column(Integer)
    sentence: Mapped[str] = mapped_column(Text)  # answer[span_start:span_end] when labelled
    label: Mapped[str] = mapped_column(String(20))
    retracted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    request_id: Mapped[str | None] = mapped_column(String(64))
    reverts_id: Mapped[int | None] = mapped_column(
        ForeignKey("sentence_labels.id", ondelete="SET NULL",
                   name="fk_sentence_labels_reverts_id"))
    previous_id: Mapped[int | None] = mapped_column(
        ForeignKey("sentence_labels.id", ondelete="CASCADE",
                   name="fk_sentence_labels_previous_id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Skip(Base):
    """An annotator passed over a sample in the queue; an undo removes it."""

    __tablename__ = "skips"
    __table_args__ = (UniqueConstraint("annotator_id", "sample_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    sample_id: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PolicyRow(Base):
    """A fitted decision policy (ragshield.policies.policy.Policy as JSON); each fit of a
    name adds a version, and runs keep the version they decided by."""

    __tablename__ = "policies"
    __table_args__ = (UniqueConstraint("name", "version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    version: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(200))  # the judge it reads (body["source"])
    dataset: Mapped[str | None] = mapped_column(String(200))  # it was fitted on
    body: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AppSetting(Base):
    """A setting changed from the app that every process on this store must see (the pinned
    default policy): one JSON value per key, with who changed it last and when."""

    __tablename__ = "app_settings"
    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[dict[str, Any]]
    updated_by: Mapped[str | None] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class GuardDecision(Base):
    """One answered call of the guard API (services/guarding/decision_log.py): when, who asked (the
    key's name), what was decided by which rule or policy version, every verdict, and the
    time it took. The run and sample it was kept as are plain values, not foreign keys: the
    log outlives the runs and datasets it names."""

    __tablename__ = "guard_decisions"
    __table_args__ = (Index("ix_guard_decisions_created_at", "created_at"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    caller: Mapped[str | None] = mapped_column(String(100))
    endpoint: Mapped[str] = mapped_column(String(20))
    question_sha256: Mapped[str] = mapped_column(String(64))
    question: Mapped[str | None] = mapped_column(Text)  # only with decision_log_questions=text
    run_id: Mapped[int | None] = mapped_column(Integer)
    dataset: Mapped[str | None] = mapped_column(String(200))
    sample_id: Mapped[str | None] = mapped_column(String(200))
    decision: Mapped[str | None] = mapped_column(String(20))  # keep, abstain, defer, or None
    kept: Mapped[bool] = mapped_column(Boolean)  # the answer was shown
    rule: Mapped[str] = mapped_column(String(200))
    policy_name: Mapped[str | None] = mapped_column(String(100))
    policy_version: Mapped[int | None] = mapped_column(Integer)
    verdicts: Mapped[list[Any]]  # [{judge, keep, outcome, score}]
    latency_ms: Mapped[float] = mapped_column(Float)
    phases_ms: Mapped[dict[str, Any]]  # queued, judging, storing, upstream
