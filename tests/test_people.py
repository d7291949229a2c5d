"""Who labels (services/annotation/people.py, store/accounts.py, services/annotation/passwords.py):
password hashes, roles and who may manage, logins added in the app and how they meet the auth
file's, the table of everyone with their progress and agreement, and the auth file's role field
(ui/auth.py), on real stores and real files."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, select, text

from ragshield.names import InvalidNameError
from ragshield.services.annotation import passwords
from ragshield.services.annotation.agreement import PairAgreement, pair_agreement
from ragshield.services.annotation.passwords import PasswordError, hash_password, password_matches
from ragshield.services.annotation.people import (ADMIN, ANNOTATOR, FROM_APP, FROM_FILE, Access,
                                                  AccountExistsError, Logins, NotAnAdminError,
                                                  PersonError, UnknownAccountError, add_person,
                                                  admin_warning, caller_may_manage, list_people,
                                                  may_manage, require_admin, role_of, set_disabled,
                                                  set_role)
from ragshield.store.accounts import account
from ragshield.store.database import alembic_config, create_store_engine, open_store
from ragshield.store.labels import add_annotator, add_label, skip
from ragshield.store.models import Account, Annotator
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import UnknownDatasetError
from ragshield.types import Passage, Sample
from ragshield.ui.auth import AuthFileError, FileLogin, gradio_auth, read_auth_file

PASSWORD = "correct horse"
# An app with logins: root is the file's admin, ann one of its annotators.
FILE = Access(logins=True, file_roles={"root": ADMIN, "ann": ANNOTATOR})
LOCAL = Access()  # no logins: one local user


def stored_hash(store, name: str) -> str:
    found = account(store, name)
    assert found is not None
    return found.password_hash


# -- password hashes ---------------------------------------------------------------------

def test_a_hash_is_salted_and_matches_only_its_password() -> None:
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first != second and PASSWORD not in first
    assert first.startswith("scrypt$16384$8$1$")
    assert password_matches(PASSWORD, first) and password_matches(PASSWORD, second)
    assert not password_matches(PASSWORD + " ", first)
    assert not password_matches("correct horsE", first)


@pytest.mark.parametrize("stored", ["", "junk", "scrypt$16384$8$1$zz$00",
                                    "md5$16384$8$1$00$00",
                                    "scrypt$1073741824$8$1$00$00"])  # asks for 1 TiB
def test_an_unreadable_hash_matches_nothing(stored: str) -> None:
    assert not password_matches(PASSWORD, stored)


# -- who may manage ------------------------------------------------------------------------

def test_without_logins_everyone_manages_with_logins_only_admins() -> None:
    assert may_manage(False, None) and may_manage(False, ANNOTATOR)
    assert may_manage(True, ADMIN)
    assert not may_manage(True, ANNOTATOR) and not may_manage(True, None)


def test_roles_come_from_the_file_then_from_enabled_accounts(store) -> None:
    add_person(store, FILE, "eve", PASSWORD, ADMIN, by="root")
    assert role_of(store, FILE.file_roles, "root") == ADMIN
    assert role_of(store, FILE.file_roles, "ann") == ANNOTATOR
    assert role_of(store, FILE.file_roles, "eve") == ADMIN
    assert role_of(store, FILE.file_roles, "nobody") is None
    assert role_of(store, FILE.file_roles, None) is None
    assert [caller_may_manage(store, FILE, name) for name in ("root", "ann", "eve", None)] == \
        [True, False, True, False]
    assert caller_may_manage(store, LOCAL, None)
    set_disabled(store, FILE, "eve", True, by="root")
    assert role_of(store, FILE.file_roles, "eve") is None
    assert not caller_may_manage(store, FILE, "eve")  # an open session loses its rights


def test_a_non_admin_is_refused_and_nothing_changes(store) -> None:
    add_person(store, FILE, "frank", PASSWORD, ANNOTATOR, by="root")
    for by in ("ann", "frank", None):
        with pytest.raises(NotAnAdminError, match="^Only an admin may add people.$"):
            add_person(store, FILE, "mallory", PASSWORD, ADMIN, by=by)
        with pytest.raises(NotAnAdminError, match="^Only an admin may change roles.$"):
            set_role(store, FILE, "frank", ADMIN, by=by)
        with pytest.raises(NotAnAdminError, match="disable or enable logins"):
            set_disabled(store, FILE, "frank", True, by=by)
    assert account(store, "mallory") is None
    frank = account(store, "frank")
    assert frank.role == ANNOTATOR and not frank.disabled
    with pytest.raises(NotAnAdminError, match="^Only an admin may delete datasets.$"):
        require_admin(store, FILE, "frank", "delete datasets")
    require_admin(store, FILE, "root", "delete datasets")  # no error


# -- logins added in the app ---------------------------------------------------------------

def test_an_added_person_logs_in_with_their_password_only(store) -> None:
    assert add_person(store, LOCAL, "  eve ", PASSWORD, ANNOTATOR, by=None) == "eve"
    found = account(store, "eve")
    assert (found.role, found.disabled, found.created_by) == (ANNOTATOR, False, None)
    assert found.password_hash != PASSWORD and password_matches(PASSWORD, found.password_hash)
    logins = Logins(store, {"root": "file:pass"})
    assert logins.check("eve", PASSWORD)
    assert not logins.check("eve", "wrong password")
    assert not logins.check("nobody", PASSWORD)
    assert logins.check("root", "file:pass") and not logins.check("root", "file:pas")


def test_every_login_answer_costs_one_scrypt_whatever_the_name(store, monkeypatch) -> None:
    """Only an enabled account's check ran scrypt: a wrong password took 42 ms for a real
    name and 0.3 ms for any other, which told which names exist."""
    add_person(store, LOCAL, "eve", PASSWORD, ANNOTATOR, by=None)
    add_person(store, LOCAL, "gone", PASSWORD, ANNOTATOR, by=None)
    set_disabled(store, LOCAL, "gone", True, by=None)
    calls = []
    real = passwords._scrypt
    monkeypatch.setattr(passwords, "_scrypt", lambda *a: calls.append(1) or real(*a))
    logins = Logins(store, {"root": "file:pass"})
    for name in ("eve", "gone", "nobody", "root"):
        calls.clear()
        assert not logins.check(name, "wrong password")
        assert len(calls) == 1, name


def test_the_database_stores_the_hash_and_a_disabled_flag_off_by_default(store) -> None:
    add_person(store, LOCAL, "eve", PASSWORD, ADMIN, by=None)
    with store.engine.connect() as connection:
        row = connection.execute(text(
            "SELECT accounts.password_hash, accounts.disabled, accounts.role FROM accounts "
            "JOIN annotators ON annotators.id = accounts.annotator_id "
            "WHERE annotators.name = 'eve'")).one()
    assert row[0].startswith("scrypt$") and PASSWORD not in row[0]
    assert (bool(row[1]), row[2]) == (False, ADMIN)


def test_the_file_wins_on_a_name_clash(store) -> None:
    add_person(store, LOCAL, "ann", PASSWORD, ADMIN, by=None)  # before the file named her
    logins = Logins(store, {"ann": "from the file"})
    assert logins.check("ann", "from the file")
    assert not logins.check("ann", PASSWORD)
    assert role_of(store, FILE.file_roles, "ann") == ANNOTATOR  # not the account's admin
    for change in (lambda: add_person(store, FILE, "ann", PASSWORD, ADMIN, by="root"),
                   lambda: set_role(store, FILE, "ann", ADMIN, by="root"),
                   lambda: set_disabled(store, FILE, "ann", True, by="root")):
        with pytest.raises(PersonError, match="^'ann' logs in with the auth file"):
            change()


def test_disable_enable_and_roles(store) -> None:
    add_person(store, FILE, "eve", PASSWORD, ANNOTATOR, by="root")
    logins = Logins(store, {})
    set_disabled(store, FILE, "eve", True, by="root")
    assert not logins.check("eve", PASSWORD)
    set_disabled(store, FILE, "eve", False, by="root")
    assert logins.check("eve", PASSWORD)
    set_role(store, FILE, "eve", ADMIN, by="root")
    assert role_of(store, FILE.file_roles, "eve") == ADMIN
    add_person(store, FILE, "frank", PASSWORD, ADMIN, by="eve")  # an app admin manages too
    set_role(store, FILE, "eve", ANNOTATOR, by="frank")
    assert role_of(store, FILE.file_roles, "eve") == ANNOTATOR
    with store.session() as session:
        eve = session.scalar(select(Account).join(Annotator).where(Annotator.name == "eve"))
        assert (eve.created_by, eve.updated_by) == ("root", "frank")


def test_an_admin_cannot_lock_themselves_out(store) -> None:
    add_person(store, FILE, "eve", PASSWORD, ADMIN, by="root")
    with pytest.raises(PersonError, match="^You cannot disable your own login"):
        set_disabled(store, FILE, "eve", True, by="eve")
    with pytest.raises(PersonError, match="^You cannot take the admin role from your own"):
        set_role(store, FILE, "eve", ANNOTATOR, by="eve")
    assert role_of(store, FILE.file_roles, "eve") == ADMIN


def test_bad_additions_and_changes_are_refused(store) -> None:
    add_person(store, LOCAL, "eve", PASSWORD, ANNOTATOR, by=None)
    with pytest.raises(AccountExistsError, match="^'eve' has a login already"):
        add_person(store, LOCAL, "eve", "another password", ADMIN, by=None)
    with pytest.raises(PasswordError, match="at least 8 characters"):
        add_person(store, LOCAL, "frank", "short", ANNOTATOR, by=None)
    with pytest.raises(PersonError, match="^field 'role' must be one of admin, annotator"):
        add_person(store, LOCAL, "frank", PASSWORD, "owner", by=None)
    with pytest.raises(UnknownAccountError, match="^'frank' has no login added in the app"):
        set_role(store, LOCAL, "frank", ADMIN, by=None)
    with pytest.raises(InvalidNameError, match="^field 'name' must not be empty"):
        add_person(store, LOCAL, "  ", PASSWORD, ANNOTATOR, by=None)
    assert account(store, "frank") is None
    assert password_matches(PASSWORD, stored_hash(store, "eve"))


def test_someone_who_labelled_before_keeps_their_labels_with_a_login(store) -> None:
    import_samples(store, "toy", toy_samples(2))
    add_annotator(store, "gus")
    add_label(store, "toy", "s0", "gus", "answerable")
    add_person(store, LOCAL, "gus", PASSWORD, ANNOTATOR, by=None)
    gus = next(p for p in list_people(store, LOCAL, "toy") if p.name == "gus")
    assert (gus.login, gus.labels, gus.progress.labelled) == (FROM_APP, 1, 1)


# -- everyone, their progress and agreement ------------------------------------------------

def toy_samples(count: int) -> list[Sample]:
    return [Sample(id=f"s{i}", question=f"q{i}?", passages=[Passage(text=f"p{i}")])
            for i in range(count)]


@pytest.fixture
def labelled(store):
    """toy: 5 samples. root and bob label s0..s3 (3 of 4 alike: kappa 0.5); carol labels s0
    like root (one shared sample, one label: kappa undefined) and skips s1; other: 1 label."""
    import_samples(store, "toy", toy_samples(5))
    import_samples(store, "other", toy_samples(1))
    for name, labels in {"root": "AAUU", "bob": "AAUA", "carol": "A"}.items():
        add_annotator(store, name)
        for index, letter in enumerate(labels):
            add_label(store, "toy", f"s{index}", name,
                      "answerable" if letter == "A" else "unanswerable")
    add_label(store, "other", "s0", "bob", "unsure")
    skip(store, "toy", "s1", "carol")
    add_person(store, FILE, "eve", PASSWORD, ADMIN, by="root")
    add_person(store, FILE, "bob", PASSWORD, ANNOTATOR, by="root")
    set_disabled(store, FILE, "bob", True, by="root")
    return store


def test_pairwise_kappa_on_shared_samples(labelled) -> None:
    assert pair_agreement(labelled, "toy") == {
        ("bob", "carol"): PairAgreement(None, 1),
        ("bob", "root"): PairAgreement(0.5, 4),
        ("carol", "root"): PairAgreement(None, 1),
    }
    assert pair_agreement(labelled, "other") == {}


def test_pairwise_kappa_reads_any_name(store) -> None:
    import_samples(store, "toy", toy_samples(2))
    for name in ("a|b", "c"):
        add_annotator(store, name)
        add_label(store, "toy", "s0", name, "answerable")
        add_label(store, "toy", "s1", name, "unanswerable")
    assert pair_agreement(store, "toy") == {("a|b", "c"): PairAgreement(1.0, 2)}


def test_everyone_is_listed_with_role_login_labels_progress_and_agreement(labelled) -> None:
    people = {person.name: person for person in list_people(labelled, FILE, "toy")}
    assert list(people) == ["ann", "bob", "carol", "eve", "root"]
    summary = {name: (p.role, p.login, p.disabled, p.labels,
                      (p.progress.labelled, p.progress.skipped, p.progress.total))
               for name, p in people.items()}
    assert summary == {
        "ann": (ANNOTATOR, FROM_FILE, False, 0, (0, 0, 5)),  # in the file, never logged in
        "bob": (ANNOTATOR, FROM_APP, True, 5, (4, 0, 5)),  # 4 in toy, 1 in other
        "carol": (None, None, False, 1, (1, 1, 5)),  # a typed name, no login
        "eve": (ADMIN, FROM_APP, False, 0, (0, 0, 5)),
        "root": (ADMIN, FROM_FILE, False, 4, (4, 0, 5)),
    }
    assert people["root"].agreement == {"bob": PairAgreement(0.5, 4),
                                         "carol": PairAgreement(None, 1)}
    assert people["root"].mean_kappa == 0.5  # carol's undefined kappa is left out
    assert people["eve"].agreement == {} and people["eve"].mean_kappa is None


def test_listing_an_unknown_dataset_names_it(labelled) -> None:
    with pytest.raises(UnknownDatasetError, match="nope"):
        list_people(labelled, FILE, "nope")


# -- start-up --------------------------------------------------------------------------------

def test_the_admin_warning(store) -> None:
    assert admin_warning(store, LOCAL) is None
    assert admin_warning(store, FILE) is None  # root
    annotators_only = Access(logins=True, file_roles={"ann": ANNOTATOR})
    assert "names no admin" in admin_warning(store, annotators_only)
    add_person(store, LOCAL, "eve", PASSWORD, ADMIN, by=None)
    assert admin_warning(store, annotators_only) is None  # eve may manage
    set_disabled(store, LOCAL, "eve", True, by=None)
    assert "nobody can add people" in admin_warning(store, annotators_only)


def test_the_accounts_migration_keeps_the_annotators(store_url: str) -> None:
    engine = create_store_engine(store_url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0010")
        connection.execute(text("INSERT INTO annotators (id, name, created_at) "
                                "VALUES (7, 'old', '2024-01-01')"))
    engine.dispose()
    store = open_store(store_url)
    assert "accounts" in inspect(store.engine).get_table_names()
    add_person(store, LOCAL, "old", PASSWORD, ANNOTATOR, by=None)
    with store.session() as session:
        assert session.scalar(select(Account.annotator_id)) == 7
    with store.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0010")
    assert "accounts" not in inspect(store.engine).get_table_names()
    store.close()


# -- the auth file's role field --------------------------------------------------------------

def auth_file(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "users.txt"
    path.write_bytes(content.encode())
    return path


def test_a_role_is_the_last_field_only_when_it_is_exactly_a_role(tmp_path: Path) -> None:
    path = auth_file(tmp_path, "a:pa:ss\n"
                               "b:pa:ss:admin\r\n"
                               "c:admin\n"
                               "d::admin\n"
                               "e:x:admin:annotator\n"
                               "f: pw :admin\n"
                               "g:pw:annotator\n"
                               "h:pw:administrator\n"
                               "i:pw:admin:admin\n")
    assert read_auth_file(path) == [
        FileLogin("a", "pa:ss", ANNOTATOR), FileLogin("b", "pa:ss", ADMIN),
        FileLogin("c", "admin", ANNOTATOR), FileLogin("d", ":admin", ANNOTATOR),
        FileLogin("e", "x:admin", ANNOTATOR), FileLogin("f", " pw ", ADMIN),
        FileLogin("g", "pw", ANNOTATOR), FileLogin("h", "pw:administrator", ANNOTATOR),
        FileLogin("i", "pw:admin", ADMIN)]


@pytest.mark.parametrize("line", ["bob:pw:Admin", "bob:pw:admin ", "bob:pw: annotator",
                                  "bob:pw:admin\t"])
def test_a_role_almost_written_is_refused_naming_the_line(tmp_path: Path, line: str) -> None:
    path = auth_file(tmp_path, f"# users\n{line}\n")
    with pytest.raises(AuthFileError, match=f"^{path}:2: role .*: write it as admin or "
                                            "annotator, in lower case and without spaces$"):
        read_auth_file(path)


def test_gradio_auth_checks_in_a_worker_thread() -> None:
    threads: list[int] = []

    def check(name: str, password: str) -> bool:
        threads.append(threading.get_ident())
        return (name, password) == ("ann", PASSWORD)

    auth = gradio_auth(check)
    assert asyncio.run(auth("ann", PASSWORD)) is True
    assert asyncio.run(auth("ann", "nope")) is False
    assert threads and threading.get_ident() not in threads
