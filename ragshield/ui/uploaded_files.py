"""An event takes only files uploaded to this app, never another file of the server.

A file component's value, as a client posts it to an event, is a server path
(`{"path": "/any/file.csv", "meta": {"_type": "gradio.FileData"}}`). Gradio copies the file
at that path into its cache and hands the copy to the handler. It refuses a path outside
its upload folder only in a Blocks that launched itself (processing_utils._check_allowed
reads `has_launched`), and this app never launches: it is mounted on the API's server
(gr.mount_gradio_app). So a logged-in client could have any server file whose name ends as a
dataset's read by the Data tab (issue 55).

UploadedFilesOnly, a Blocks, refuses an event whose inputs name a file that Gradio's upload
route did not hand out since the server started (Blocks.upload_file_set), before Gradio
opens it, for every file component of every tab. Each upload lies in a folder named by a
seeded hash of its content, and its path goes only to whoever uploaded it, so nobody can
name another person's upload. The refusal says the same of every path, there or not.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

import gradio as gr
from gradio_client import utils as client_utils

log = logging.getLogger(__name__)

NOT_UPLOADED = ("That file was not uploaded to this page (or the app restarted since): "
                "upload it again.")


def named_files(value: Any) -> list[str]:
    """The server paths that an event's input names: each dict with a "path" string, at any
    depth (a FileData, a list of them, a component's props)."""
    paths: list[str] = []

    def keep(file: dict[str, Any]) -> dict[str, Any]:
        paths.append(file["path"])
        return file

    client_utils.traverse(value, keep, client_utils.is_file_obj)
    return paths


def check_uploaded(inputs: Any, uploads: Collection[str]) -> None:
    """gr.Error when `inputs` name a file that is not one of `uploads` (exact paths, as the
    upload route returned them: a path written another way is refused too)."""
    if any(path not in uploads for path in named_files(inputs)):
        log.warning("refused an event naming a file that was not uploaded to the app")
        raise gr.Error(NOT_UPLOADED, title="Upload refused", print_exception=False)


class UploadedFilesOnly(gr.Blocks):
    """gr.Blocks whose events take only files uploaded to it."""

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], state: Any,
                              explicit_call: bool = False) -> list[Any]:
        # explicit_call: the Blocks called as a function from Python, not by a client.
        if not explicit_call:
            check_uploaded(inputs, self.upload_file_set)
        return await super().preprocess_data(block_fn, inputs, state, explicit_call)
