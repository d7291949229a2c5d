"""Fitted policies by name and version, kept as their JSON form (ragshield.policies reads
it): each save of a name adds the next version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ragshield.errors import UserError
from ragshield.store.database import Store
from ragshield.store.models import PolicyRow

Body = dict[str, Any]


class UnknownPolicyError(UserError, LookupError):
    """No policy of that name (or version)."""


@dataclass(frozen=True)
class PolicyHead:
    """The newest version of a policy, without its body."""

    name: str
    version: int
    source: str  # the judge it reads
    dataset: str | None  # the dataset it was fitted on
    row_id: int  # the version's row: a later save has a larger one


def save_policy(store: Store, name: str, source: str, dataset: str | None,
                body_of: Callable[[int], Body]) -> Body:
    """Store `body_of(version)` as the next version of `name`; returns that body."""
    for _ in range(3):  # another fit of the same name may take the version first
        try:
            with store.session() as session:
                version = (session.scalar(select(func.max(PolicyRow.version))
                                          .where(PolicyRow.name == name)) or 0) + 1
                body = body_of(version)
                session.add(PolicyRow(name=name, version=version, source=source,
                                      dataset=dataset, body=body))
            return body
        except IntegrityError:
            continue
    raise UserError(f"could not store policy {name!r}: its versions kept changing")


def policy_body(store: Store, name: str, version: int | None = None) -> Body:
    """The named policy at `version` (None: its newest)."""
    query = select(PolicyRow.body).where(PolicyRow.name == name)
    query = (query.where(PolicyRow.version == version) if version is not None
             else query.order_by(PolicyRow.version.desc()).limit(1))
    with store.session() as session:
        body = session.scalar(query)
        if body is not None:
            return body
        known = session.scalars(select(PolicyRow.name).distinct()).all()
    which = f"{name!r} version {version}" if version is not None else repr(name)
    raise UnknownPolicyError(f"no policy {which}; stored policies: "
                             f"{', '.join(sorted(known)) or 'none'} (see `python -m ragshield "
                             "policy list`)")


def policy_bodies(store: Store) -> list[Body]:
    """Every stored version of every policy, by name then version."""
    with store.session() as session:
        return list(session.scalars(select(PolicyRow.body)
                                    .order_by(PolicyRow.name, PolicyRow.version)))


def policy_heads(store: Store) -> list[PolicyHead]:
    """The newest version of each policy, by name (without loading bodies)."""
    with store.session() as session:
        rows = session.execute(select(PolicyRow.name, PolicyRow.version, PolicyRow.source,
                                      PolicyRow.dataset, PolicyRow.id)
                               .order_by(PolicyRow.name, PolicyRow.version)).all()
    return list({row.name: PolicyHead(*row) for row in rows}.values())
