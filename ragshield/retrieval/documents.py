"""Reading documents to ingest from files and folders: .txt, .md, .html/.htm (turned into
Markdown) and .jsonl (one document per line)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

from ragshield import strict_json
from ragshield.retrieval.errors import (
    BadJsonlLine,
    CorpusPathNotFound,
    DuplicateDocumentId,
    NotUtf8Error,
    UnreadableFile,
    UnsupportedFileType,
)
from ragshield.html_to_markdown import html_to_markdown

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
JSONL_SUFFIXES = frozenset({".jsonl"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | JSONL_SUFFIXES


@dataclass
class Document:
    """One document before chunking. For HTML files `text` is the Markdown of the page:
    chunk offsets refer to this text."""

    id: str
    text: str
    title: str | None = None
    origin: str = ""  # the file (and line) it was read from
    meta: dict[str, Any] = field(default_factory=dict)  # further fields of a JSONL record


@dataclass
class DocumentsRead:
    documents: list[Document]
    files: int  # files read
    skipped: list[str]  # files found in folders whose type ingestion does not read


def read_documents(paths: Sequence[str | Path]) -> DocumentsRead:
    """Every document under `paths` (files, or folders searched recursively), in a stable order.

    Files named directly must have a supported suffix; inside folders, other files are skipped
    and listed in the result, hidden files and folders are left out. A file or folder that
    cannot be read (access denied, removed meanwhile) is an error, never left out silently.
    """
    documents: list[Document] = []
    seen: dict[str, str] = {}
    files = 0
    skipped: list[str] = []
    for file, doc_id in _files_with_ids(paths, skipped):
        files += 1
        for document in _read_file(file, doc_id):
            if document.id in seen:
                raise DuplicateDocumentId(
                    f"document id '{document.id}' appears twice: in {seen[document.id]} and in "
                    f"{document.origin}"
                )
            seen[document.id] = document.origin
            documents.append(document)
    return DocumentsRead(documents, files, skipped)


def _files_with_ids(paths: Sequence[str | Path], skipped: list[str]) -> Iterator[tuple[Path, str]]:
    """Each file to read and the document id it gets: its path relative to the folder that was
    named, or its file name when the file itself was named."""
    for given in map(Path, paths):
        if not given.exists():
            raise CorpusPathNotFound(f"{given}: no such file or folder")
        if given.is_file():
            if given.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise UnsupportedFileType(
                    f"{given}: cannot ingest '{given.suffix or 'no suffix'}' files "
                    f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})"
                )
            yield given, given.name
            continue
        for file in _folder_files(given):
            relative = file.relative_to(given)
            if file.suffix.lower() not in SUPPORTED_SUFFIXES:
                skipped.append(str(file))
                continue
            yield file, relative.as_posix()


def _folder_files(folder: Path) -> list[Path]:
    """The files under `folder` but not in hidden folders, hidden ones left out, sorted. A
    folder that cannot be listed is an error: its files would be missing without a word."""
    def fail(exc: OSError) -> NoReturn:
        raise UnreadableFile(f"{exc.filename}: cannot list the folder ({exc.strerror})") from exc

    files: list[Path] = []
    for root, folders, names in os.walk(folder, onerror=fail):
        folders[:] = [name for name in folders if not name.startswith(".")]
        files.extend(Path(root, name) for name in names if not name.startswith("."))
    return sorted(files)


def _read_bytes(file: Path) -> bytes:
    """The bytes of a regular file (reading a named pipe would wait forever); a file that
    vanished or cannot be read is an error naming it, as its documents would be lost."""
    try:
        if not stat.S_ISREG(file.stat().st_mode):
            raise UnreadableFile(f"{file}: cannot read (not a regular file)")
        return file.read_bytes()
    except OSError as exc:
        raise UnreadableFile(f"{file}: cannot read ({exc.strerror})") from exc


def _read_file(file: Path, doc_id: str) -> list[Document]:
    suffix = file.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return list(_read_jsonl(file, doc_id))
    text = _decode(_read_bytes(file), str(file))
    if suffix in HTML_SUFFIXES:
        text = html_to_markdown(text)
    return [Document(id=doc_id, text=text, origin=str(file))]


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotUtf8Error(
            f"{where}: not UTF-8 (invalid byte 0x{data[exc.start]:02x} at byte {exc.start}); "
            "convert the file to UTF-8 first"
        ) from None


def _read_jsonl(file: Path, file_id: str) -> Iterator[Document]:
    for number, raw in enumerate(_read_bytes(file).split(b"\n"), start=1):
        where = f"{file}:{number}"
        line = _decode(raw, where).strip()
        if not line:
            continue
        try:
            record = strict_json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadJsonlLine(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        except strict_json.JsonValueError as exc:  # NaN, 1e999, huge integers, deep nesting
            raise BadJsonlLine(f"{where}: {exc}") from None
        yield _document_from_record(record, where, default_id=f"{file_id}:{number}")


def _document_from_record(record: Any, where: str, default_id: str) -> Document:
    if not isinstance(record, dict):
        raise BadJsonlLine(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "text" not in record:
        raise BadJsonlLine(f"{where}: field 'text' is missing")
    text, title, doc_id = record["text"], record.get("title"), record.get("id", default_id)
    if not isinstance(text, str):
        raise BadJsonlLine(f"{where}: field 'text' must be a string, got {type(text).__name__}")
    if title is not None and not isinstance(title, str):
        raise BadJsonlLine(f"{where}: field 'title' must be a string, got {type(title).__name__}")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or doc_id == "":
        raise BadJsonlLine(f"{where}: field 'id' must be a non-empty string or an integer")
    meta = {key: value for key, value in record.items() if key not in {"id", "title", "text"}}
    return Document(id=str(doc_id), text=text, title=title, origin=where, meta=meta)
