"""The bundled demo set (assets/demo, built by scripts/make_demo_set.py): real ClapNQ and
SQuAD 2.0 questions, half answerable, with short passages; loaded as dataset `demo` by
ragshield.services.datasets.ensure_demo_dataset."""

from __future__ import annotations

from ragshield.config import PROJECT_ROOT

DEMO_DATASET = "demo"
DEMO_DIR = PROJECT_ROOT / "assets" / "demo"
DEMO_SAMPLES = DEMO_DIR / "samples.jsonl"
DEMO_CORPUS = DEMO_DIR / "corpus.jsonl"  # the samples' passages, pooled, for retrieval
# The demo set answered and judged by every judge (scripts/make_demo_run.py), loaded into a
# new database by ragshield.services.demo_run, and the Demo's example questions from it.
DEMO_RUN = DEMO_DIR / "run.json.xz"
DEMO_EXAMPLES = DEMO_DIR / "examples.json"
DEMO_LICENSE = "CC BY-SA 4.0 (SQuAD 2.0); Apache-2.0 and CC BY-SA 3.0 (ClapNQ); see ATTRIBUTION.md"
