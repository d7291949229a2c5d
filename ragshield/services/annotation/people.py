"""Who labels: the people who may log in, what each may do, and what each has done.

Two roles. An `admin` may add people, change their roles, disable and enable logins and
delete data; an `annotator` labels. With `ragshield app --auth FILE` a person logs in
either as a user of the file (its role is an optional last field of the line, see
ragshield/ui/auth.py) or with an account that an admin added in the app, kept in the
database with its password as a salted scrypt hash (services/annotation/passwords.py).

The file wins on a name clash: a name in the file logs in with the file's password and
role only (an account of the same name is ignored), and the app cannot add, change or
disable such a name: edit the file and restart the app. Without --auth the app has one
local user, who may do everything; accounts added then are used once the app runs with
logins.

A disabled account cannot log in again. A session opened before stays open until the
server restarts, but it loses its admin rights at once: every managing call reads the
caller's role anew.
"""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ragshield.errors import UserError
from ragshield.names import check_name
from ragshield.services.annotation.agreement import PairAgreement, pair_agreement
from ragshield.services.annotation.passwords import (check_password, hash_password,
                                                     password_matches, spend_like_a_check)
from ragshield.store.accounts import (AccountExistsError, UnknownAccountError, account,
                                      accounts, add_account, everyone, update_account)
from ragshield.store.database import Store
from ragshield.store.labels import Progress, current_label_table, progress
from ragshield.store.models import ACCOUNT_ROLES
from ragshield.store.samples import count_samples

__all__ = ["ACCOUNT_ROLES", "ADMIN", "ANNOTATOR", "Access", "AccountExistsError", "FROM_APP",
           "FROM_FILE", "Logins", "NotAnAdminError", "Person", "PersonError",
           "UnknownAccountError", "add_person", "admin_warning", "caller_may_manage",
           "list_people", "may_manage", "notes_shown_to", "require_admin", "role_of",
           "set_disabled", "set_role"]

ADMIN, ANNOTATOR = ACCOUNT_ROLES
FROM_FILE, FROM_APP = "auth file", "app"  # where a person's login comes from


class NotAnAdminError(UserError, PermissionError):
    """Someone who is not an admin asked to manage people or data."""


class PersonError(UserError, ValueError):
    """A change to a person that the rules above do not allow."""


@dataclass(frozen=True)
class Access:
    """What the app knows of its logins at start-up: whether it has any (`--auth`), and
    the role the auth file gives each of its users."""
    logins: bool = False
    file_roles: Mapping[str, str] = field(default_factory=dict)


# -- who may do what --------------------------------------------------------------------

def role_of(store: Store, file_roles: Mapping[str, str], name: str | None) -> str | None:
    """The role `name` logs in with: the file's for a user of the file, else that of their
    enabled account; None for anyone else (no login, or a disabled one)."""
    if not name:
        return None
    if name in file_roles:
        return file_roles[name]
    found = account(store, name)
    return found.role if found is not None and not found.disabled else None


def may_manage(logins_enabled: bool, role: str | None) -> bool:
    """Whether someone may manage people and data: anyone in an app without logins (a
    local, single-user app), else admins only."""
    return not logins_enabled or role == ADMIN


def caller_may_manage(store: Store, access: Access, name: str | None) -> bool:
    """`may_manage` for the person logged in as `name` (request.username in the app)."""
    return may_manage(access.logins, role_of(store, access.file_roles, name)
                      if access.logins else None)


def require_admin(store: Store, access: Access, name: str | None, action: str) -> None:
    """Refuse `action` ("add people", "delete datasets") to someone who may not manage."""
    if not caller_may_manage(store, access, name):
        raise NotAnAdminError(f"Only an admin may {action}.")


def notes_shown_to(store: Store, access: Access, name: str | None) -> frozenset[str] | None:
    """Whose notes the person logged in as `name` may read: everyone's for someone who may
    manage (None), else their own only (a note may say what its author would tell no one
    else); nobody's without a name."""
    if caller_may_manage(store, access, name):
        return None
    return frozenset({name} if name else ())


def admin_warning(store: Store, access: Access) -> str | None:
    """A warning for start-up when the app has logins and nobody can manage people: no
    admin in the auth file and no enabled admin account."""
    if not access.logins or ADMIN in access.file_roles.values() or any(
            found.role == ADMIN and not found.disabled for found in accounts(store)):
        return None
    return ("the auth file names no admin (write a line as name:password:admin), so nobody "
            "can add people, change roles or delete data in the app")


@dataclass(frozen=True)
class Logins:
    """The login check of an app with --auth: the file's users with the file's passwords
    (compared in constant time), then the enabled accounts added in the app."""
    store: Store
    file_passwords: Mapping[str, str]

    def check(self, name: str, password: str) -> bool:
        """Every answer costs one scrypt: a wrong password takes as long for a known name,
        an unknown or disabled one, or a user of the file."""
        if name in self.file_passwords:
            spend_like_a_check(password)
            return hmac.compare_digest(password.encode("utf-8"),
                                       self.file_passwords[name].encode("utf-8"))
        found = account(self.store, name)
        if found is None or found.disabled:
            spend_like_a_check(password)
            return False
        return password_matches(password, found.password_hash)


# -- managing people ---------------------------------------------------------------------

def _check_role(role: object) -> str:
    if role not in ACCOUNT_ROLES:
        raise PersonError(f"field 'role' must be one of {', '.join(ACCOUNT_ROLES)}, "
                          f"got {role!r}")
    return str(role)


def _app_login(access: Access, name: object) -> str:
    """The name, checked, of a login the app may change: not one of the auth file's."""
    name = check_name(name, "name")
    if name in access.file_roles:
        raise PersonError(f"{name!r} logs in with the auth file: change them there and "
                          "restart the app.")
    return name


def _not_yourself(access: Access, name: str, by: str | None, change: str) -> None:
    """An admin cannot lock themselves out (another admin can)."""
    if access.logins and name == by:
        raise PersonError(f"You cannot {change} your own login: ask another admin.")


def add_person(store: Store, access: Access, name: str, password: str, role: str,
               by: str | None) -> str:
    """Give `name` a login with `password` and `role` (by the admin `by`); their name,
    checked. Someone who labelled under that name before keeps their labels."""
    require_admin(store, access, by, "add people")
    name, role = _app_login(access, name), _check_role(role)
    add_account(store, name, hash_password(check_password(password)), role, by)
    return name


def set_role(store: Store, access: Access, name: str, role: str, by: str | None) -> None:
    """Change the role of a login added in the app."""
    require_admin(store, access, by, "change roles")
    name, role = _app_login(access, name), _check_role(role)
    if role != ADMIN:
        _not_yourself(access, name, by, "take the admin role from")
    update_account(store, name, by, role=role)


def set_disabled(store: Store, access: Access, name: str, disabled: bool,
                 by: str | None) -> None:
    """Disable (or enable again) a login added in the app: a disabled one cannot log in,
    and its labels stay."""
    require_admin(store, access, by, "disable or enable logins")
    name = _app_login(access, name)
    if disabled:
        _not_yourself(access, name, by, "disable")
    update_account(store, name, by, disabled=disabled)


def reset_password(store: Store, access: Access, name: str, password: str,
                   by: str | None) -> None:
    """Give a login added in the app a new password (an admin does, for someone who forgot
    theirs; the auth file's passwords are changed in the file)."""
    require_admin(store, access, by, "set passwords")
    name = _app_login(access, name)
    update_account(store, name, by, password_hash=hash_password(check_password(password)))


# -- everyone, with what they have done --------------------------------------------------

@dataclass(frozen=True)
class Person:
    name: str
    role: str | None  # admin | annotator; None: no login
    login: str | None  # FROM_FILE, FROM_APP, or None (labels under a typed or imported name)
    disabled: bool
    labels: int  # current labels, every dataset
    progress: Progress  # on the dataset asked for
    agreement: dict[str, PairAgreement]  # other person -> kappa on the samples both labelled

    @property
    def mean_kappa(self) -> float | None:
        """The mean of their kappas with the others (pairs whose kappa is defined)."""
        kappas = [pair.kappa for pair in self.agreement.values() if pair.kappa is not None]
        return sum(kappas) / len(kappas) if kappas else None


def list_people(store: Store, access: Access, dataset: str) -> list[Person]:
    """Everyone who may log in or has labelled, by name: role, where the login comes
    from, labels, progress on `dataset` and agreement with each other annotator there."""
    logins = {found.name: found for found in accounts(store)}
    names = sorted(set(everyone(store)) | set(access.file_roles), key=lambda n: (n.casefold(), n))
    counts = Counter(name for _, name, _ in current_label_table(store, None))
    done = {row.annotator: row for row in progress(store, dataset)}
    total = count_samples(store, dataset)
    pairs = pair_agreement(store, dataset)
    people = []
    for name in names:
        in_app = logins.get(name) if name not in access.file_roles else None
        people.append(Person(
            name=name,
            role=access.file_roles.get(name) or (in_app.role if in_app else None),
            login=FROM_FILE if name in access.file_roles else FROM_APP if in_app else None,
            disabled=bool(in_app and in_app.disabled),
            labels=counts[name],
            progress=done.get(name, Progress(name, 0, 0, total)),
            agreement={b if a == name else a: pair for (a, b), pair in pairs.items()
                       if name in (a, b)}))
    return people
