"""Where ragshield keeps what it writes (ragshield/home.py): RAGSHIELD_HOME or the user's
data folder; an old `db/` database keeps working; nothing is picked or moved silently."""

from __future__ import annotations

import logging

import pytest

from ragshield import home
from ragshield.config import Settings


@pytest.fixture
def no_old_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(home, "OLD_DATA_DIR", tmp_path / "checkout" / "db")
    return home.OLD_DATA_DIR


def test_the_home_holds_the_database_the_corpora_and_the_caches(tmp_path, monkeypatch,
                                                                 no_old_folder):
    monkeypatch.setenv("RAGSHIELD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RAGSHIELD_CACHE_DIR", raising=False)
    settings = Settings()
    assert settings.database_url == f"sqlite:///{tmp_path / 'home' / 'ragshield.db'}"
    assert settings.corpora_dir == tmp_path / "home" / "corpora"
    assert settings.cache_dir == tmp_path / "home" / "cache"
    assert (tmp_path / "home").is_dir()


def test_without_a_home_the_user_folders_are_used(tmp_path, monkeypatch, no_old_folder):
    monkeypatch.delenv("RAGSHIELD_HOME", raising=False)
    monkeypatch.setattr(home.platformdirs, "user_data_dir",
                        lambda name: str(tmp_path / "data" / name))
    monkeypatch.setattr(home.platformdirs, "user_cache_dir",
                        lambda name: str(tmp_path / "cache" / name))
    assert home.data_dir() == tmp_path / "data" / "ragshield"
    assert home.cache_dir() == tmp_path / "cache" / "ragshield"


def test_settings_given_explicitly_touch_no_home(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("RAGSHIELD_HOME", str(blocked / "home"))
    settings = Settings(database_url="sqlite://", corpora_dir=tmp_path / "corpora",
                        cache_dir=tmp_path / "cache")
    assert settings.database_url == "sqlite://"


def test_a_home_that_cannot_be_written_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("RAGSHIELD_HOME", str(blocked / "home"))
    with pytest.raises(home.HomeError) as error:
        Settings(cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert "\n" not in message and str(blocked / "home") in message
    assert "set RAGSHIELD_HOME" in message


def test_an_old_database_alone_keeps_working_with_a_warning(tmp_path, monkeypatch, caplog,
                                                            no_old_folder):
    monkeypatch.delenv("RAGSHIELD_HOME", raising=False)
    monkeypatch.setattr(home.platformdirs, "user_data_dir", lambda name: str(tmp_path / "new"))
    no_old_folder.mkdir(parents=True)
    (no_old_folder / "ragshield.db").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="ragshield.home"):
        settings = Settings(cache_dir=tmp_path / "cache")
    assert settings.database_url == f"sqlite:///{no_old_folder / 'ragshield.db'}"
    assert settings.corpora_dir == no_old_folder / "corpora"
    assert "mv" in caplog.text and str(tmp_path / "new") in caplog.text
    assert (no_old_folder / "ragshield.db").exists()  # nothing was moved


def test_an_old_database_beside_a_new_one_stops_and_names_both(tmp_path, monkeypatch,
                                                               no_old_folder):
    monkeypatch.delenv("RAGSHIELD_HOME", raising=False)
    monkeypatch.setattr(home.platformdirs, "user_data_dir", lambda name: str(tmp_path / "new"))
    for folder in (no_old_folder, tmp_path / "new"):
        folder.mkdir(parents=True)
        (folder / "ragshield.db").write_bytes(b"")
    with pytest.raises(home.HomeError) as error:
        Settings(cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert str(no_old_folder / "ragshield.db") in message
    assert str(tmp_path / "new" / "ragshield.db") in message and "\n" not in message


def test_an_explicit_home_ignores_the_old_folder(tmp_path, monkeypatch, no_old_folder):
    no_old_folder.mkdir(parents=True)
    (no_old_folder / "ragshield.db").write_bytes(b"")
    monkeypatch.setenv("RAGSHIELD_HOME", str(tmp_path / "chosen"))
    assert Settings(cache_dir=tmp_path / "cache").database_url.endswith("chosen/ragshield.db")


def test_a_missing_demo_file_names_the_fix(tmp_path):
    from ragshield.datasets.demo import MissingAssetError, demo_asset

    with pytest.raises(MissingAssetError, match="reinstall"):
        demo_asset(tmp_path / "samples.jsonl")


def test_processes_checking_the_home_at_once_do_not_trip_each_other(tmp_path):
    # Test workers, the app and a CLI call check the same home as they start.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        checked = list(pool.map(lambda _: home.writable(tmp_path), range(400)))
    assert checked == [tmp_path] * 400 and not list(tmp_path.iterdir())
