"""A client that calls the web app the way one tab of its page does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

# uvicorn (under Gradio) closes a connection idle for 5 s, and httpx's pool reuses one idle
# for up to 5 s: a request sent on a connection the server is closing at that moment is
# reset (ReadError). A browser-like client lets its idle connections go well before the
# server does, so that no request races the server's close.
KEEPALIVE_EXPIRY_S = 2.0


def browser_like_client(base_url: str, timeout: float) -> httpx.Client:
    """An HTTP client for one tab of the app: its idle connections expire before the
    server's keep-alive timeout, so a request never goes out on a connection being closed."""
    import httpx

    return httpx.Client(base_url=base_url, timeout=timeout,
                        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))


def call_like_browser(http: httpx.Client, api_name: str, data: list[Any],
                      session: str) -> Any:
    """Call an event of the app the way its page does for an event that skips Gradio's
    queue (the label, skip, undo and next-item events): one POST to /gradio_api/run/<api
    name> with the page's session hash. Returns the event's outputs (one value, or a list);
    raises httpx.HTTPStatusError on an error answer.

    gradio_client goes through the queue's server-sent events instead and polls for them
    (50 ms sleeps), which adds 100-300 ms to every call that a browser never waits for."""
    response = http.post(f"gradio_api/run/{api_name}",
                         json={"data": data, "session_hash": session})
    response.raise_for_status()
    outputs = response.json()["data"]
    return outputs[0] if len(outputs) == 1 else outputs
