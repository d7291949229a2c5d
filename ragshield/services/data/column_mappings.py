"""The column mapping last imported into each dataset, kept in the store's app settings, so
that the next file for the same dataset comes with its columns already chosen (files of one
dataset usually share their layout)."""

from __future__ import annotations

import hashlib

from ragshield.datasets.column_mapping import FIELDS, OPTIONAL_FIELDS, ColumnMapping, check_mapping
from ragshield.store.app_settings import read_setting, write_setting
from ragshield.store.database import Store

PREFIX = "column_mapping:"
KEY_MAX_LENGTH = 100  # the size of app_settings.key
MAPPED_FIELDS = FIELDS + OPTIONAL_FIELDS  # the fields a mapping form offers, in this order


def setting_key(dataset: str) -> str:
    """`column_mapping:<dataset>`; a name too long for the key column is replaced by its
    SHA-256."""
    key = PREFIX + dataset
    if len(key) <= KEY_MAX_LENGTH:
        return key
    return f"{PREFIX}sha256:{hashlib.sha256(dataset.encode('utf-8')).hexdigest()}"


def saved_mapping(store: Store, dataset: str) -> ColumnMapping:
    """The mapping saved for `dataset` ({} when none)."""
    value = read_setting(store, setting_key(dataset)) or {}
    mapping = value.get("mapping") or {}
    return {str(field): str(column) for field, column in mapping.items()
            if field in MAPPED_FIELDS}


def save_mapping(store: Store, dataset: str, mapping: ColumnMapping, by: str | None = None) -> None:
    write_setting(store, setting_key(dataset), {"mapping": dict(mapping)}, by=by)


def move_mapping(store: Store, old: str, new: str) -> None:
    """The mapping of `old` saved under `new` (a renamed dataset keeps its mapping)."""
    mapping = saved_mapping(store, old)
    if mapping:
        save_mapping(store, new, mapping)
    forget_mapping(store, old)


def forget_mapping(store: Store, dataset: str) -> None:
    write_setting(store, setting_key(dataset), None)


def form_mapping(columns: dict[str, str | None]) -> ColumnMapping:
    """A mapping from a form (field -> chosen column, None or "" for not chosen), checked
    as `--map` is (a field of the given answer needs the answer's column)."""
    return check_mapping({field: column for field, column in columns.items() if column})
