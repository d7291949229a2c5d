"""The answer an outside system gave to a sample, when a dataset row carries one.

The fields, named alike in every format (the generic formats read them only where the column
mapping names them, since a column called `answer` often holds the reference answer):

- `answer`: the answer's text. The other fields without it are an error.
- `answer_model`: the model that wrote it.
- `answer_logprobs`: its tokens' log-probabilities (each at most 0), as a list of
  {"token", "logprob"} objects (other keys, such as OpenAI's `bytes` and `top_logprobs`, are
  ignored), a list of [token, logprob] pairs, or OpenAI's logprobs object {"content": [...]}.
  An empty list means none.
- `cited_passages`: the indices of the passages it cites, counted from 0 in the row's own
  passages (a single index counts as a list of one).
"""

from __future__ import annotations

from typing import Any, Mapping

from ragshield.datasets.records import Record, json_type
from ragshield.types import GivenAnswer, TokenLogprob

ANSWER_FIELDS = ("answer", "answer_model", "answer_logprobs", "cited_passages")
SAME_NAMES: Mapping[str, str] = {field: field for field in ANSWER_FIELDS}


def given_answer(record: Record, keys: Mapping[str, str], passages: int) -> GivenAnswer | None:
    """The given answer in `record`, whose keys for the ANSWER_FIELDS are `keys` (fields left
    out are not read; none without `answer`); `passages` is the row's passage count. None
    when the row has no answer (absent or null)."""
    answer = keys.get("answer")
    if answer is None:
        return None
    if not record.has(answer):
        stray = next((key for field, key in keys.items()
                      if field != "answer" and record.has(key)), None)
        if stray is not None:
            raise record.error(stray, f"set, but the row has no answer in {answer!r}")
        return None
    model, logprobs, cited = (keys.get(field) for field in ANSWER_FIELDS[1:])
    return GivenAnswer(
        text=record.text(answer),
        model=record.optional_text(model) if model else None,
        tokens=_tokens(record, logprobs) if logprobs and record.has(logprobs) else None,
        cited=_cited(record, cited, passages) if cited and record.has(cited) else None,
    )


def _tokens(record: Record, key: str) -> list[TokenLogprob] | None:
    if isinstance(record.data[key], dict):  # OpenAI's logprobs object: its `content` list
        inner = Record(record.data[key], record.path, record.where, f"{record.prefix}{key}.")
        inner.value("content")
        return _tokens(inner, "content")
    return [_token(record, f"{key}[{index}]", item)
            for index, item in enumerate(record.items(key))] or None


def _token(record: Record, field: str, item: Any) -> TokenLogprob:
    """One {"token", "logprob"} object or [token, logprob] pair at `field` of `record`."""
    if isinstance(item, list):
        if len(item) != 2:
            raise record.error(field, f"expected a [token, logprob] pair, found {len(item)} "
                                      "items")
        entry = Record({"[0]": item[0], "[1]": item[1]}, record.path, record.where,
                       record.prefix + field)
        token, logprob = "[0]", "[1]"
    else:
        entry = Record(item, record.path, record.where, f"{record.prefix}{field}.")
        token, logprob = "token", "logprob"
    value = entry.number(logprob)
    if value > 0:
        raise entry.error(logprob, f"a log-probability is at most 0, found {value:g}")
    return TokenLogprob(entry.text(token), value)


def _cited(record: Record, key: str, passages: int) -> list[int]:
    value = record.data[key]
    single = isinstance(value, int) and not isinstance(value, bool)
    items = [value] if single else record.items(key)
    for index, item in enumerate(items):
        field = key if single else f"{key}[{index}]"
        if isinstance(item, bool) or not isinstance(item, int):
            raise record.error(field, f"expected a passage index (an integer), found "
                                      f"{json_type(item)}")
        if not 0 <= item < passages:
            raise record.error(field, f"passage index {item} is out of range: the row has "
                                      f"{passages} passage(s), counted from 0")
    return list(items)
