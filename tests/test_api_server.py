"""The guard API for real: `python app.py --api-only` on 127.0.0.1 in front of a llama.cpp
server (the embedded model behind `python -m llama_cpp.server`), which is both the upstream
of the proxy and the judges' backend. Called with the stock openai client and with raw HTTP:
a judged completion, keys, bad bodies, 8 clients at once (every answered call stored once),
and an upstream that is down."""

from __future__ import annotations

import json
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from tests.conftest import free_port
from tests.run_helpers import llama_server_command

KEY = "test-key-" + "x" * 16
UPSTREAM_KEY = "upstream-key-never-shown-42"
PASSAGES = [{"text": "The Normans were the people who gave their name to Normandy, a region "
                     "in France."}]


@pytest.fixture(scope="module")
def llama_url(qwen_path: Path, run_server,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama") / "llama.log"
    with run_server(llama_server_command(qwen_path, port), f"{url}/models", log):
        yield url


def api_only(folder: Path, run_server, upstream: str, judge_url: str) -> Iterator[tuple[str, Path]]:
    """app.py --api-only with keys, the given upstream, and the llama.cpp server as the
    judges' backend; yields (base URL, database file)."""
    port = free_port()
    keys = folder / "keys.txt"
    keys.write_text(f"# test\n{KEY}\n")
    database = folder / "api.db"
    args = [sys.executable, "app.py", "--api-only", "--port", str(port), "--api-keys", str(keys),
            "--upstream", upstream]
    env = {"RAGSHIELD_DATABASE_URL": f"sqlite:///{database}", "RAGSHIELD_BACKEND": "openai",
           "RAGSHIELD_OPENAI_BASE_URL": judge_url, "RAGSHIELD_MODEL": "qwen-embedded",
           "RAGSHIELD_UPSTREAM_API_KEY": UPSTREAM_KEY, "RAGSHIELD_LLM_CACHE": "false"}
    base = f"http://127.0.0.1:{port}"
    with run_server(args, f"{base}/v1/health", folder / "app.log", env=env,
                    cwd=Path(__file__).resolve().parents[1]):
        yield base, database


@pytest.fixture(scope="module")
def guard(llama_url: str, run_server, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[str, Path]]:
    yield from api_only(tmp_path_factory.mktemp("guard"), run_server, llama_url, llama_url)


def stored_answers(database: Path) -> list[tuple[str, int]]:
    """(sample id, number of main answers) of every live sample."""
    with sqlite3.connect(database) as connection:
        return connection.execute(
            "SELECT s.external_id, COUNT(a.id) FROM answers a JOIN samples s "
            "ON s.id = a.sample_id JOIN runs r ON r.id = a.run_id "
            "WHERE r.status = 'live' AND a.role = 'main' GROUP BY s.external_id").fetchall()


def test_the_openai_client_gets_a_judged_completion(guard: tuple[str, Path]) -> None:
    import openai  # here: its import takes half a second of every test worker's collection

    base, database = guard
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    completion = client.chat.completions.create(
        model="qwen-embedded", max_tokens=24, temperature=0,
        messages=[{"role": "user", "content": "Who gave their name to Normandy? Use: "
                                              + PASSAGES[0]["text"]}],
        extra_body={"ragshield": {"question": "Who gave their name to Normandy?",
                                  "passages": PASSAGES, "judges": ["trivial", "p_true"],
                                  "rule": "p_true"}})
    verdicts = completion.model_extra["ragshield"]  # type: ignore[index]
    content = completion.choices[0].message.content
    assert [v["judge"] for v in verdicts["verdicts"]] == ["trivial", "p_true"]
    p_true = verdicts["verdicts"][1]
    assert 0 <= p_true["score"] <= 1 and p_true["cost"]["calls"] == 1
    assert verdicts["kept"] == (p_true["score"] >= 0.5)
    assert content == (verdicts["answer"]["text"] if verdicts["kept"] else ABSTAIN_MESSAGE)
    assert verdicts["answer"]["model"] == "qwen-embedded" and verdicts["record"]["stored"]
    assert dict(stored_answers(database))[verdicts["record"]["sample_id"]] == 1

    wrong = openai.OpenAI(base_url=f"{base}/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="qwen-embedded",
                                      messages=[{"role": "user", "content": "hi"}])


def test_bad_requests_get_named_errors_and_store_nothing(guard: tuple[str, Path]) -> None:
    base, database = guard
    before = stored_answers(database)
    auth = {"Authorization": f"Bearer {KEY}", "content-type": "application/json"}
    broken = httpx.post(f"{base}/v1/judge", content=b'{"question": "x", ', headers=auth)
    missing = httpx.post(f"{base}/v1/judge", json={"question": "x"}, headers=auth)
    huge = httpx.post(f"{base}/v1/judge", content=b"{" + b" " * 2_000_000 + b"}", headers=auth)
    keyless = httpx.post(f"{base}/v1/judge", json={"question": "x", "answer": "y"})
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "invalid_json"
    assert missing.status_code == 422 and missing.json()["error"]["param"] == "answer"
    assert huge.status_code == 413
    assert keyless.status_code == 401
    assert stored_answers(database) == before


def test_eight_clients_at_once_are_each_answered_and_stored_once(guard: tuple[str, Path]) -> None:
    base, database = guard
    questions = [f"Which people gave their name to Normandy (ask {i})?" for i in range(8)]

    def judge(question: str) -> httpx.Response:
        return httpx.post(f"{base}/v1/judge", timeout=300, headers={
            "Authorization": f"Bearer {KEY}"}, json={
            "question": question, "passages": PASSAGES, "answer": "The Normans",
            "judges": ["p_true"]})

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(judge, questions))
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    ids = [r.json()["record"]["sample_id"] for r in responses]
    counts = dict(stored_answers(database))
    assert len(set(ids)) == 8 and all(counts[sample_id] == 1 for sample_id in ids)


def test_an_upstream_that_is_down_is_a_502_without_the_key(
        llama_url: str, run_server, tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    for base, database in api_only(tmp_path, run_server, closed, llama_url):
        response = httpx.post(f"{base}/v1/chat/completions", timeout=60, headers={
            "Authorization": f"Bearer {KEY}"}, json={
            "model": "m", "messages": [{"role": "user", "content": "Who?"}],
            "ragshield": {"passages": PASSAGES}})
        assert response.status_code == 502
        assert "cannot reach the upstream" in response.json()["error"]["message"]
        assert UPSTREAM_KEY not in response.text and KEY not in response.text
        assert stored_answers(database) == []
        log = json.dumps((tmp_path / "app.log").read_text())
        assert UPSTREAM_KEY not in log
