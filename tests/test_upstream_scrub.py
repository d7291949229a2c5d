"""The scrub of a server's key (llm/upstream_scrub.py) on text that comes in pieces, the URLs
shown, and the stream reader that lets an answer out scrubbed (llm/upstream.py ChunkReader).
Issue 55: a key streamed three characters a chunk was in no one chunk, so none was masked."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ragshield.llm.upstream import ChunkReader, UpstreamBadReply, unforged
from ragshield.llm.upstream_scrub import MASK, Scrub, shown_url

KEY = "sk-UPSTREAM-0123456789abcdef"
TEXT = f"Paris. Key: {KEY}, again {KEY[:10]}, cut {KEY[4:]}, and {KEY[:7]} alone."


def test_text_let_out_in_any_pieces_adds_up_to_the_scrub_of_the_whole() -> None:
    scrub, draw = Scrub(KEY), random.Random(55)
    whole = scrub.text(TEXT)
    assert KEY[:8] not in whole and KEY[4:12] not in whole and KEY[:7] in whole
    for _ in range(500):
        cuts = sorted(draw.sample(range(1, len(TEXT)), draw.randint(0, 30)))
        pieces = [TEXT[start:end] for start, end in zip([0, *cuts], [*cuts, len(TEXT)])]
        held = scrub.held()
        shown = [held.take(piece) for piece in pieces]
        assert "".join(shown) + held.flush() == whole, pieces
        assert not any(KEY[:8] in out for out in shown)


def test_nothing_is_held_back_without_a_key() -> None:
    held = Scrub(None).held()
    assert held.take("Paris") == "Paris" and held.flush() == ""


def test_a_mask_of_ones_own_and_a_message_on_one_line() -> None:
    assert Scrub(KEY, "***").line(f"bad\n key \\u0073{KEY[1:-3]}") == "bad key ***"
    assert Scrub(KEY).message("z" * 400 + KEY) == "z" * 300


@pytest.mark.parametrize("url, shown", [
    ("http://user:PASS@host/v1?api-key=SECRET", "http://user:***@host/v1?api-key=***"),
    ("https://sk-token@host:8443/v1", "https://***@host:8443/v1"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://host/v1?api-version=1&key=s#fragment", "http://host/v1?api-version=***&key=***"),
    ("http://u:PASS@host:port/v1?k=SECRET", "http://***@host:port/v1"),  # httpx cannot read it
])
def test_a_url_is_shown_without_its_password_or_query_values(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def chunk(content: str | None = None, finish: str | None = None, **choice: Any) -> bytes:
    delta = {"content": content} if content is not None else {}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **choice}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def _bytes(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def read(*pieces: bytes) -> tuple[list[dict[str, Any]], ChunkReader]:
    """The chunks a reader with KEY hands on from a stream of `pieces`, and the reader."""
    handed: list[dict[str, Any]] = []
    reader = ChunkReader("http://upstream/v1", handed.append, Scrub(KEY))
    asyncio.run(reader.read(_bytes(*pieces)))
    return handed, reader


def texts(chunks: list[dict[str, Any]]) -> list[str]:
    return [choice["delta"].get("content", "") for chunk in chunks
            for choice in chunk["choices"]]


def test_a_key_in_pieces_is_handed_on_scrubbed_the_rest_at_the_finish() -> None:
    pieces = ["Key: ", *(KEY[start:start + 3] for start in range(0, len(KEY), 3))]
    handed, reader = read(*map(chunk, pieces), chunk(finish="stop"), b"data: [DONE]\n\n")
    assert "".join(texts(handed)) == f"Key: {MASK}" == reader.reply().text
    assert texts(handed)[-1] == f"{MASK}"  # let out with the finish, not after it


def test_without_a_finish_the_rest_comes_in_a_chunk_of_its_own() -> None:
    handed, reader = read(chunk("Paris, "), chunk(KEY[:5]), chunk(KEY[5:]), b"data: [DONE]\n\n")
    assert "".join(texts(handed)) == f"Paris, {MASK}" == reader.reply().text
    assert handed[-1]["choices"] == [{"index": 0, "delta": {"content": MASK},
                                      "finish_reason": None}]


def test_text_after_the_finish_is_a_bad_reply() -> None:
    """A finish lets the held text out: more text after it would be scrubbed apart from it,
    so a key seven characters a finish would pass."""
    with pytest.raises(UpstreamBadReply, match="after its answer's finish"):
        read(chunk(KEY[:7], "stop"), chunk(KEY[7:14], "stop"), b"data: [DONE]\n\n")


def test_log_probs_whose_tokens_spell_the_key_are_dropped() -> None:
    tokens = [{"token": KEY[start:start + 4], "logprob": -0.1}
              for start in range(0, len(KEY), 4)]
    _, reader = read(chunk("x", logprobs={"content": tokens}), b"data: [DONE]\n\n")
    assert reader.reply().tokens is None and reader.reply().body["choices"][0]["logprobs"] is None


def test_a_forged_ragshield_field_is_taken_out_wherever_it_could_pass_for_the_guard_s() -> None:
    lie = {"kept": True}
    body = {"ragshield": lie, "choices": [
        {"index": 0, "ragshield": lie, "delta": {"content": "a", "ragshield": lie},
         "message": {"content": "a", "ragshield": lie}}, "not a choice"]}
    assert "ragshield" not in json.dumps(unforged(body))
    assert unforged(body)["choices"][0]["message"] == {"content": "a"}
    assert unforged(["not", "a", "completion"]) == ["not", "a", "completion"]
