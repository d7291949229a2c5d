"""The bundled demo set (package data under ragshield/assets/demo, built by
scripts/make_demo_set.py): real ClapNQ and SQuAD 2.0 questions, half answerable, with short
passages; loaded as dataset `demo` by ragshield.services.data.datasets.ensure_demo_dataset."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from ragshield.errors import UserError

DEMO_DATASET = "demo"
# Package data: a regular folder in a wheel install and in a checkout.
DEMO_DIR = Path(str(files("ragshield") / "assets" / "demo"))
DEMO_SAMPLES = DEMO_DIR / "samples.jsonl"
DEMO_CORPUS = DEMO_DIR / "corpus.jsonl"  # the samples' passages, pooled, for retrieval
# The demo set answered and judged by every judge (scripts/make_demo_run.py), loaded into a
# new database by ragshield.services.data.demo_run, and the Demo's example questions from it.
DEMO_RUN = DEMO_DIR / "run.json.xz"
DEMO_EXAMPLES = DEMO_DIR / "examples.json"
DEMO_LICENSE = "CC BY-SA 4.0 (SQuAD 2.0); Apache-2.0 and CC BY-SA 3.0 (ClapNQ); see ATTRIBUTION.md"


class MissingAssetError(UserError, FileNotFoundError):
    """A file the package ships is not where the installed package keeps it."""


def demo_asset(path: Path) -> Path:
    """`path` itself, or one line saying the installation is broken and how to mend it."""
    if not path.is_file():
        raise MissingAssetError(
            f"the demo file {path.name} is missing from the installed package ({path.parent});"
            " the installation is incomplete: reinstall it with"
            " `pip install --force-reinstall ragshield`")
    return path
