"""The app launched for real on a free port, driven through gradio_client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest
from gradio_client import Client

from tests.conftest import free_port, running_server

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def running_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    folder = tmp_path_factory.mktemp("app")
    url = f"http://127.0.0.1:{port}/"
    with running_server(
        [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)], url,
        folder / "app.log", cwd=ROOT, env={"RAGSHIELD_DATABASE_URL": f"sqlite:///{folder}/app.db"},
    ):
        yield url


def test_ask_endpoint_answers_and_replays_from_the_cache(running_app):
    client = Client(running_app, verbose=False)
    answer, info = client.predict("Ada Lovelace wrote the first program.", "Who wrote the first program?",
                                  api_name="/ask")
    assert "ada" in answer.lower()
    assert "qwen" in info
    again, info_again = client.predict("Ada Lovelace wrote the first program.",
                                       "Who wrote the first program?", api_name="/ask")
    assert again == answer and "call cache" in info_again


def test_empty_question_is_refused_politely(running_app):
    answer, info = Client(running_app, verbose=False).predict("x", "   ", api_name="/ask")
    assert answer == "" and "question" in info.lower()
