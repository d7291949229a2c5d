"""Logins added in the app: one account per annotator, holding a password hash (made by the
services: the store never sees a password), a role and a disabled flag. Accounts are never
deleted: a disabled one keeps its name and labels and can be enabled again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError

from ragshield.errors import UserError
from ragshield.store.database import Store
from ragshield.store.labels import add_annotator
from ragshield.store.models import Account, Annotator, utcnow


class AccountExistsError(UserError, ValueError):
    """The name has a login already."""


class UnknownAccountError(UserError, LookupError):
    """No login added in the app has the name asked for."""


@dataclass(frozen=True)
class AccountRecord:
    name: str
    role: str
    disabled: bool
    password_hash: str
    created_by: str | None
    created_at: datetime


def _records() -> Select[str, str, bool, str, str | None, datetime]:
    return (select(Annotator.name, Account.role, Account.disabled, Account.password_hash,
                   Account.created_by, Account.created_at)
            .join(Annotator, Annotator.id == Account.annotator_id))


def add_account(store: Store, name: str, password_hash: str, role: str,
                by: str | None) -> None:
    """A login for `name`, made an annotator first when new (an annotator who labelled
    before gets the login, with their labels)."""
    annotator_id = add_annotator(store, name)
    exists = AccountExistsError(f"{name!r} has a login already: change their role or "
                                "enable them instead")
    with store.session() as session:
        if session.scalar(select(Account.id).where(Account.annotator_id == annotator_id)):
            raise exists
    try:
        with store.session() as session:
            session.add(Account(annotator_id=annotator_id, password_hash=password_hash,
                                role=role, created_by=by, updated_by=by))
    except IntegrityError:  # added by another request meanwhile
        raise exists from None


def account(store: Store, name: str) -> AccountRecord | None:
    """The login added in the app under `name`, None when there is none."""
    with store.session() as session:
        row = session.execute(_records().where(Annotator.name == name)).first()
    return AccountRecord(*row) if row is not None else None


def accounts(store: Store) -> list[AccountRecord]:
    """Every login added in the app, by name."""
    with store.session() as session:
        rows = session.execute(_records().order_by(Annotator.name)).all()
    return [AccountRecord(*row) for row in rows]


def update_account(store: Store, name: str, by: str | None, *, role: str | None = None,
                   disabled: bool | None = None, password_hash: str | None = None) -> None:
    """Change the role, the disabled flag and/or the password of the login `name`, noting
    who did."""
    with store.session() as session:
        row = session.scalar(select(Account).join(Annotator, Annotator.id == Account.annotator_id)
                             .where(Annotator.name == name))
        if row is None:
            raise UnknownAccountError(f"{name!r} has no login added in the app")
        if role is not None:
            row.role = role
        if disabled is not None:
            row.disabled = disabled
        if password_hash is not None:
            row.password_hash = password_hash
        row.updated_by, row.updated_at = by, utcnow()


def everyone(store: Store) -> list[str]:
    """Everyone the store knows as an annotator (labelled, skipped or has a login)."""
    with store.session() as session:
        return list(session.scalars(select(Annotator.name).order_by(Annotator.name)))
