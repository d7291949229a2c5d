"""A dataset file uploaded in the app: its format (chosen or detected), its columns and first
rows for a column mapping, what importing it would do, and the import itself, all or nothing.

An upload is untrusted, so it is bounded (Settings.upload_max_bytes, on a compressed file
what it unpacks to, upload_max_rows, upload_timeout_s: a bound passed ends the read, so
nothing is imported), and messages name
the file by its own name, never by the server folder where the upload waits. The import is
`services.data.datasets.import_file`, the one `ragshield datasets import` makes, so both leave the
same store.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ragshield.config import Settings
from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.reading import COMPRESSION_SUFFIXES, open_binary
from ragshield.datasets.registry import FORMATS, detect_format, get_format
from ragshield.datasets.table_preview import TablePreview, table_preview
from ragshield.errors import UserError
from ragshield.names import check_name
from ragshield.services.data.column_mappings import form_mapping, save_mapping, saved_mapping
from ragshield.services.data.datasets import Progress, import_file, preview_file
from ragshield.store.database import Store
from ragshield.store.sample_import import ImportResult
from ragshield.types import Sample

DETECT = "detect"
FORMAT_CHOICES = [DETECT, *FORMATS]  # what the format picker offers
PREVIEW_ROWS = 5
UNPACK_CHUNK = 1 << 20
LARGE_FILES = "import it with `python -m ragshield datasets import`, which has no such bound"


class UploadTooLargeError(UserError, ValueError):
    """An upload has more bytes or rows than the app takes."""


class UploadTimeoutError(UserError, TimeoutError):
    """Reading or importing an upload took longer than the app allows."""


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int
    max_rows: int
    max_seconds: float

    @classmethod
    def of(cls, settings: Settings) -> UploadLimits:
        return cls(settings.upload_max_bytes, settings.upload_max_rows,
                   settings.upload_timeout_s)


@dataclass(frozen=True)
class Upload:
    """An uploaded file and its format."""

    path: Path  # where the upload waits on the server; its name is the file's own
    format: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def takes_mapping(self) -> bool:
        return FORMATS[self.format].takes_mapping


@dataclass(frozen=True)
class UploadRequest:
    """What to import: a file in a format, into a dataset, through a mapping (None: the
    format takes none, or the same-named columns)."""

    upload: Upload
    dataset: str
    mapping: ColumnMapping | None


@dataclass(frozen=True)
class ImportPlan:
    """What importing `request` would do, computed without writing."""

    request: UploadRequest
    result: ImportResult
    given_answers: int  # samples carrying an outside system's answer

    @property
    def rows(self) -> int:
        """The samples in the file."""
        return self.result.added + self.result.updated + self.result.unchanged


@contextmanager
def by_own_name(path: Path) -> Iterator[None]:
    """A UserError about an uploaded file `path` (a temporary path that means nothing to the
    person who uploaded it) re-raised on one line naming the file by its own name, of the
    same class where that class takes a message alone, else of its nearest base that does."""
    try:
        yield
    except UserError as exc:
        message = " ".join(str(exc).replace(str(path), path.name).split())
        for kind in type(exc).__mro__:
            if issubclass(kind, UserError):
                try:
                    renamed = kind(message)
                except TypeError:  # it takes more than a message (DatasetFormatError)
                    continue
                raise renamed from None
        raise


def _size(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1_000_000 else f"{size:,} bytes"


def open_upload(path: Path | str, format_choice: str | None, limits: UploadLimits) -> Upload:
    """The upload at `path` in the chosen format ("detect" or none: told from the file);
    refused when larger than the limit."""
    path = Path(path)
    with by_own_name(path):
        size = path.stat().st_size if path.is_file() else 0
        if size > limits.max_bytes:
            raise UploadTooLargeError(
                f"{path.name} is {_size(size)}; the app takes files up to "
                f"{_size(limits.max_bytes)}: {LARGE_FILES}")
        if path.suffix.lower() in COMPRESSION_SUFFIXES:
            _check_unpacked(path, limits.max_bytes)
        chosen = format_choice if format_choice and format_choice != DETECT else None
        return Upload(path, get_format(chosen).name if chosen else detect_format(path))


def _check_unpacked(path: Path, max_bytes: int) -> None:
    """A compressed upload is bounded by what it unpacks to, as a plain file is by its size:
    a few hundred kB of gzip can unpack to gigabytes, read whole at a line. Unpacked in
    chunks, up to the bound and no further."""
    unpacked = 0
    with open_binary(path) as handle:
        while chunk := handle.read(UNPACK_CHUNK):
            unpacked += len(chunk)
            if unpacked > max_bytes:
                raise UploadTooLargeError(
                    f"{path.name} unpacks to more than {_size(max_bytes)}; the app takes "
                    f"files up to {_size(max_bytes)}, unpacked: {LARGE_FILES}")


def suggested_dataset(upload: Upload) -> str:
    """A name for the upload's dataset: its file name up to the first dot."""
    return upload.name.split(".")[0] or upload.name


def preview(upload: Upload, rows: int = PREVIEW_ROWS) -> TablePreview:
    """The columns and first rows of an upload in a generic format."""
    with by_own_name(upload.path):
        return table_preview(upload.path, upload.format, rows)


def suggested_mapping(store: Store, dataset: str | None, columns: list[str]) -> ColumnMapping:
    """The mapping saved for `dataset`, less the columns this file lacks."""
    if not dataset or not dataset.strip():
        return {}
    return {field: column for field, column in saved_mapping(store, dataset.strip()).items()
            if column in columns}


def upload_request(upload: Upload, dataset: str | None,
                   columns: dict[str, str | None] | None = None) -> UploadRequest:
    """The request of a form: the dataset's name checked, and for a generic format the
    mapping of the chosen columns (field -> column; an unchosen field reads the column of
    its own name)."""
    name = check_name(dataset or "", "dataset name")
    mapping = form_mapping(columns or {}) if upload.takes_mapping else None
    return UploadRequest(upload, name, mapping or None)


class _Bounded:
    """The samples of an upload, counted (rows, given answers) and bounded: one row more
    than the limit, or a row read after the deadline, ends the read with an error."""

    def __init__(self, name: str, limits: UploadLimits) -> None:
        self.name, self.limits = name, limits
        self.deadline = time.monotonic() + limits.max_seconds
        self.rows = self.given_answers = 0

    def __call__(self, samples: Iterable[Sample]) -> Iterator[Sample]:
        for sample in samples:
            self.rows += 1
            if self.rows > self.limits.max_rows:
                raise UploadTooLargeError(
                    f"{self.name} has more than {self.limits.max_rows:,} rows, the most the "
                    f"app takes in one file: {LARGE_FILES}")
            if time.monotonic() > self.deadline:
                raise UploadTimeoutError(
                    f"reading {self.name} took more than {self.limits.max_seconds:g} s, the "
                    f"most the app allows: {LARGE_FILES}")
            self.given_answers += sample.given_answer is not None
            yield sample


def _progress(bounded: _Bounded, progress: Progress | None) -> Progress:
    return (lambda samples: progress(bounded(samples))) if progress else bounded


def plan_import(store: Store, request: UploadRequest, limits: UploadLimits,
                progress: Progress | None = None) -> ImportPlan:
    """How many samples importing `request` would add, update and leave unchanged; a bad
    row fails here, naming the file, line and field, as it would in the import."""
    upload = request.upload
    bounded = _Bounded(upload.name, limits)
    with by_own_name(upload.path):
        result = preview_file(store, request.dataset, upload.path, format=upload.format,
                              mapping=request.mapping, progress=_progress(bounded, progress))
    return ImportPlan(request, result, bounded.given_answers)


def run_import(store: Store, request: UploadRequest, limits: UploadLimits,
               progress: Progress | None = None, by: str | None = None) -> ImportResult:
    """Import `request` in one transaction (nothing stays when a row is bad or a bound is
    passed), then save its column mapping for the dataset's next file."""
    upload = request.upload
    with by_own_name(upload.path):
        result = import_file(store, request.dataset, upload.path, format=upload.format,
                             mapping=request.mapping,
                             progress=_progress(_Bounded(upload.name, limits), progress))
    if upload.takes_mapping:
        save_mapping(store, result.dataset, request.mapping or {}, by=by)
    return result

