"""The app launched for real on a free port, driven through gradio_client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from gradio_client import Client

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def running_app(tmp_path_factory) -> str:
    port = free_port()
    db = tmp_path_factory.mktemp("app") / "app.db"
    process = subprocess.Popen(
        [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env={**os.environ, "RAGSHIELD_DATABASE_URL": f"sqlite:///{db}"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"app exited: {process.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("app did not start within 180 s")
            time.sleep(0.5)
    yield url
    process.terminate()
    process.wait(timeout=30)


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
