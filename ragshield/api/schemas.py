"""The guard API's request bodies. Every size is bounded and unknown fields are refused, so
a typo ("pasages") is an error naming it rather than a silently ignored field. Booleans are
strict ("yes" is no boolean) and numbers finite; the body itself was parsed strictly
(api/routes.py: no NaN, Infinity, lone surrogates or deep nesting anywhere in it)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, StrictBool, Tag,
                      ValidationInfo, field_validator)

from ragshield.services.ask_choices import MAX_MODEL_LENGTH, PACKAGED_MODELS
from ragshield.services.asking import (FALLBACKS, MAX_ANSWER_CHARS, MAX_NOISE,
                                       MAX_QUESTION_CHARS, RETRIEVAL_MODES)

MAX_PASSAGES = 50
MAX_PASSAGE_CHARS = 20_000
MAX_JUDGES = 30
MAX_TOKENS = 4_096

Name = Annotated[str, Field(min_length=1, max_length=200)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PassageIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    title: str | None = Field(default=None, max_length=1_000)
    id: str | None = Field(default=None, max_length=200, description="document or chunk id")
    score: float | None = Field(default=None, description="retrieval score, if any")


class TokenIn(Strict):
    token: str = Field(max_length=200)
    logprob: float = Field(le=0)


Judges = Annotated[list[Name] | None, Field(
    min_length=1, max_length=MAX_JUDGES,
    description="judge names, or [\"all\"]; default (left out): the fast set (every free or "
                "cheap judge)")]


class Judging(Strict):
    judges: Judges = None
    rule: Name | None = Field(
        default=None, description="a judge's name, \"majority\", \"all\" or a stored "
                                  "policy, \"policy:NAME[@VERSION]\" (it answers, withholds "
                                  "or defers to a person); default: the configured rule where "
                                  "it fits the judges, else majority")
    store: StrictBool = Field(default=True, description="keep the call in today's live run")
    trace: StrictBool = Field(default=False,
                              description="include every model call behind the verdicts")
    judge_model: str | None = Field(
        default=None, description="a packaged model the judges read from: "
                                  + " | ".join(PACKAGED_MODELS)
                                  + "; default: RAGSHIELD_JUDGE_MODEL, else the answer model")


class JudgeBody(Judging):
    """An answer another system wrote, with the question and passages it answered from."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    passages: list[PassageIn] = Field(default_factory=list, max_length=MAX_PASSAGES)
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    answer_model: str | None = Field(default=None, max_length=MAX_MODEL_LENGTH)
    answer_logprobs: list[TokenIn] | None = Field(default=None, max_length=MAX_TOKENS)
    cited_passages: list[Annotated[int, Field(ge=0)]] | None = Field(
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
    mode: str = Field(default="hybrid", description=" | ".join(RETRIEVAL_MODES))
    k: int = Field(default=3, ge=1, le=MAX_PASSAGES)
    noise: int = Field(default=0, ge=0, le=MAX_NOISE)
    answerer: Name | None = Field(default=None,
                                  description="default: RAGSHIELD_ANSWERER, else evidence")
    fallback: str = Field(default=FALLBACKS[0], description=" | ".join(FALLBACKS))
    model: str | None = Field(default=None, description="a packaged model to answer with: "
                              + " | ".join(PACKAGED_MODELS) + "; default: the configured one")


class ProxyField(Strict):
    """ragshield's field of a chat completion request (`"ragshield": {...}` in the body; with
    the openai client, `extra_body={"ragshield": {...}}`)."""

    question: str | None = Field(default=None, min_length=1, max_length=MAX_QUESTION_CHARS,
                                 description="default: the last user message")
    passages: list[PassageIn] = Field(default_factory=list, max_length=MAX_PASSAGES)
    judges: Judges = None
    rule: Name | None = None
    store: StrictBool = True


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
    n: int | None = Field(default=None, ge=1, le=1)
    ragshield: ProxyField = Field(default_factory=ProxyField)
