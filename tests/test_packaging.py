"""ragshield as an installable package: the declared dependencies agree with the pinned set,
the wheel carries its assets and migrations, and an installed wheel works from a folder with
no checkout in sight (its home, its demo set, its front door)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ragshield import __version__, home
from tests.conftest import lane

ROOT = Path(__file__).resolve().parents[1]


def declared() -> dict[str, Requirement]:
    """Every requirement of pyproject.toml, its extras' included, by canonical name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values()
                                       for line in extra]
    return {canonicalize_name(Requirement(line).name): Requirement(line) for line in lines}


def pinned() -> dict[str, Requirement]:
    found = {}
    for name in ("requirements.txt", "requirements-dev.txt"):
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                requirement = Requirement(line)
                assert str(requirement.specifier).startswith("=="), (
                    f"{name}:{number}: {line} is not an exact pin")
                found[canonicalize_name(requirement.name)] = requirement
    return found


def test_the_pins_satisfy_the_declared_ranges_and_name_the_same_packages():
    ranges, pins = declared(), pinned()
    assert sorted(set(pins) - set(ranges)) == [], "pinned but not declared in pyproject.toml"
    assert sorted(set(ranges) - set(pins)) == [], "declared but not pinned"
    for name, requirement in ranges.items():
        version = next(iter(pins[name].specifier)).version
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{name}: the pin {version} is outside the declared {requirement.specifier}")


def test_core_dependencies_cover_every_import_of_the_package():
    # Each third-party module the package imports is a declared dependency (or comes with
    # one): a module missing here would break `pip install ragshield` only on import.
    modules = {"torch": "torch", "llama_cpp": "llama-cpp-python", "openai": "openai",
               "transformers": "transformers", "sentence_transformers": "sentence-transformers",
               "sqlalchemy": "sqlalchemy", "alembic": "alembic", "pydantic_settings":
               "pydantic-settings", "typer": "typer", "gradio": "gradio", "fastapi": "fastapi",
               "uvicorn": "uvicorn", "httpx": "httpx", "faiss": "faiss-cpu", "bm25s": "bm25s",
               "Stemmer": "pystemmer", "markdownify": "markdownify", "bs4": "beautifulsoup4",
               "filelock": "filelock", "platformdirs": "platformdirs", "psutil": "psutil",
               "tqdm": "tqdm", "pandas": "pandas", "scipy": "scipy", "sklearn": "scikit-learn",
               "threadpoolctl": "threadpoolctl", "matplotlib": "matplotlib",
               "pyarrow": "pyarrow", "numpy": "numpy", "opentelemetry": "opentelemetry-sdk",
               "prometheus_client": "prometheus-client"}
    imported = set()
    for path in (ROOT / "ragshield").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) > 1 and words[0] in ("import", "from"):
                imported.add(words[1].split(".")[0])
    third_party = {name for name in imported if name in modules}
    missing = {modules[name] for name in third_party} - set(declared())
    assert not missing, f"imported but not declared: {sorted(missing)}"
    assert "llama_cpp" in third_party and "gradio" in third_party  # the scan reads imports


@pytest.fixture(scope="session")
@lane("slow")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (no build isolation: setuptools is installed)."""
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(folder), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    [built] = folder.glob("ragshield-*.whl")
    return built


def test_the_wheel_carries_the_demo_assets_and_the_migrations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("samples.jsonl", "corpus.jsonl", "run.json.xz", "examples.json", "LICENSE",
                   "ATTRIBUTION.md"):
        assert f"ragshield/assets/demo/{needed}" in names, needed
    assert "ragshield/store/migrations/env.py" in names
    assert "ragshield/store/migrations/script.py.mako" in names
    assert any(n.startswith("ragshield/store/migrations/versions/0001") for n in names)
    assert not any(n.startswith(("tests/", "scripts/")) for n in names)
    assert "ragshield/py.typed" in names  # users' type checkers read our hints
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Requires-Dist: gradio" in text and 'extra == "postgres"' in text



def test_the_wheel_carries_the_annotate_tab_script(wheel):
    assert "ragshield/ui/annotate.js" in zipfile.ZipFile(wheel).namelist()

@pytest.fixture(scope="session")
@lane("slow", "model")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A fresh virtualenv in a folder far from the checkout, with the wheel installed in it;
    the dependencies come from this test run's environment (a path entry, not a copy)."""
    folder = tmp_path_factory.mktemp("elsewhere")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "RAGSHIELD_", "VIRTUAL_ENV"))}
    env.update(RAGSHIELD_HOME=str(folder / "home"), RAGSHIELD_CACHE_DIR=str(home.cache_dir()),
               HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return folder, env


def run_there(installed: tuple[Path, dict], *args: str) -> subprocess.CompletedProcess:
    folder, env = installed
    return subprocess.run(list(args), cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_installed_wheel_works_from_any_folder(installed):
    folder, _ = installed
    where = run_there(installed, "python", "-c", "import ragshield, ragshield.services.shield;"
                      " print(ragshield.__file__); print(ragshield.Shield)")
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(folder / "venv")), where.stdout  # not the checkout's
    assert "ragshield.services.shield.Shield" in where.stdout
    version = run_there(installed, "ragshield", "--version")
    assert version.returncode == 0 and __version__ in version.stdout
    usage = run_there(installed, "ragshield", "--help").stdout
    assert "Usage: ragshield [OPTIONS]" in usage and "python -m" not in usage
    usage = run_there(installed, "python", "-m", "ragshield", "--help").stdout
    assert "Usage: python -m ragshield [OPTIONS]" in usage
    doctor = run_there(installed, "ragshield", "doctor", "--only", "database,embeddings")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    listed = run_there(installed, "ragshield", "datasets", "list")
    assert listed.returncode == 0 and "demo" in listed.stdout, listed.stdout + listed.stderr
    assert (folder / "home" / "ragshield.db").is_file()  # the home took the database


def test_the_readme_example_runs_on_the_installed_wheel(installed):
    from tests.code_support import python_example

    example = run_there(installed, "python", "-c", python_example())
    assert example.returncode == 0, example.stderr
    assert "p_true" in example.stdout


def test_the_wheel_carries_the_grounded_rules_numbers(wheel):
    assert "ragshield/assets/grounded_rule.json" in zipfile.ZipFile(wheel).namelist()
