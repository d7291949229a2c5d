"""Reading dataset files: plain, .bz2 or .gz; JSON lines, JSON documents and CSV rows.

Every reader turns bad bytes, bad JSON and unreadable files into DatasetError subclasses that
name the file and the line. JSON lines and CSV rows are streamed one at a time.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import stat
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from ragshield import strict_json
from ragshield.csv_fields import allow_long_fields
from ragshield.datasets.errors import DatasetFileError, DatasetFormatError

OPENERS: dict[str, Callable[..., Any]] = {".bz2": bz2.open, ".gz": gzip.open}
COMPRESSION_SUFFIXES = tuple(OPENERS)


def check_readable(path: Path) -> None:
    """Fail early, with a message of its own, for a missing, a folder or an empty file (one
    stat call: the file may vanish between two)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DatasetFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise DatasetFileError(f"{path}: cannot read: {exc.strerror}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise DatasetFileError(f"{path}: is a folder, not a file")
    if info.st_size == 0:
        raise DatasetFormatError(path, "the file is empty")


@contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed according to its suffix."""
    check_readable(path)
    opener = OPENERS.get(path.suffix.lower(), open)
    try:
        with opener(path, "rb") as handle:
            yield handle
    except (PermissionError, FileNotFoundError) as exc:  # FileNotFoundError: removed meanwhile
        raise DatasetFileError(f"{path}: cannot read: {exc.strerror}") from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetFormatError(path, f"cannot read or decompress the file: {exc}") from exc


def parse_json(path: Path, text: str, where: str | None, field: str | None = None) -> Any:
    """The value of `text` (found at `where`, in `field` when it is a cell of a record)."""
    try:
        return strict_json.loads(text, field)
    except json.JSONDecodeError as exc:
        place = where or f"line {exc.lineno}"
        raise DatasetFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})",
                                 where=place, field=field) from exc
    except strict_json.JsonValueError as exc:  # NaN, 1e999, overlong integers, deep nesting
        raise DatasetFormatError(path, f"invalid JSON: {exc.reason}", where=where,
                                 field=exc.field) from exc


def decode_utf8(path: Path, data: bytes, first_line: int = 1) -> str:
    """`data` as text (a leading byte-order mark dropped); bad bytes are reported by line."""
    try:
        return data.decode("utf-8-sig" if first_line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetFormatError(
            path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column})",
            where=f"line {line}",
        ) from exc


def utf8_problem(path: Path) -> str:
    """Where `path` first stops being UTF-8, as a message naming its line and column: for a
    reader in text mode, whose UnicodeDecodeError knows no line."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                decode_utf8(path, raw, number)
            except DatasetFormatError as exc:
                return str(exc)
    return f"{path}: not valid UTF-8"


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line of a JSONL file."""
    with open_binary(path) as handle:
        for number, raw in enumerate(handle, start=1):
            # Without its line break: a line cut short is then reported at its own end.
            line = decode_utf8(path, raw, number).rstrip("\r\n")
            if line.strip():
                yield number, parse_json(path, line, f"line {number}")


def iter_json_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, value) for each record of a JSON lines file ("line N"), or of a file that holds
    one JSON array of them ("item N", from 1): the form many tools export."""
    if _first_character(path) == b"[":
        document = read_json_document(path)
        if isinstance(document, list):
            yield from ((f"item {number}", value)
                        for number, value in enumerate(document, start=1))
            return
    yield from ((f"line {number}", value) for number, value in iter_json_lines(path))


def _first_character(path: Path) -> bytes:
    """The file's first byte that is not white space or a byte-order mark (b"" for none)."""
    with open_binary(path) as handle:
        while chunk := handle.read(4096):
            rest = chunk.removeprefix(b"\xef\xbb\xbf").lstrip()
            if rest:
                return rest[:1]
    return b""


def read_json_document(path: Path) -> Any:
    """A file holding one JSON value (SQuAD, HotpotQA)."""
    with open_binary(path) as handle:
        data = handle.read()
    return parse_json(path, decode_utf8(path, data), None)


def peek_json(path: Path) -> Any:
    """The first value of a JSON-lines file, or the whole value of a (pretty-printed) JSON file."""
    with open_binary(path) as handle:
        first = next((raw for raw in handle if raw.strip()), b"")
    if not first:
        raise DatasetFormatError(path, "the file holds only blank lines")
    try:
        return parse_json(path, decode_utf8(path, first), "line 1")
    except DatasetFormatError as first_line_error:
        try:
            return read_json_document(path)
        except DatasetFormatError:
            raise first_line_error from None


def _text_lines(path: Path, handle: BinaryIO) -> Iterator[str]:
    """The lines of a file as text, split where csv splits them (at \\n, \\r\\n or \\r; line
    ends kept). Each is decoded alone, so bad bytes are reported at their own line rather
    than wherever a read-ahead buffer had got to."""
    number = 0
    for raw in handle:
        for line in raw.splitlines(keepends=True):
            number += 1
            yield decode_utf8(path, line, number)


def _csv_rows(path: Path, lines: Iterator[str]) -> Iterator[tuple[int, list[str]]]:
    """(line where the row starts, its cells) for each CSV row of `lines`: a row with quoted
    line breaks spans several lines, and its first is where people look."""
    allow_long_fields()
    reader = csv.reader(lines)
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DatasetFormatError(path, f"bad CSV: {exc}", where=f"line {start}") from exc
        yield start, cells


def iter_csv_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """(line where the row starts, row by column name) for each row of a CSV file with a
    header line; blank lines are skipped."""
    with open_binary(path) as handle:
        rows = _csv_rows(path, _text_lines(path, handle))
        header = next(rows, (1, []))[1]
        if not header:
            raise DatasetFormatError(path, "no header line", where="line 1")
        if len(set(header)) != len(header):
            raise DatasetFormatError(path, f"repeated column names in the header {header}",
                                     where="line 1")
        for start, cells in rows:
            if not cells:
                continue
            if len(cells) != len(header):
                raise DatasetFormatError(
                    path, f"the row does not have the header's {len(header)} cells",
                    where=f"line {start}")
            yield start, dict(zip(header, cells))


def content_suffix(path: Path) -> str:
    """The suffix that names the content: `.jsonl` for both `x.jsonl` and `x.jsonl.bz2`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""

