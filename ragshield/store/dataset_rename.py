"""Renaming a dataset, with everything that names it.

Samples, labels and run answers point at the dataset by row id, so they follow by
themselves. A run's config and a policy also keep the dataset's name (the config to resume
and show the run, a policy the dataset it was fitted on, a run the copy of the policy it
began with): those are rewritten in the same transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from ragshield.errors import UserError
from ragshield.names import check_name
from ragshield.store.database import Store, forget
from ragshield.store.models import Dataset, PolicyRow, Run
from ragshield.store.samples import DATASET_IDS, dataset_id_of


class DatasetExistsError(UserError, ValueError):
    """The new name of a dataset is taken by another one."""


def _exists_error(new: str) -> DatasetExistsError:
    return DatasetExistsError(f"a dataset named {new!r} already exists; choose another name "
                              "or delete that dataset first")


def _renamed(body: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """`body` with its "dataset" set to `new` where it was `old` (a new dict, so that the
    JSON column sees the change)."""
    return {**body, "dataset": new} if body.get("dataset") == old else body


def _policy_renamed(body: Any, old: str, new: str) -> Any:
    """A policy's JSON form with the dataset it was fitted on (`fitted_on.dataset`, which
    the watch compares to leave those samples out) set to `new` where it was `old`."""
    fitted_on = body.get("fitted_on") if isinstance(body, dict) else None
    if not isinstance(fitted_on, dict):
        return body
    return {**body, "fitted_on": _renamed(fitted_on, old, new)}


def rename_dataset(store: Store, old: str, new: str) -> str:
    """Rename dataset `old` to `new` (checked as a name; returned stripped) in one
    transaction. UnknownDatasetError when `old` is unknown, DatasetExistsError when `new`
    is taken; the same name is no change."""
    new = check_name(new, "new dataset name")
    try:
        with store.session() as session:
            dataset_id = dataset_id_of(session, old)
            if new == old:
                return new
            if session.scalar(select(Dataset.id).where(Dataset.name == new)) is not None:
                raise _exists_error(new)
            session.execute(update(Dataset).where(Dataset.id == dataset_id).values(name=new))
            # Every run: one on another dataset may decide by a policy fitted on this one.
            for run in session.scalars(select(Run)):
                config = (_renamed(run.config, old, new) if run.dataset_id == dataset_id
                          else run.config)
                if config.get("policy") is not None:
                    config = {**config, "policy": _policy_renamed(config["policy"], old, new)}
                if config != run.config:
                    run.config = config
            for policy in session.scalars(select(PolicyRow).where(PolicyRow.dataset == old)):
                policy.dataset, policy.body = new, _policy_renamed(policy.body, old, new)
            forget(session, DATASET_IDS, old)
    except IntegrityError:  # another process took the name at the same moment
        raise _exists_error(new) from None
    return new
