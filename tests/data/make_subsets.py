"""Cut the test subsets in tests/data from the public datasets (see README.md beside this file).

    python tests/data/make_subsets.py --data-dir DIR [--out tests/data]

DIR holds the full files under the names the tests use (squad2_dev_part_a.jsonl,
clapnq_dev.jsonl, halueval_qa500.jsonl, nq_open_oracle.jsonl and raw/...). The cut is
deterministic: no randomness, rows are chosen by their position or id and kept in their
original order, JSON Lines rows are copied byte for byte,
and the JSON files are written back the way the originals are written (one line,
json.dumps's default separators), so a subset differs from its original only by the rows left
out. What each file keeps is in SUBSETS below and in README.md.
"""

from __future__ import annotations

import argparse
import bz2
import json
from collections import Counter
from pathlib import Path

from ragshield.datasets.demo import DEMO_SAMPLES

HERE = Path(__file__).resolve().parent

SQUAD_PER_ARTICLE = 4  # the first 4 answerable and 4 unanswerable questions of each article
SQUAD_FIRST_ARTICLE = 24  # ... and of the first article (Normans) the first 24 of each
CLAPNQ_FIRST = 16  # the first 16 rows of clapnq_dev.jsonl (the embedding test's texts)
HALUEVAL_FIRST = 10
NQ_ORACLE_FIRST = 10
NQ_OPEN_FIRST = 20
HOTPOT_FIRST = 5  # and every record whose context is not 10 paragraphs (one: 2)
CRAG_IDS = (
    "ecc1e84c-b979-4479-8275-eaa62020643f",  # sports, false premise
    "d535abd8-1361-4ad8-a82e-006ccdfc0cfb",  # movie, three pages without text (snippets)
)

SUBSETS = {
    "squad2_dev_part_a.jsonl": "the trained judge's questions, the first article's 24 + 24 "
                               "and the demo set's SQuAD 2.0 questions",
    "clapnq_dev.jsonl": "the first 16 rows and the demo set's ClapNQ questions",
    "halueval_qa500.jsonl": f"the first {HALUEVAL_FIRST} rows",
    "nq_open_oracle.jsonl": f"the first {NQ_ORACLE_FIRST} rows",
    "raw/squad2_dev_part_a_squad_format.json": "the questions of squad2_dev_part_a.jsonl",
    "raw/clapnq_dev_answerable.jsonl": "the answerable rows of clapnq_dev.jsonl",
    "raw/clapnq_dev_unanswerable.jsonl": "the unanswerable rows of clapnq_dev.jsonl",
    "raw/NQ-open.dev.jsonl": f"the first {NQ_OPEN_FIRST} rows",
    "raw/halueval_qa_one-turn_data.json": f"the first {HALUEVAL_FIRST} rows",
    "raw/hotpot_dev_distractor_first53.json": f"the first {HOTPOT_FIRST} records and the one "
                                              "with 2 paragraphs",
    "raw/crag_example_dev_data.jsonl.bz2": "2 records: " + ", ".join(CRAG_IDS),
}


def lines(path: Path) -> list[str]:
    """The file's lines, each with its newline, as stored."""
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.readlines()


def demo_ids() -> set[str]:
    """The ids of the shipped demo set's samples (the rows it was cut from)."""
    return {json.loads(line)["id"] for line in lines(DEMO_SAMPLES)}


def squad_ids(rows: list[dict], demo: set[str]) -> set[str]:
    """Unified ids: of each article (the title of its passage) the first SQUAD_PER_ARTICLE
    answerable and unanswerable questions (SQUAD_FIRST_ARTICLE of the first article), and the
    questions of the demo set."""
    seen: Counter = Counter()
    first_title = rows[0]["passages"][0]["title"]
    kept = set()
    for row in rows:
        title = row["passages"][0]["title"]
        key = (title, row["answerable"])
        limit = SQUAD_FIRST_ARTICLE if title == first_title else SQUAD_PER_ARTICLE
        if seen[key] < limit:
            seen[key] += 1
            kept.add(row["id"])
    return kept | (demo & {row["id"] for row in rows})


def cut_squad(data: Path, out: Path, demo: set[str]) -> None:
    source = lines(data / "squad2_dev_part_a.jsonl")
    keep = squad_ids([json.loads(line) for line in source], demo)
    write_lines(out / "squad2_dev_part_a.jsonl",
                [line for line in source if json.loads(line)["id"] in keep])
    raw_ids = {key.removeprefix("squad2:") for key in keep}
    raw = json.loads((data / "raw" / "squad2_dev_part_a_squad_format.json").read_text("utf-8"))
    articles = []
    for article in raw["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [qa for qa in paragraph["qas"] if qa["id"] in raw_ids]
            if qas:
                paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    write_text(out / "raw" / "squad2_dev_part_a_squad_format.json",
               json.dumps({**raw, "data": articles}, ensure_ascii=False))


def cut_clapnq(data: Path, out: Path, demo: set[str]) -> None:
    source = lines(data / "clapnq_dev.jsonl")
    ids = [json.loads(line)["id"] for line in source]
    keep = set(ids[:CLAPNQ_FIRST]) | (demo & set(ids))
    write_lines(out / "clapnq_dev.jsonl",
                [line for line, key in zip(source, ids) if key in keep])
    for name in ("clapnq_dev_answerable.jsonl", "clapnq_dev_unanswerable.jsonl"):
        write_lines(out / "raw" / name, [line for line in lines(data / "raw" / name)
                                         if f"clapnq:{json.loads(line)['id']}" in keep])


def cut_hotpot(data: Path, out: Path) -> None:
    name = "hotpot_dev_distractor_first53.json"
    records = json.loads((data / "raw" / name).read_text("utf-8"))
    kept = [r for i, r in enumerate(records) if i < HOTPOT_FIRST or len(r["context"]) != 10]
    write_text(out / "raw" / name, json.dumps(kept))


def cut_crag(data: Path, out: Path) -> None:
    name = "crag_example_dev_data.jsonl.bz2"
    with bz2.open(data / "raw" / name, "rt", encoding="utf-8", newline="") as handle:
        kept = [line for line in handle if json.loads(line)["interaction_id"] in CRAG_IDS]
    assert len(kept) == len(CRAG_IDS), "a CRAG record named in CRAG_IDS is missing"
    (out / "raw" / name).write_bytes(bz2.compress("".join(kept).encode("utf-8"), 9))


def write_lines(path: Path, kept: list[str]) -> None:
    write_text(path, "".join(kept))


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="the folder of the full public files (see README.md)")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    data, out = args.data_dir, args.out
    demo = demo_ids()

    cut_squad(data, out, demo)
    cut_clapnq(data, out, demo)
    write_lines(out / "halueval_qa500.jsonl",
                lines(data / "halueval_qa500.jsonl")[:HALUEVAL_FIRST])
    write_lines(out / "nq_open_oracle.jsonl",
                lines(data / "nq_open_oracle.jsonl")[:NQ_ORACLE_FIRST])
    write_lines(out / "raw" / "NQ-open.dev.jsonl",
                lines(data / "raw" / "NQ-open.dev.jsonl")[:NQ_OPEN_FIRST])
    write_lines(out / "raw" / "halueval_qa_one-turn_data.json",
                lines(data / "raw" / "halueval_qa_one-turn_data.json")[:HALUEVAL_FIRST])
    cut_hotpot(data, out)
    cut_crag(data, out)

    total = 0
    for name in SUBSETS:
        size = (out / name).stat().st_size
        total += size
        print(f"{name}: {size / 1024:.0f} KiB ({SUBSETS[name]})")
    print(f"data files: {total / 1024:.0f} KiB in all")


if __name__ == "__main__":
    main()
