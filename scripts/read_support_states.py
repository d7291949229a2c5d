"""Read labelled claims as the support judge reads them, and keep what the 1.5B holds at that
moment: its P(yes), the claim's word coverage, and its final hidden state at the last prompt
token (the state its yes/no is read from). scripts/train_support_probe.py fits a probe on them.

    python scripts/read_support_states.py --data-dir DIR [--per-set 160] [--out FILE.npz]

Each row is read once, with the judge's own prompt (judges/support.py INSTRUCTIONS, after the
sample's shared prefix), rows of the same passages in turn so the passages are read once. The
sets: the licence-clear training sets of scripts/train_verifier.py (TRAINING_SETS), and, only
ever measured, AttributionBench (by source), LFQA-Verification (per sentence), WiCE,
Factcheck-GPT, Climate-FEVER, HealthVer and COVID-Fact. Written to --out as arrays: hidden
(float16), p_yes, coverage, label, and set, group, row and claim names. Resumes: rows already
in --out are not read again. The 1.5B reads about 35 prompt tokens a second on 2 cores, so a
row of short passages takes about 6 s and --minutes bounds the run; the sets are read in turn.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_support import SEEN_PASSAGES, read_rows  # noqa: E402
from train_verifier import TRAINING_SETS  # noqa: E402

from ragshield.answerers.context import shared_messages  # noqa: E402
from ragshield.claims import split_claims  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.judges.readers import first_word_token, yes_probability  # noqa: E402
from ragshield.judges.support import INSTRUCTIONS, passage_words, word_coverage  # noqa: E402
from ragshield.llm.factory import make_llm  # noqa: E402
from ragshield.types import Passage, Sample  # noqa: E402

MEASURED_ONLY = ("climate_fever", "healthver", "covidfact")


def passages_of(row: dict[str, Any]) -> list[Passage]:
    return [Passage(text=p["text"], title=p.get("title") or None) for p in row["passages"]]


def balanced(rows: list[dict[str, Any]], count: int, rng: random.Random) -> list[dict]:
    halves = [[r for r in rows if r["label"] is flag] for flag in (True, False)]
    take = min(count // 2, len(halves[0]))
    return rng.sample(halves[0], take) + rng.sample(halves[1], min(count - take,
                                                                  len(halves[1])))


def claims_by_set(folder: Path, per_set: int, seed: int) -> dict[str, list[tuple]]:
    """Each set's claims to read, as (set, group, row, claim id, claim text, label), a
    balanced draw of `per_set` answers (AttributionBench: of each source; LFQA-Verification:
    the sentences of per_set // 6 answers). An answer's label is each of its claims' label
    (train_support_probe.py scores an answer by its least supported claim)."""
    rng = random.Random(seed)
    out: dict[str, list[tuple]] = {}
    for name in (*TRAINING_SETS, *MEASURED_ONLY, "factcheck_gpt"):
        folder_name = "faithfulness" if name == "factcheck_gpt" else "verification"
        rows = balanced(read_rows(folder / folder_name / f"{name}.jsonl"), per_set, rng)
        out[name] = list(_answer_claims(name, lambda row: name, rows))
    by_source: dict[str, list[dict]] = defaultdict(list)
    for row in read_rows(folder / "faithfulness" / "attributionbench.jsonl"):
        by_source[row["meta"]["src_dataset"]].append(row)
    out["attributionbench"] = list(_answer_claims(
        "attributionbench", lambda row: row["meta"]["src_dataset"],
        [r for rows in by_source.values() for r in balanced(rows, per_set // 4, rng)]))
    lfqa = [r for r in read_rows(folder / "faithfulness" / "lfqa_verification.jsonl")
            if r["meta"]["setting"] in SEEN_PASSAGES]
    out["lfqa_verification"] = [
        ("lfqa_verification", row["meta"]["setting"], row, f"{row['id']}#{number}",
         sentence["text"], bool(sentence["supported"]))
        for row in rng.sample(lfqa, min(per_set // 6, len(lfqa)))
        for number, sentence in enumerate(row["sentences"])]
    return out


def interleaved(by_set: dict[str, list[tuple]], skip: set[str], seed: int,
                training_turns: int = 2) -> list[tuple]:
    """The sets' claims in turn (each round: `training_turns` answers of each training set,
    one of each measured set), answers shuffled within a set, so that a read cut short by
    its time budget leaves every set about as far along with both labels; an answer's claims
    stay together (they share a prefix)."""
    rng = random.Random(seed + 1)  # apart from the draw's: the same rows whatever the order
    queues = []
    for name, claims in by_set.items():
        answers: dict[str, list[tuple]] = {}
        for claim in claims:
            if claim[3] not in skip:
                answers.setdefault(claim[2]["id"], []).append(claim)
        order = list(answers.values())
        rng.shuffle(order)
        queues.append((training_turns if name in TRAINING_SETS else 1, order))
    out: list[tuple] = []
    for turn in range(max((len(q) for _, q in queues), default=0)):
        for turns, queue in queues:
            for answer in queue[turn * turns:(turn + 1) * turns]:
                out += answer
    return out


def _answer_claims(name: str, group, rows: list[dict]) -> Iterator[tuple]:
    for row in rows:
        for number, claim in enumerate(split_claims(row["answer"])):
            yield name, group(row), row, f"{row['id']}#{number}", claim.text, bool(row["label"])


class StateReader:
    """The packaged 1.5B, reading a prompt and giving P(yes) and the last prompt token's
    final hidden state (llama.cpp's embeddings of that token, switched on for the read)."""

    def __init__(self, settings: Settings) -> None:
        self.llm = make_llm(settings, packaged="qwen-1.5b")

    def read(self, messages) -> tuple[float | None, np.ndarray]:
        import llama_cpp

        llama = self.llm._llama
        ctx = llama._ctx.ctx
        llama_cpp.llama_set_embeddings(ctx, True)
        try:
            completion = self.llm.chat(messages, max_tokens=1, logprobs=True, top_logprobs=10)
            pointer = llama_cpp.llama_get_embeddings_ith(ctx, -1)
            width = llama.n_embd()
            hidden = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)),
                                           shape=(width,)).copy()
        finally:
            llama_cpp.llama_set_embeddings(ctx, False)
        first = first_word_token(completion.tokens or [])
        return (yes_probability(first) if first else None), hidden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--per-set", type=int, default=160)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--leave", default="summedits,faithdial_audit",
                        help="sets not read: by default the two whose passages run to 1,000 "
                             "or more characters (25 s a row for the 1.5B on 2 cores)")
    parser.add_argument("--minutes", type=float, default=45.0,
                        help="stop after this long (a later run goes on where it stopped)")
    parser.add_argument("--out", type=Path,
                        default=Settings().cache_dir / "support_states.npz")
    args = parser.parse_args()
    done: dict[str, np.ndarray] = {}
    if args.out.is_file():
        done = dict(np.load(args.out, allow_pickle=False))
    seen = set(done["claim"].tolist()) if done else set()
    records: dict[str, list] = {key: list(done.get(key, [])) for key in
                                ("hidden", "p_yes", "coverage", "label", "set", "group", "row",
                                 "claim")}
    reader = StateReader(Settings())
    started, last_save = time.perf_counter(), time.perf_counter()
    by_set = claims_by_set(args.data_dir, args.per_set, args.seed)
    todo = interleaved({name: claims for name, claims in by_set.items()
                        if name not in args.leave.split(",")}, seen, args.seed)
    print(f"{len(todo)} claims to read ({len(seen)} read before)", flush=True)
    for number, (name, group, row, claim_id, text, label) in enumerate(todo, 1):
        sample = Sample(id=row["id"], question=row.get("question") or "",
                        passages=passages_of(row))
        p_yes, hidden = reader.read(shared_messages(sample, INSTRUCTIONS + text))
        for key, value in (("hidden", hidden.astype(np.float16)),
                           ("p_yes", np.nan if p_yes is None else p_yes),
                           ("coverage", word_coverage(text, passage_words(sample.passages))),
                           ("label", label), ("set", name), ("group", group),
                           ("row", row["id"]), ("claim", claim_id)):
            records[key].append(value)
        over = time.perf_counter() - started > args.minutes * 60
        if time.perf_counter() - last_save > 120 or number == len(todo) or over:
            save(args.out, records)
            last_save = time.perf_counter()
            print(f"  {number}/{len(todo)} read in {time.perf_counter() - started:.0f} s",
                  flush=True)
        if over:
            break


def save(path: Path, records: dict[str, list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {key: np.asarray(values) for key, values in records.items()}
    arrays["hidden"] = np.stack(records["hidden"]).astype(np.float16)
    partial = path.with_suffix(".partial.npz")
    np.savez(partial, **arrays)
    partial.replace(path)


if __name__ == "__main__":
    main()
