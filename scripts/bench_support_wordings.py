"""How the support judge's question is worded: the judge's own wording against others, and
against corrections of the model's leaning towards "yes", on development rows that no reported
figure uses. Appends to docs/QUALITY.md.

    python scripts/bench_support_wordings.py --data-dir DIR [--per-source 8] [--answers 16]
                                             [--judge-model qwen-1.5b]

Each claim (ragshield/claims.py) is asked about after the sample's shared prefix, as the
support judge asks it (judges/support.py), in each wording:

- statement: the judge's own question (is the statement true according to the passages);
- with examples: the same, with what "all of it" means shown on a made-up passage;
- negated: does the statement say anything the passages do not (its P(no) is the score);
- statement minus negated: the two log-odds averaged (what is common to both, the model's
  leaning, cancels);
- statement, calibrated: the log-odds less those of a content-free statement ("N/A") asked
  after the same passages (calibration before use, Zhao et al. 2021).

An answer scores as its least supported claim, as the judge scores it. Measured:
AttributionBench, pooled AUROC, AUROC by source and balanced accuracy with each source held
out (its threshold tuned on the others); LFQA-Verification (the settings where the model saw
the passages), AUROC per answer and per sentence.

The rows: drawn with seed 11 from those that no draw of bench_support.py or
bench_default_rule.py takes (seed 0, at the sizes they are run with). Every model call goes
through the call cache of a store of its own (RAGSHIELD_DATABASE_URL, or
bench_support_wordings.db in the cache folder): run it again and it resumes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import psutil
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from bench_support import (SEEN_PASSAGES, _spread, auroc_interval, balanced_accuracy,  # noqa: E402
                           best_threshold, draw, lfqa_rows, read_rows, sample_of,
                           sentence_scores)
from ragshield.answerers.context import PromptOptions, shared_messages  # noqa: E402
from ragshield.claims import split_claims  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.judges.learned import log_odds  # noqa: E402
from ragshield.judges.support import INSTRUCTIONS, statement  # noqa: E402
from ragshield.judges.yes_no import REPLY_YES_OR_NO, ask_yes_no  # noqa: E402
from ragshield.llm.factory import make_reader  # noqa: E402
from ragshield.llm.traced import TracedLLM  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.types import Verdict  # noqa: E402

SEED = 11
BENCH_SOURCES = (8, 16, 24, 32, 48, 64, 96)  # AttributionBench claims a source, as run
BENCH_ANSWERS = (24, 48, 64, 96, 128)  # LFQA-Verification answers, as run
NEGATED = ("Does the following statement say anything that the passages above do not say? "
           f"{REPLY_YES_OR_NO}\n\nStatement: ")
EXAMPLES = ("Is the following statement true according to the passages above? Reply yes only if "
            "the passages say all of what it says. Reply no if they do not mention it, say "
            "something else, or say only part of it. For example, had a passage said \"The "
            "bridge opened in 1932 and carries six lanes.\", then \"The bridge opened in "
            "1932.\" is yes; \"The bridge opened in 1932 and is the longest in the country.\" "
            "is no; \"The bridge opened in 1935.\" is no. " + REPLY_YES_OR_NO +
            "\n\nStatement: ")
WORDINGS = {"statement": INSTRUCTIONS, "examples": EXAMPLES, "negated": NEGATED}
CONTENT_FREE = "N/A"


def logit(p: float) -> float:
    return float(log_odds([p])[0])  # clipped as the learned judge reads a P


# Each scoring: a claim's reading (P(yes) by wording) and the answer's content-free P(yes).
SCORINGS: dict[str, Callable[[dict[str, float], float], float]] = {
    "statement (the judge's)": lambda c, free: logit(c["statement"]),
    "with examples": lambda c, free: logit(c["examples"]),
    "negated": lambda c, free: -logit(c["negated"]),
    "statement minus negated": lambda c, free: (logit(c["statement"]) - logit(c["negated"])) / 2,
    "statement, calibrated": lambda c, free: logit(c["statement"]) - logit(free),
}


def dev_rows(rows: list[dict[str, Any]], used: set[str], key: Callable[[dict[str, Any]], str],
             per_group: int) -> list[dict[str, Any]]:
    return draw([r for r in rows if r["id"] not in used], key, per_group, SEED)


def read_claims(rows: list[dict[str, Any]], llm: TracedLLM) -> list[dict[str, Any]]:
    """Per row: each claim's span and P(yes) in every wording, and the content-free P(yes)."""
    read = []
    for number, row in enumerate(rows, start=1):
        sample, answer = sample_of(row)
        claims = split_claims(answer.text)

        def ask(text: str, purpose: str) -> float:
            p_yes = ask_yes_no(llm, shared_messages(sample, text, PromptOptions()),
                               purpose=purpose).p_yes
            return 0.0 if p_yes is None else p_yes
        free = ask(INSTRUCTIONS + CONTENT_FREE, "content-free")
        found = []
        for claim in claims:
            asked = statement(sample.question, claim.text, len(claims) == 1)
            found.append({"start": claim.start, "end": claim.end,
                          **{name: ask(words + asked, name) for name, words in WORDINGS.items()}})
        read.append({"claims": found, "free": free})
        if number % 10 == 0:
            print(f"  {number}/{len(rows)} read", flush=True)
    return read


def answer_score(read: dict[str, Any], scoring: str) -> float:
    scores = [SCORINGS[scoring](claim, read["free"]) for claim in read["claims"]]
    return min(scores) if scores else logit(0.0)  # nothing to support: the lowest score


def attribution_table(rows: list[dict[str, Any]], read: list[dict[str, Any]],
                      data: dict[str, Any]) -> list[str]:
    labels = np.array([r["label"] for r in rows])
    sources = np.array([r["meta"]["src_dataset"] for r in rows])
    lines = ["| wording | AUROC pooled [95%] | AUROC by source: median [lowest, highest] | "
             "balanced accuracy, each source held out: median [lowest, highest] |",
             "|---|---|---|---|"]
    for scoring in SCORINGS:
        scores = np.array([answer_score(r, scoring) for r in read])
        accuracies, aurocs = [], []
        for source in sorted(set(sources)):
            held = sources == source
            threshold = best_threshold(labels[~held], scores[~held])
            accuracies.append(balanced_accuracy(labels[held], scores[held] >= threshold))
            aurocs.append(roc_auc_score(labels[held], scores[held]))
        auc, low, high = auroc_interval(labels, scores)
        data[scoring] = {"auroc": auc, "auroc_by_source": aurocs,
                         "balanced_accuracy_by_source": accuracies}
        lines.append(f"| {scoring} | {auc:.3f} [{low:.3f}, {high:.3f}] | {_spread(aurocs)} | "
                     f"{_spread(accuracies)} |")
    return lines


def lfqa_table(rows: list[dict[str, Any]], read: list[dict[str, Any]],
               data: dict[str, Any]) -> list[str]:
    labels = [bool(r["label"]) for r in rows]
    lines = ["| wording | AUROC per answer [95%] | AUROC per sentence [95%] |", "|---|---|---|"]
    for scoring in SCORINGS:
        scores = [answer_score(r, scoring) for r in read]
        sentences = [pair for row, r in zip(rows, read) for pair in sentence_scores(
            row, Verdict(judge="support", keep=None, score=None, details={"claims": [
                {**claim, "score": SCORINGS[scoring](claim, r["free"])}
                for claim in r["claims"]]}))]
        answer = auroc_interval(labels, scores)
        sentence = auroc_interval([s[0] for s in sentences], [s[1] for s in sentences])
        data[scoring] = {"auroc_answer": answer, "auroc_sentence": sentence}
        lines.append(f"| {scoring} | {answer[0]:.3f} [{answer[1]:.3f}, {answer[2]:.3f}] | "
                     f"{sentence[0]:.3f} [{sentence[1]:.3f}, {sentence[2]:.3f}] |")
    return lines


def main() -> None:
    parser = bench_parser(__doc__, "support_wordings.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--per-source", type=int, default=8)
    parser.add_argument("--answers", type=int, default=16)
    parser.add_argument("--judge-model", default="qwen-1.5b")
    args = parser.parse_args()
    base = Settings()
    url = (base.database_url if "RAGSHIELD_DATABASE_URL" in os.environ
           else f"sqlite:///{base.cache_dir / 'bench_support_wordings.db'}")
    llm = TracedLLM(make_reader(base, args.judge_model, store=open_store(url)))
    folder = args.data_dir / "faithfulness"
    started, load = time.time(), psutil.getloadavg()[0]

    source = (lambda r: r["meta"]["src_dataset"])
    claims = read_rows(folder / "attributionbench.jsonl")
    used = {r["id"] for size in BENCH_SOURCES for r in draw(claims, source, size, 0)}
    attribution = dev_rows(claims, used, source, args.per_source)
    print(f"AttributionBench: {len(attribution)} claims", flush=True)
    data: dict[str, Any] = {"attributionbench": {}, "lfqa": {}}
    attribution_lines = attribution_table(attribution, read_claims(attribution, llm),
                                          data["attributionbench"])

    setting = (lambda r: r["meta"]["setting"])
    answers = [r for r in read_rows(folder / "lfqa_verification.jsonl")
               if setting(r) in SEEN_PASSAGES]
    used = {r["id"] for size in BENCH_ANSWERS for r in lfqa_rows(folder, size, 0)}
    lfqa = dev_rows(answers, used, setting, max(1, args.answers // len(SEEN_PASSAGES)))
    print(f"LFQA-Verification: {len(lfqa)} answers", flush=True)
    lfqa_lines = lfqa_table(lfqa, read_claims(lfqa, llm), data["lfqa"])

    body = "\n\n".join([
        f"### AttributionBench ({len(attribution)} claims)", "\n".join(attribution_lines),
        f"### LFQA-Verification, the model saw the passages ({len(lfqa)} answers)",
        "\n".join(lfqa_lines)])
    command = "python scripts/bench_support_wordings.py " + " ".join(sys.argv[1:])
    notes = (f"Development rows (seed {SEED}) that no reported figure uses, read by "
             f"{args.judge_model}; an answer scores as its least supported claim. Load average "
             f"(1 min) at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{time.time() - started:.0f} s.")
    publish("Support judge wordings", command, notes, body, data, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
