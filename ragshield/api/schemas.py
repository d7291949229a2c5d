"""The guard API's request bodies. Every size is bounded and unknown fields are refused, so
a typo ("pasages") is an error naming it rather than a silently ignored field. Booleans and
whole numbers are strict ("yes" is no boolean; true, "500" and 1.0 are no whole numbers), and
numbers finite and never booleans or text; the body itself was parsed strictly
(api/routes.py: no NaN, Infinity, lone surrogates or deep nesting anywhere in it)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator,
                      Field, StrictBool, StrictInt, Tag, ValidationInfo, field_validator)

from ragshield.config import MAX_BUDGET_MS
from ragshield.services.questions.ask_choices import (SMALLER_MODEL, LARGER_MODEL,
                                                      MAX_MODEL_LENGTH, PACKAGED_MODELS, SELF)
from ragshield.services.questions.ask_types import ASK_DEFAULTS, FALLBACKS
from ragshield.services.questions.redaction import OnUnsupported
from ragshield.services.questions.settlement import (MAX_ANSWER_CHARS, MAX_K, MAX_NOISE,
                                                     MAX_QUESTION_CHARS, RETRIEVAL_MODES)
from ragshield.types import OnBudget

MAX_PASSAGES = MAX_K  # passages given with a call, as many as an ask may retrieve
MAX_PASSAGE_CHARS = 20_000
MAX_JUDGES = 30
MAX_TOKENS = 4_096
MAX_TURNS_GIVEN = 200

Name = Annotated[str, Field(min_length=1, max_length=200)]


def _number(value: Any) -> Any:
    """A number as JSON writes one: true is no score, nor "0.9" (pydantic's lax mode reads
    both)."""
    if isinstance(value, (bool, str)):
        raise ValueError("must be a number")
    return value


Number = Annotated[float, BeforeValidator(_number)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PassageIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    title: str | None = Field(default=None, max_length=1_000)
    id: str | None = Field(default=None, max_length=200, description="document or chunk id")
    score: Number | None = Field(default=None, description="retrieval score, if any")


class TokenIn(Strict):
    token: str = Field(max_length=200)
    logprob: Number = Field(le=0)


Judges = Annotated[list[Name] | None, Field(
    min_length=1, max_length=MAX_JUDGES,
    description="judge names, or [\"all\"]; default (left out): the fast set (every free or "
                "cheap judge)")]


BudgetMs = Annotated[StrictInt | None, Field(
    ge=1, le=MAX_BUDGET_MS,
    description="how long the judges may take, in ms; the decision is made from those that "
                "finished (cheapest first); default: RAGSHIELD_GUARD_BUDGET_MS, else none")]
OnUnsupportedField = Annotated[OnUnsupported | None, Field(
    description="an answer some of whose sentences the passages do not support: withhold "
                "(the rule decides on the whole answer) or redact (show it without those "
                "sentences, marked as shortened, when what is left still answers; the "
                "support judge runs); default: the API key's on_unsupported, else withhold")]
OnBudgetField = Annotated[OnBudget | None, Field(
    description="when the rule cannot decide within the budget: keep the answer, abstain "
                "(fail closed), or error (504); default: RAGSHIELD_GUARD_ON_BUDGET, else "
                "abstain")]


def _hex_id(digits: int) -> AfterValidator:
    """An OpenTelemetry id: `digits` hex digits, not all zero (W3C Trace Context), lowered."""
    shape = re.compile(f"[0-9a-fA-F]{{{digits}}}")

    def check(value: str | None) -> str | None:
        if value is not None and (not shape.fullmatch(value) or not value.strip("0")):
            raise ValueError(f"must be {digits} hex digits, not all zero")
        return value.lower() if value is not None else None

    return AfterValidator(check)


TraceId = Annotated[str | None, Field(
    max_length=32, description="the caller's OpenInference trace (32 hex digits): ragshield's "
                               "span goes into it (RAGSHIELD_OTLP_ENDPOINT)"), _hex_id(32)]
SpanId = Annotated[str | None, Field(
    max_length=16, validate_default=True,
    description="the caller's span (16 hex digits), the parent of ragshield's; with trace_id"),
    _hex_id(16)]


class Traced(Strict):
    """The caller's trace and span, for the span of this call that ragshield sends to the
    OTLP endpoint of the settings (services/guarding/trace_export.py); both or neither."""

    trace_id: TraceId = None
    span_id: SpanId = None

    @field_validator("span_id")
    @classmethod
    def _with_trace_id(cls, span_id: str | None, info: ValidationInfo) -> str | None:
        if "trace_id" in info.data and (info.data["trace_id"] is None) != (span_id is None):
            raise ValueError("trace_id and span_id come together: give both or neither")
        return span_id


class Judging(Traced):
    judges: Judges = None
    rule: Name | None = Field(
        default=None, description="a judge's name, \"majority\", \"all\", \"grounded\" "
                                  "(pre_answer and support combined) or a stored policy, "
                                  "\"policy:NAME[@VERSION]\" (it answers, withholds or "
                                  "defers to a person); default: the configured rule where "
                                  "it fits the judges, else majority")
    store: StrictBool = Field(default=True, description="keep the call in today's live run")
    trace: StrictBool = Field(default=False,
                              description="include every model call behind the verdicts")
    judge_model: str | None = Field(
        default=None, description="the model every judge reads from: "
                                  + " | ".join((*PACKAGED_MODELS, SELF))
                                  + f" ({SELF}: the answer model); default: "
                                  "RAGSHIELD_JUDGE_MODEL, else the measured default (where "
                                  f"the {SMALLER_MODEL} answers, pre_answer, p_true and "
                                  f"support read from the {LARGER_MODEL})")
    budget_ms: BudgetMs = None
    on_budget: OnBudgetField = None
    on_unsupported: OnUnsupportedField = None


class TurnIn(Strict):
    role: Literal["user", "assistant", "system"]
    content: str = Field(max_length=MAX_ANSWER_CHARS)


class JudgeBody(Judging):
    """An answer another system wrote, with the question and passages it answered from."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    history: list[TurnIn] = Field(
        default_factory=list, max_length=MAX_TURNS_GIVEN,
        description="the conversation before the question, oldest first: a follow-up "
                    "(\"and the second one?\") is judged with the turns it leans on (bounded; "
                    "docs/API.md, Conversations)")
    passages: list[PassageIn] = Field(default_factory=list, max_length=MAX_PASSAGES)
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    answer_model: str | None = Field(default=None, max_length=MAX_MODEL_LENGTH)
    answer_logprobs: list[TokenIn] | None = Field(default=None, max_length=MAX_TOKENS)
    cited_passages: list[Annotated[StrictInt, Field(ge=0)]] | None = Field(
        default=None, max_length=MAX_PASSAGES, description="indices into passages")

    @field_validator("cited_passages")
    @classmethod
    def _cited_passages_are_given(cls, cited: list[int] | None,
                                  info: ValidationInfo) -> list[int] | None:
        given = len(info.data.get("passages", ()))
        for index in cited or ():
            if index >= given:
                raise ValueError(f"passage index {index} is out of range: {given} passage(s) "
                                 "given, counted from 0")
        return cited


class AskBody(Judging):
    """A question, answered by ragshield's model from retrieved passages (from `corpus`) or
    from the passages given."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    passages: list[PassageIn] | None = Field(default=None, max_length=MAX_PASSAGES)
    corpus: Name | None = None
    mode: str = Field(default=ASK_DEFAULTS.mode, description=" | ".join(RETRIEVAL_MODES))
    k: StrictInt = Field(default=ASK_DEFAULTS.k, ge=1, le=MAX_K)
    noise: StrictInt = Field(default=ASK_DEFAULTS.noise, ge=0, le=MAX_NOISE)
    answerer: Name | None = Field(default=None,
                                  description="default: RAGSHIELD_ANSWERER, else evidence")
    fallback: str = Field(default=FALLBACKS[0], description=" | ".join(FALLBACKS))
    model: str | None = Field(default=None, description="a packaged model to answer with: "
                              + " | ".join(PACKAGED_MODELS) + "; default: the configured one")


class ProxyField(Traced):
    """ragshield's field of a chat completion request (`"ragshield": {...}` in the body; with
    the openai client, `extra_body={"ragshield": {...}}`)."""

    question: str | None = Field(default=None, min_length=1, max_length=MAX_QUESTION_CHARS,
                                 description="default: the last user message")
    passages: list[PassageIn] = Field(default_factory=list, max_length=MAX_PASSAGES)
    judges: Judges = None
    rule: Name | None = None
    store: StrictBool = True
    budget_ms: BudgetMs = None
    on_budget: OnBudgetField = None
    on_unsupported: OnUnsupportedField = None
    stream_mode: Literal["hold", "live"] = Field(
        default="hold", description="with stream: true, hold (judge, then stream what may be "
                                    "shown) or live (stream the upstream's tokens as they "
                                    "come, then a decision event)")


class Open(BaseModel):
    """Part of an OpenAI request: the fields ragshield reads are checked, the others are
    passed on as they came (the body was parsed strictly: they are plain JSON)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class ContentPart(Open):
    """One part of a message's content: text, or another kind (an image) passed on."""

    type: str
    text: str | None = None


def _content_kind(content: Any) -> str:
    return "parts" if isinstance(content, list) else "text"


# A message's content: a string, or a list of parts (only the text parts are read).
Content = Annotated[Annotated[str, Tag("text")] | Annotated[list[ContentPart], Tag("parts")],
                    Discriminator(_content_kind)]


class ChatMessage(Open):
    role: str
    content: Content | None = None


class ChatBody(Open):
    """An OpenAI chat completion request: passed to the upstream as it is, less `ragshield`."""

    messages: list[ChatMessage] = Field(min_length=1, max_length=1_000)
    stream: StrictBool | None = None
    n: StrictInt | None = Field(default=None, ge=1, le=1)
    ragshield: ProxyField = Field(default_factory=ProxyField)
