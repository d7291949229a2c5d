"""Errors of corpus ingestion and loading; each names the file, line or field at fault."""

from __future__ import annotations

from ragshield.errors import UserError


class CorpusError(UserError, ValueError):
    """Base of every corpus error: the CLI and the UI print its message as it is."""


class CorpusPathNotFound(CorpusError):
    """An input path to ingest does not exist."""


class UnsupportedFileType(CorpusError):
    """A file given by name has an extension that ingestion cannot read."""


class UnreadableFile(CorpusError):
    """A file or folder to ingest cannot be read: access is denied, it is not a regular file,
    or it vanished while ingesting."""


class NotUtf8Error(CorpusError):
    """A file is not valid UTF-8."""


class BadJsonlLine(CorpusError):
    """A line of a .jsonl corpus file is not a JSON object with the expected fields."""


class DuplicateDocumentId(CorpusError):
    """Two documents in one ingestion share an id."""


class EmptyCorpus(CorpusError):
    """The inputs hold no text to index."""


class InvalidCorpusName(CorpusError):
    """A corpus name that cannot be a folder name."""


class CorpusExists(CorpusError):
    """A corpus of that name is already ingested (and replacing it was not asked for)."""


class CorpusNotFound(CorpusError):
    """No ingested corpus of that name."""


class CorpusFormatError(CorpusError):
    """A corpus folder is incomplete or was written by an incompatible version."""


class EmbeddingModelMismatch(CorpusError):
    """The corpus was embedded with a different model than the one configured for queries."""
