"""Dataset loaders: files in many formats -> ragshield.types.Sample, by format name."""

from ragshield.datasets.column_mapping import parse_mapping
from ragshield.datasets.errors import (
    DatasetError,
    DatasetFileError,
    DatasetFormatError,
    UnknownFormatError,
)
from ragshield.datasets.registry import FORMATS, detect_format, get_format, load_dataset

__all__ = [
    "FORMATS", "DatasetError", "DatasetFileError", "DatasetFormatError", "UnknownFormatError",
    "detect_format", "get_format", "load_dataset", "parse_mapping",
]
