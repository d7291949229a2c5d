"""Logins without a server: the auth file's rules (ragshield/ui/auth.py) and the failed-login
throttle's policy and form reading (ragshield/ui/login_throttle.py) on a fake clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from ragshield.ui.auth import AuthFileError, read_auth_file
from ragshield.ui.login_throttle import LoginThrottle, form_name


def auth_file(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "users.txt"
    path.write_bytes(content)
    return path


# -- the auth file -------------------------------------------------------------------------

def test_the_password_is_everything_after_the_first_colon_as_written(tmp_path: Path) -> None:
    path = auth_file(tmp_path, b"  alice : lead and trail  \n"
                               b"bob:a:b:c\r\n"
                               b"\tcarol:\tx\x0cy \r\n"
                               b"# dave:comment\n\n   \n"
                               b"erin:no newline at the end ")
    assert [user[:2] for user in read_auth_file(path)] == [
        ("alice", " lead and trail  "), ("bob", "a:b:c"), ("carol", "\tx\x0cy "),
        ("erin", "no newline at the end ")]


def test_a_byte_order_mark_and_a_lone_cr_are_read_as_written(tmp_path: Path) -> None:
    path = auth_file(tmp_path, "\ufeffalice:pa\rss\n".encode())
    assert [user[:2] for user in read_auth_file(path)] == [("alice", "pa\rss")]


@pytest.mark.parametrize(("content", "message"), [
    (b"alice\n", ":1: expected name:password"),
    (b"alice:\n", ":1: expected name:password"),
    (b"  :secret\n", ":1: expected name:password"),
    (b"alice:a\n alice :b\n", ":2: user 'alice' is listed twice"),
    (b"# nobody\n\n", ": no users"),
    (b"alice:\xff\n", ": not UTF-8 text"),
])
def test_bad_auth_files_are_refused_naming_the_line(tmp_path: Path, content: bytes,
                                                    message: str) -> None:
    path = auth_file(tmp_path, content)
    with pytest.raises(AuthFileError, match=f"^{path}{message}"):
        read_auth_file(path)


def test_a_missing_file_or_a_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(AuthFileError, match=f"^{tmp_path}: is a folder, not an auth file$"):
        read_auth_file(tmp_path)
    with pytest.raises(AuthFileError, match="nope.txt: no such auth file$"):
        read_auth_file(tmp_path / "nope.txt")


# -- the throttle --------------------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fail(throttle: LoginThrottle, times: int, address: str = "10.0.0.1",
         name: str = "alice") -> None:
    for _ in range(times):
        assert throttle.attempt(address, name) == 0.0


def test_the_wait_starts_after_the_limit_and_doubles_up_to_the_ceiling() -> None:
    clock = Clock()
    throttle = LoginThrottle(limit=3, first_wait_s=1, longest_wait_s=5, clock=clock)
    fail(throttle, 3)
    assert throttle.attempt("10.0.0.1", "alice") == 1.0
    clock.now += 1
    fail(throttle, 1)
    assert throttle.attempt("10.0.0.1", "alice") == 2.0
    clock.now += 2
    fail(throttle, 1)
    assert throttle.attempt("10.0.0.1", "alice") == 4.0
    clock.now += 4
    fail(throttle, 1)
    assert throttle.attempt("10.0.0.1", "alice") == 5.0  # the ceiling
    clock.now += 0.5
    assert throttle.attempt("10.0.0.1", "alice") == 4.5  # a refused try counts nothing


def test_the_address_and_the_name_are_throttled_each_on_its_own() -> None:
    throttle = LoginThrottle(limit=2, clock=Clock())
    fail(throttle, 2)
    assert throttle.attempt("10.0.0.1", "bob") > 0  # the address
    assert throttle.attempt("10.0.0.2", "alice") > 0  # the name
    assert throttle.attempt("10.0.0.2", "bob") == 0.0  # neither


def test_parallel_logins_count_before_they_are_answered() -> None:
    """Each attempt counts as failed when it starts: a burst cannot outrun the count."""
    throttle = LoginThrottle(limit=5, clock=Clock())
    started = [throttle.attempt("10.0.0.1", "alice") for _ in range(100)]
    assert started.count(0.0) == 5


def test_a_success_clears_both_counts() -> None:
    throttle = LoginThrottle(limit=2, clock=Clock())
    fail(throttle, 1)
    throttle.succeeded("10.0.0.1", "alice")
    fail(throttle, 1)
    assert throttle.wait_s("10.0.0.1", "alice") == 0.0


def test_failures_are_forgotten_after_a_quiet_while() -> None:
    clock = Clock()
    throttle = LoginThrottle(limit=2, first_wait_s=1, forget_after_s=60, clock=clock)
    fail(throttle, 2)
    assert throttle.wait_s("10.0.0.1", "alice") > 0
    clock.now += 60
    assert throttle.wait_s("10.0.0.1", "alice") == 0.0
    fail(throttle, 1)
    assert throttle.wait_s("10.0.0.1", "alice") == 0.0  # counting starts over


def test_counts_stay_bounded_under_a_flood_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ragshield.ui.login_throttle.MAX_KEYS", 100)
    clock = Clock()
    throttle = LoginThrottle(limit=1000, forget_after_s=10, clock=clock)
    for index in range(1000):
        clock.now += 1
        throttle.attempt(f"10.0.{index}.1", f"name-{index}")
    assert len(throttle.failures) <= 2 * 100 + 2


# -- reading the name from a login form ----------------------------------------------------

def name_in(request: httpx.Request) -> str:
    body = request.read()
    scope = {"type": "http", "method": "POST", "path": "/login", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in request.headers.items()]}
    return asyncio.run(form_name(scope, body))


@pytest.mark.parametrize("as_files", [False, True])
def test_the_name_is_read_from_url_encoded_and_multipart_forms(as_files: bool) -> None:
    """gradio_client posts URL-encoded, the browser's login form multipart."""
    fields = {"username": "  alice ", "password": "x"}
    request = (httpx.Request("POST", "http://h/login", files={k: (None, v) for k, v in
                                                               fields.items()})
               if as_files else httpx.Request("POST", "http://h/login", data=fields))
    assert name_in(request) == "alice"


def test_a_form_without_a_name_or_a_broken_one_reads_as_no_name() -> None:
    assert name_in(httpx.Request("POST", "http://h/login", data={"password": "x"})) == ""
    broken = httpx.Request("POST", "http://h/login", content=b"--x\r\nnonsense",
                           headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert name_in(broken) == ""
