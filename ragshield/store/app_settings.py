"""Settings changed from the app and shared by every process on the store, by key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from ragshield.store.database import Store
from ragshield.store.models import AppSetting, utcnow


@dataclass(frozen=True)
class SettingRecord:
    """A stored setting with who changed it last (None: nobody signed in) and when (UTC)."""

    value: dict[str, Any]
    updated_by: str | None
    updated_at: datetime


def read_setting(store: Store, key: str) -> dict[str, Any] | None:
    """The value stored under `key`, None when there is none."""
    with store.session() as session:
        return session.scalar(select(AppSetting.value).where(AppSetting.key == key))


def read_setting_record(store: Store, key: str) -> SettingRecord | None:
    """The setting under `key` with who changed it and when; None when there is none."""
    with store.session() as session:
        row = session.execute(select(AppSetting.value, AppSetting.updated_by,
                                     AppSetting.updated_at)
                              .where(AppSetting.key == key)).first()
    return SettingRecord(*row) if row is not None else None


def write_setting(store: Store, key: str, value: dict[str, Any] | None,
                  by: str | None = None) -> None:
    """Store `value` under `key` (None removes the key)."""
    with store.session() as session:
        if value is None:
            session.execute(delete(AppSetting).where(AppSetting.key == key))
            return
        row = session.get(AppSetting, key)
        if row is None:
            session.add(AppSetting(key=key, value=value, updated_by=by))
        else:
            row.value, row.updated_by, row.updated_at = value, by, utcnow()
