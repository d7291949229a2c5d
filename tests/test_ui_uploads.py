"""Files into the app (issue 55): an event takes only a file uploaded to the app, whatever
server path a client names (ui/uploaded_files.py), and the upload route takes files only
from admins when the app has logins, each uploader and everyone together bounded within a
window (ui/upload_gate.py). The launched app is probed in
tests/reliability/test_probe_round4_files.py."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from ragshield.ui.app import build_app
from ragshield.ui.upload_gate import (ADMINS_ONLY, Bound, UploadBounds, UploadGate,
                                      UploadQuota)
from ragshield.ui.uploaded_files import (NOT_UPLOADED, UploadedFilesOnly, check_uploaded,
                                         named_files)

BOUNDS = UploadBounds(window_s=60, person=Bound(files=3, size=1000),
                      everyone=Bound(files=5, size=3000))


def file_data(path: Path | str) -> dict[str, Any]:
    return {"path": str(path), "meta": {"_type": "gradio.FileData"}}


# -- an event's files ---------------------------------------------------------------------

def test_every_path_an_input_names_is_found() -> None:
    inputs = [file_data("/a.csv"), "detect", [file_data("/b.csv")], {"value": {"path": "/c"}},
              None, {"path": 3}]
    assert named_files(inputs) == ["/a.csv", "/b.csv", "/c"]


def test_only_the_exact_paths_uploaded_pass() -> None:
    uploads = {"/tmp/gradio/ab12/a.csv"}
    check_uploaded([file_data("/tmp/gradio/ab12/a.csv"), "detect", None], uploads)
    check_uploaded(["no file at all", 1], set())
    for named in ("/etc/passwd.csv", "/tmp/gradio/ab12/../ab12/a.csv", "/tmp/gradio",
                  "/tmp/gradio/ab12/a.csv/"):
        with pytest.raises(gr.Error) as refusal:
            check_uploaded([file_data(named)], uploads)
        assert refusal.value.message == NOT_UPLOADED  # the same, whatever the path


@pytest.fixture
def blocks() -> Iterator[UploadedFilesOnly]:
    with UploadedFilesOnly() as app:
        gr.File(type="filepath").change(lambda path: path, gr.File(), gr.Textbox())
    yield app


def test_the_blocks_refuses_a_file_not_uploaded_before_gradio_reads_it(
        blocks: UploadedFilesOnly, tmp_path: Path) -> None:
    block_fn = next(iter(blocks.fns.values()))
    secret = tmp_path / "secret.csv"
    secret.write_text("a,b\n1,2\n")
    with pytest.raises(gr.Error, match="not uploaded"):
        asyncio.run(blocks.preprocess_data(block_fn, [file_data(secret)], None))
    blocks.upload_file_set.add(str(secret))  # as Gradio's upload route records an upload
    processed = asyncio.run(blocks.preprocess_data(block_fn, [file_data(secret)], None))
    assert Path(processed[0]).read_text() == "a,b\n1,2\n"


def test_a_call_from_python_is_not_checked(blocks: UploadedFilesOnly, tmp_path: Path) -> None:
    block_fn = next(iter(blocks.fns.values()))
    path = tmp_path / "local.csv"
    path.write_text("x\n")
    processed = asyncio.run(blocks.preprocess_data(block_fn, [file_data(path)], None, True))
    assert Path(processed[0]).read_text() == "x\n"


def test_the_app_checks_its_events_files(settings) -> None:
    assert isinstance(build_app(settings), UploadedFilesOnly)


# -- the upload route's bounds --------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_person_is_bounded_in_files_then_waits_for_the_oldest_to_leave_the_window(
        ) -> None:
    clock = Clock()
    quota = UploadQuota(BOUNDS, clock)
    for _ in range(3):
        assert quota.wait_s("ann", 10) == 0
        quota.record("ann", 1, 10)
        clock.now += 5
    assert quota.wait_s("ann", 10) == pytest.approx(45)  # the first leaves at 1060
    assert quota.wait_s("bob", 10) == 0  # another person is not held up
    clock.now = 1060
    assert quota.wait_s("ann", 10) == 0


def test_each_person_is_bounded_in_bytes_and_a_file_over_the_bound_never_fits() -> None:
    clock = Clock()
    quota = UploadQuota(BOUNDS, clock)
    quota.record("ann", 1, 600)
    clock.now += 10
    quota.record("ann", 1, 300)
    assert quota.wait_s("ann", 100) == 0
    assert quota.wait_s("ann", 200) == pytest.approx(50)  # once the 600 bytes leave
    assert math.isinf(quota.wait_s("bob", 1001))


def test_everyone_together_is_bounded_too() -> None:
    quota = UploadQuota(BOUNDS, Clock())
    for person in ("a", "b", "c", "d", "e"):
        quota.record(person, 1, 10)
    assert quota.wait_s("f", 10) == pytest.approx(60)
    assert quota.spent.keys() >= {("person", "a"), ("everyone", "")}


def upload_app(tokens: dict[str, str] | None, may_upload: Any = lambda name: True,
               clock: Clock | None = None) -> tuple[Starlette, list[str]]:
    """A stand-in for Gradio's app behind the gate: its upload route keeps two files; with
    `tokens`, the app has logins (Gradio's `auth`, `tokens` and `cookie_id`)."""
    calls: list[str] = []

    async def upload(request: Any) -> JSONResponse:
        calls.append((await request.body()).decode())
        return JSONResponse(["/up/1/a.csv", "/up/2/b.csv"])

    app = Starlette(routes=[Route("/gradio_api/upload", upload, methods=["POST"])],
                    middleware=[Middleware(UploadGate, may_upload=may_upload, bounds=BOUNDS,
                                           clock=clock or Clock())])
    app.auth = None if tokens is None else ["check"]  # type: ignore[attr-defined]
    app.tokens, app.cookie_id = tokens or {}, "c1"  # type: ignore[attr-defined]
    return app, calls


async def post(app: Starlette, content: Any = b"files", token: str | None = None
               ) -> httpx.Response:
    cookies = {"access-token-c1": token} if token else None
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app", cookies=cookies) as client:
        return await client.post("/gradio_api/upload", content=content)


def test_with_logins_only_those_who_may_upload_get_through() -> None:
    app, calls = upload_app({"t-ann": "ann", "t-boss": "boss"},
                            may_upload=lambda name: name == "boss")
    refused = asyncio.run(post(app, token="t-ann"))
    assert refused.status_code == 403 and refused.json() == {"detail": ADMINS_ONLY}
    assert calls == []  # Gradio never saw the body
    assert asyncio.run(post(app, token="t-boss")).status_code == 200
    assert calls == ["files"]


def test_an_upload_must_give_its_size() -> None:
    app, calls = upload_app(None)

    async def chunked() -> Any:
        yield b"files"

    answer = asyncio.run(post(app, chunked()))
    assert answer.status_code == 411 and calls == []


def test_the_files_gradio_kept_count_and_the_next_upload_waits() -> None:
    app, calls = upload_app(None)  # without logins: bounded per client address
    assert asyncio.run(post(app)).status_code == 200  # two files kept: 2 of 3
    assert asyncio.run(post(app)).status_code == 200  # the third (and a fourth)
    refused = asyncio.run(post(app))
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) == 60
    assert "Too many uploads" in refused.json()["detail"] and len(calls) == 2
    assert asyncio.run(post(app, b"x" * 1001)).status_code == 413
