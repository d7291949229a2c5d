"""One Settings object for the whole package, read from RAGSHIELD_* environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragshield import home
from ragshield.types import OnBudget

BackendName = Literal["embedded", "openai", "transformers"]
# Padded tokens per embedding batch; the fastest of 512..8192 per CPU-second on these 2-core
# machines (see ragshield/retrieval/encoding.py). A GPU wants far more.
EMBEDDING_BATCH_TOKENS = 2048
# Passes of the cross-encoder judge's training over its labels: on SQuAD 2.0 held-out
# articles a third epoch did not help (docs/QUALITY.md).
TRAINING_EPOCHS = 2


# The shipped fitted rule (ragshield/policies/answer_rule.py): whether the passages can
# answer the question and whether they say what the answer says, combined.
GROUNDED_RULE = "grounded"
GROUNDED_JUDGES = ("pre_answer", "support")
# The default decision rule: the shipped fitted rule, where its judges read from the
# packaged 1.5B. It was measured against pre_answer alone (the default before it) with each of
# eight labelled sets held out (scripts/bench_default_rule.py, docs/QUALITY.md): it showed far
# more of the right answers and, on the median set, fewer wrong ones. Why it decides, with its
# figures, is written beside the fitted rule (policies/rule_figures.py).
DEFAULT_DECISION_RULE = GROUNDED_RULE
# The default where the judges read from another model than the 1.5B (RAGSHIELD_JUDGE_MODEL=self
# with the 0.5B answering, a served model): the judge measured best there.
SELF_READ_RULE = "pre_answer"
# Why SELF_READ_RULE decides where the judges read from the 0.5B (RAGSHIELD_JUDGE_MODEL=self).
DEFAULT_RULE_SELF_READ_REASON = (
    "the default rule: the judge our benchmark ranks best on what people see (docs/QUALITY.md)."
    " Read by the 0.5B, on 200 SQuAD 2.0 and 200 ClapNQ questions it showed 42% and 28% of the "
    "answers, 61% and 62% of those wrong, against 68% and 73% with every answer shown")


# The most a guard call's judges may be given (budget_ms, the API's and Shield's), ten minutes.
MAX_BUDGET_MS = 600_000


class Settings(BaseSettings):
    """Configuration; every field can be set as RAGSHIELD_<FIELD> in the environment."""

    model_config = SettingsConfigDict(env_prefix="RAGSHIELD_", extra="ignore")

    # Where things are kept (ragshield/home.py): RAGSHIELD_HOME is read there.
    cache_dir: Path = Field(default_factory=home.cache_dir)
    database_url: str = Field(default_factory=home.default_database_url)

    backend: BackendName = "embedded"
    # For `embedded`: a packaged model's name or a GGUF path (default: the packaged 1.5B
    # where installed, else the 0.5B; llm/packaged_models.default_answer_model). For
    # `openai`: the served model name. For `transformers`: a hub name or a local directory.
    model: str | None = None
    # The model every judge reads its probabilities from: a packaged model's name (e.g.
    # qwen-1.5b), a GGUF path (embedded), a served model's name (openai), or "self" (the
    # answering model). None: the measured default (judges/judge_readers.py): where the
    # packaged 0.5B answers, pre_answer, p_true and support read from the packaged 1.5B.
    judge_model: str | None = None
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("RAGSHIELD_OPENAI_API_KEY", "OPENAI_API_KEY"),
    )
    # Bounded here so that a value that would break every model call stops the start instead.
    request_timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    retry_backoff_s: float = Field(default=0.5, ge=0)
    concurrency: int = Field(default=4, gt=0)

    n_ctx: int = Field(default=4096, gt=0)
    n_threads: int = Field(default=2, gt=0)
    llm_cache: bool = True

    embedding_model: str | None = None  # None: the packaged all-MiniLM-L6-v2
    embedding_batch_tokens: int = Field(default=EMBEDDING_BATCH_TOKENS, gt=0)
    # A sequence-classification NLI model (name or path) for the `nli` judge; none is packaged.
    nli_model: str | None = None
    # a judge's name, "all", "majority", "grounded" or a policy
    decision_rule: str = DEFAULT_DECISION_RULE
    answerer: str = "evidence"
    # Ingested corpora (chunks and their BM25 / FAISS indexes), one folder per corpus name.
    corpora_dir: Path = Field(default_factory=lambda: home.data_dir() / "corpora")

    # The guard API (ragshield/api). Keys: bearer tokens, comma-separated here or one per line
    # in the file; with neither, the API serves only on a loopback address.
    api_keys: SecretStr | None = None
    api_keys_file: Path | None = None
    api_timeout_s: float = Field(default=120.0, gt=0)  # one call, waiting for the model included
    api_max_body_bytes: int = Field(default=1_000_000, gt=0)
    api_max_waiting: int = Field(default=64, gt=0)  # calls queued for the model beyond this: 503
    # A guard call's latency budget (judge_budget.py) where the request gives none (None: no
    # budget), and what happens when the rule cannot decide within it.
    guard_budget_ms: int | None = Field(default=None, gt=0, le=MAX_BUDGET_MS)
    guard_on_budget: OnBudget = "abstain"
    # A dataset file uploaded in the app (the Data tab): its size, its rows, and the seconds
    # its check or its import may take. `ragshield datasets import` has no such bounds.
    upload_max_bytes: int = Field(default=200_000_000, gt=0)
    upload_max_rows: int = Field(default=200_000, gt=0)
    upload_timeout_s: float = Field(default=600.0, gt=0)
    # What the app's upload route takes within a rolling window (ui/upload_gate.py): files
    # and bytes per uploader (a login; without logins, a client address) and from everyone.
    # With logins only admins upload (every file the app takes is an admin's to import).
    upload_window_s: float = Field(default=3600.0, gt=0)
    upload_files_per_person: int = Field(default=30, gt=0)
    upload_bytes_per_person: int = Field(default=1_000_000_000, gt=0)
    upload_files_in_all: int = Field(default=100, gt=0)
    upload_bytes_in_all: int = Field(default=4_000_000_000, gt=0)
    # The guarded system's OpenAI-compatible endpoint, for POST /v1/chat/completions.
    upstream_base_url: str | None = None
    upstream_api_key: SecretStr | None = None
    # The decision log (services/guarding/decision_log.py) keeps each guard call's question as its
    # SHA-256 ("hash") or also as text ("text"); a call with "store": false only ever as hash.
    decision_log_questions: Literal["hash", "text"] = "hash"
    # An OTLP/HTTP traces endpoint (Phoenix: http://127.0.0.1:6006/v1/traces): a guard call
    # that carries trace_id and span_id gets a span there, a child of the caller's.
    otlp_endpoint: str | None = None
