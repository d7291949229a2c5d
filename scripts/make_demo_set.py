"""Build the bundled demo set in ragshield/assets/demo from the real ClapNQ and SQuAD 2.0 dev
files.

    python scripts/make_demo_set.py --data-dir DIR [--per-group 40] [--seed 7]

Picks, with a fixed seed, the same number of answerable and unanswerable questions from each
source, preferring short passages (total <= --max-words) so CPU prompts stay small, and at
most one question per passage and label so the set covers more topics. Writes
samples.jsonl (unified format, passages carrying corpus ids) and corpus.jsonl (the passages,
pooled and de-duplicated: {id, title, text, source}). The licence and attribution files
beside them are written by hand. The shipped set was made from the full files (--data-dir:
the folder of clapnq_dev.jsonl and squad2_dev_part_a.jsonl); tests/data holds the rows it was
cut from, but run on those alone the script picks differently (the seeded shuffle is over every
eligible row), so only the full files rebuild it byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from pathlib import Path

from ragshield.datasets import load_dataset
from ragshield.datasets.demo import DEMO_DIR
from ragshield.datasets.formats.unified import to_record
from ragshield.types import Sample

SOURCES = {"clapnq": "clapnq_dev.jsonl", "squad2": "squad2_dev_part_a.jsonl"}
DATA_DIR_HELP = (
    "required: the folder of the public sets clapnq_dev.jsonl (ClapNQ dev, 600 questions) and "
    "squad2_dev_part_a.jsonl (SQuAD 2.0 dev, its first half, 2,805 questions) in ragshield's "
    "unified JSONL (sources and licences: tests/data/README.md)")


def word_count(sample: Sample) -> int:
    return sum(len(p.text.split()) for p in sample.passages)


def passage_id(source: str, title: str | None, text: str) -> str:
    digest = hashlib.sha1(f"{title or ''}\n{text}".encode()).hexdigest()[:12]
    return f"{source}-{digest}"


def pick(samples: list[Sample], answerable: bool, count: int, max_words: int,
         rng: random.Random) -> list[Sample]:
    """`count` samples with this label and short passages, one per distinct passage set."""
    pool = [s for s in samples if s.answerable is answerable and s.passages
            and word_count(s) <= max_words and (s.reference_answers or not answerable)]
    rng.shuffle(pool)
    chosen, passages_seen = [], set()
    for sample in pool:
        key = tuple(p.text for p in sample.passages)
        if key not in passages_seen:
            passages_seen.add(key)
            chosen.append(sample)
        if len(chosen) == count:
            return chosen
    raise SystemExit(f"only {len(chosen)} samples fit (answerable={answerable}); "
                     "raise --max-words or lower --per-group")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help=DATA_DIR_HELP)
    parser.add_argument("--out", type=Path, default=DEMO_DIR)
    parser.add_argument("--per-group", type=int, default=40,
                        help="samples per (source, answerable) group")
    parser.add_argument("--max-words", type=int, default=350)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error(f"--data-dir is {DATA_DIR_HELP}")

    rng = random.Random(args.seed)
    chosen: list[tuple[str, Sample]] = []
    for source, file_name in SOURCES.items():
        samples = list(load_dataset(args.data_dir / file_name, "unified"))
        for answerable in (True, False):
            chosen += [(source, s) for s in pick(samples, answerable, args.per_group,
                                                 args.max_words, rng)]
    rng.shuffle(chosen)

    corpus: dict[str, dict[str, str | None]] = {}
    for source, sample in chosen:
        for passage in sample.passages:
            passage.doc_id = passage_id(source, passage.title, passage.text)
            corpus.setdefault(passage.doc_id, {"id": passage.doc_id, "title": passage.title,
                                               "text": passage.text, "source": source})

    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "samples.jsonl", [to_record(sample) for _, sample in chosen])
    write_jsonl(args.out / "corpus.jsonl", list(corpus.values()))
    sizes = {name: (args.out / name).stat().st_size for name in ("samples.jsonl", "corpus.jsonl")}
    print(f"{len(chosen)} samples, {len(corpus)} corpus passages, "
          + ", ".join(f"{name} {size / 1024:.0f} KiB" for name, size in sizes.items()))


def write_jsonl(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
