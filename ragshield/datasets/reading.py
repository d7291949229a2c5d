"""Reading dataset files: plain, .bz2 or .gz; JSON lines, JSON documents and CSV rows.

Every reader turns bad bytes, bad JSON and unreadable files into DatasetError subclasses that
name the file and the line. JSON lines and CSV rows are streamed one at a time.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from ragshield.datasets.errors import DatasetFileError, DatasetFormatError

OPENERS: dict[str, Callable[..., BinaryIO]] = {".bz2": bz2.open, ".gz": gzip.open}
COMPRESSION_SUFFIXES = tuple(OPENERS)


def check_readable(path: Path) -> None:
    """Fail early, with a message of its own, for a missing, a folder or an empty file."""
    if not path.exists():
        raise DatasetFileError(f"{path}: no such file")
    if path.is_dir():
        raise DatasetFileError(f"{path}: is a folder, not a file")
    if path.stat().st_size == 0:
        raise DatasetFormatError(path, "the file is empty")


@contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed according to its suffix."""
    check_readable(path)
    opener = OPENERS.get(path.suffix.lower(), open)
    try:
        with opener(path, "rb") as handle:
            yield handle
    except PermissionError as exc:
        raise DatasetFileError(f"{path}: cannot read: {exc.strerror}") from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetFormatError(path, f"cannot read or decompress the file: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(path: Path, text: str, where: str | None) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        place = where or f"line {exc.lineno}"
        raise DatasetFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})",
                                 where=place) from exc
    except (ValueError, RecursionError) as exc:  # huge integers, NaN, absurd nesting
        raise DatasetFormatError(path, f"invalid JSON: {exc}", where=where) from exc


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


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line of a JSONL file."""
    with open_binary(path) as handle:
        for number, raw in enumerate(handle, start=1):
            line = decode_utf8(path, raw, number)
            if line.strip():
                yield number, parse_json(path, line, f"line {number}")


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


def iter_csv_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row by column name) for each row of a CSV file with a header line."""
    with open_binary(path) as handle:
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", newline="")
        reader = csv.DictReader(text)
        try:
            header = reader.fieldnames
            if not header:
                raise DatasetFormatError(path, "no header line", where="line 1")
            if len(set(header)) != len(header):
                raise DatasetFormatError(path, f"repeated column names in the header {header}",
                                         where="line 1")
            for row in reader:
                if None in row or None in row.values():
                    raise DatasetFormatError(
                        path, f"the row does not have the header's {len(header)} cells",
                        where=f"line {reader.line_num}",
                    )
                yield reader.line_num, row
        except UnicodeDecodeError as exc:
            raise DatasetFormatError(path, f"not valid UTF-8 ({exc.reason})",
                                     where=f"near line {reader.line_num + 1}") from exc
        except csv.Error as exc:
            raise DatasetFormatError(path, f"bad CSV: {exc}",
                                     where=f"line {reader.line_num}") from exc


def content_suffix(path: Path) -> str:
    """The suffix that names the content: `.jsonl` for both `x.jsonl` and `x.jsonl.bz2`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""

