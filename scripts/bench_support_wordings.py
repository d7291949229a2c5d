"""How the support judge's question is worded: the judge's wording against others, and
against corrections of the model's leaning towards "yes", on development rows that no reported
figure uses. Appends to docs/QUALITY.md.

    python scripts/bench_support_wordings.py --data-dir DIR [--per-source 8] [--answers 16]
                                             [--judge-model qwen-1.5b] [--wordings W,W]
                                             [--held-out]

Each claim (ragshield/claims.py) is asked about after the sample's shared prefix, as the
support judge asks it (judges/support.py), in each wording:

- statement: the judge's question until 2026-11-29 (is the statement true according to the
  passages);
- with examples: the same, with what "all of it" means shown on a made-up passage (the
  judge's question since, judges/support.py);
- negated: does the statement say anything the passages do not (its P(no) is the score);
- statement and examples averaged: the two log-odds averaged (two calls a claim);
- statement minus negated: the two log-odds averaged (what is common to both, the model's
  leaning, cancels);
- context: the judge's question with the answer's sentence before the claim shown as
  context (what "it" or "this" refers to);
- word coverage alone: the share of the claim's content words some passage holds (what the
  judge weighs with its reading; judges/support.py);
- statement, calibrated: the log-odds less those of a content-free statement ("N/A") asked
  after the same passages (calibration before use, Zhao et al. 2021).

An answer scores as its least supported claim, as the judge scores it. Measured:
AttributionBench, pooled AUROC, AUROC by source and balanced accuracy with each source held
out (its threshold tuned on the others); LFQA-Verification (the settings where the model saw
the passages), AUROC per answer and per sentence.

The rows: drawn with seed 11 from those that no draw of bench_support.py or
bench_default_rule.py takes (seed 0, at the sizes they are run with). `--held-out` reads the
rows bench_support.py reports instead, to test a wording chosen on the development rows where
it was not chosen. Every model call goes
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
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from bench_support import (COMBINE, SEEN_PASSAGES, _spread, auroc_interval,  # noqa: E402
                           balanced_accuracy, best_threshold, draw, lfqa_rows, read_rows,
                           sample_of, sentence_scores, sentence_spans)
from ragshield.answerers.context import PromptOptions, shared_messages  # noqa: E402
from ragshield.claims import split_claims  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.judges.judge_readers import LARGER_MODEL, THRESHOLDS  # noqa: E402
from ragshield.judges.learned import log_odds  # noqa: E402
from ragshield.judges.short_answer import is_short_answer  # noqa: E402
from ragshield.judges.support import INSTRUCTIONS, passage_words, word_coverage  # noqa: E402
from ragshield.judges.support import claim_score as judge_score  # noqa: E402
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
# The judge's question until 2026-11-29, before the example passage was added to it.
STATEMENT = ("Is the following statement true according to the passages above? Reply no if the "
             f"passages do not say so. {REPLY_YES_OR_NO}\n\nStatement: ")
WORDINGS = {"statement": STATEMENT, "examples": INSTRUCTIONS, "negated": NEGATED}
CONTENT_FREE = "N/A"


def in_context(claim: str, before: str | None) -> str:
    """The judge's question about a claim shown after the answer's sentence before it, so that
    "it" or "this" in the claim can be read (the sentence before is not what is asked about)."""
    if before is None:
        return INSTRUCTIONS + claim
    lead = INSTRUCTIONS.removesuffix("Statement: ")
    return (f'{lead}The sentence before it in the answer (context only): "{before}"\n'
            f"Statement: {claim}")


def logit(p: float) -> float:
    return float(log_odds([p])[0])  # clipped as the learned judge reads a P


# Each scoring: the wordings it reads, and how it reads a claim (P(yes) by wording; a short
# answer, which the judge reads as the answer to its question, by its P(yes) here) and the
# answer's content-free P(yes) (None where the content-free statement was not asked).
Scoring = Callable[[dict[str, float], Any], float]
SCORINGS: dict[str, tuple[tuple[str, ...], Scoring]] = {
    "statement (the judge's until 2026-11-29)": (("statement",),
                                                 lambda c, free: logit(c["statement"])),
    "with examples (the judge's question)": (("examples",),
                                             lambda c, free: logit(c["examples"])),
    "with examples and word coverage (the judge's)": (("examples",), lambda c, free: logit(
        c["examples"] if c["short"] else judge_score(c["examples"], c["coverage"]))),
    "word coverage alone (no model)": ((), lambda c, free: logit(c["coverage"])),
    "with examples, after the sentence before": (("context",),
                                                 lambda c, free: logit(c["context"])),
    "statement and examples averaged": (("statement", "examples"), lambda c, free: (
        logit(c["statement"]) + logit(c["examples"])) / 2),
    "negated": (("negated",), lambda c, free: -logit(c["negated"])),
    "statement minus negated": (("statement", "negated"),
                                lambda c, free: (logit(c["statement"]) - logit(c["negated"])) / 2),
    "statement, calibrated": (("statement", "free"),
                              lambda c, free: logit(c["statement"]) - logit(free)),
}


def scorings(asked: set[str]) -> list[str]:
    """The scorings whose wordings were all asked."""
    return [name for name, (needs, _) in SCORINGS.items() if set(needs) <= asked]


def claim_score(scoring: str, claim: dict[str, float], free: Any) -> float:
    return SCORINGS[scoring][1](claim, free)


def dev_rows(rows: list[dict[str, Any]], used: set[str], key: Callable[[dict[str, Any]], str],
             per_group: int) -> list[dict[str, Any]]:
    return draw([r for r in rows if r["id"] not in used], key, per_group, SEED)


def read_claims(rows: list[dict[str, Any]], llm: TracedLLM,
                asked: set[str]) -> list[dict[str, Any]]:
    """Per row: each claim's span and P(yes) in each asked wording, and the content-free P(yes)
    where "free" is asked."""
    read = []
    for number, row in enumerate(rows, start=1):
        sample, answer = sample_of(row)
        claims = split_claims(answer.text)

        def ask(text: str, purpose: str) -> float:
            p_yes = ask_yes_no(llm, shared_messages(sample, text, PromptOptions()),
                               purpose=purpose).p_yes
            return 0.0 if p_yes is None else p_yes
        free = ask(STATEMENT + CONTENT_FREE, "content-free") if "free" in asked else None
        found, passages = [], passage_words(sample.passages)
        for index, claim in enumerate(claims):
            text = claim.text
            found.append({"start": claim.start, "end": claim.end,
                          "coverage": word_coverage(claim.text, passages),
                          "short": is_short_answer(claims),
                          **{name: ask(words + text, name) for name, words in WORDINGS.items()
                             if name in asked}})
            if "context" in asked:
                before = claims[index - 1].text if index else None
                found[-1]["context"] = ask(in_context(text, before), "context")
        read.append({"claims": found, "free": free})
        if number % 10 == 0:
            print(f"  {number}/{len(rows)} read", flush=True)
    return read


def answer_score(read: dict[str, Any], scoring: str) -> float:
    scores = [claim_score(scoring, claim, read["free"]) for claim in read["claims"]]
    return min(scores) if scores else logit(0.0)  # nothing to support: the lowest score


def attribution_table(rows: list[dict[str, Any]], read: list[dict[str, Any]],
                      data: dict[str, Any], asked: set[str]) -> list[str]:
    labels = np.array([r["label"] for r in rows])
    sources = np.array([r["meta"]["src_dataset"] for r in rows])
    lines = ["| wording | AUROC pooled [95%] | AUROC by source: median [lowest, highest] | "
             "balanced accuracy, each source held out: median [lowest, highest] | threshold "
             "tuned on the other sources, as P(yes): median [lowest, highest] |",
             "|---|---|---|---|---|"]
    for scoring in scorings(asked):
        # As a P(yes), so that thresholds are tuned as bench_support.py tunes them.
        scores = expit([answer_score(r, scoring) for r in read])
        accuracies, aurocs, thresholds = [], [], []
        for source in sorted(set(sources)):
            held = sources == source
            threshold = best_threshold(labels[~held], scores[~held])
            thresholds.append(threshold)
            accuracies.append(balanced_accuracy(labels[held], scores[held] >= threshold))
            aurocs.append(roc_auc_score(labels[held], scores[held]))
        auc, low, high = auroc_interval(labels, scores)
        data[scoring] = {"auroc": auc, "auroc_by_source": aurocs,
                         "balanced_accuracy_by_source": accuracies, "thresholds": thresholds}
        lines.append(f"| {scoring} | {auc:.3f} [{low:.3f}, {high:.3f}] | {_spread(aurocs)} | "
                     f"{_spread(accuracies)} | {_spread(thresholds)} |")
    return lines


def lfqa_table(rows: list[dict[str, Any]], read: list[dict[str, Any]],
               data: dict[str, Any], asked: set[str]) -> list[str]:
    labels = [bool(r["label"]) for r in rows]
    lines = ["| wording | AUROC per answer [95%] | AUROC per sentence [95%] |", "|---|---|---|"]
    for scoring in scorings(asked):
        scores = [answer_score(r, scoring) for r in read]
        sentences = [pair for row, r in zip(rows, read) for pair in sentence_scores(
            row, Verdict(judge="support", keep=None, score=None, details={"claims": [
                {**claim, "score": claim_score(scoring, claim, r["free"])}
                for claim in r["claims"]]}))]
        answer = auroc_interval(labels, scores)
        sentence = auroc_interval([s[0] for s in sentences], [s[1] for s in sentences])
        data[scoring] = {"auroc_answer": answer, "auroc_sentence": sentence}
        lines.append(f"| {scoring} | {answer[0]:.3f} [{answer[1]:.3f}, {answer[2]:.3f}] | "
                     f"{sentence[0]:.3f} [{sentence[1]:.3f}, {sentence[2]:.3f}] |")
    return lines


def combine_table(rows: list[dict[str, Any]], read: list[dict[str, Any]],
                  data: dict[str, Any], asked: set[str]) -> list[str]:
    """LFQA AUROC per answer when an answer's claims combine otherwise than by their min (each
    claim as a P(yes); "share supported" at the 1.5B's support threshold)."""
    threshold = THRESHOLDS[LARGER_MODEL]["support"]
    labels = [bool(r["label"]) for r in rows]
    lines = ["| wording | claims combined by | AUROC per answer [95%] |", "|---|---|---|"]
    for scoring in scorings(asked):
        for combine, rule in COMBINE.items():
            scores = []
            for r in read:
                claims = [float(expit(claim_score(scoring, c, r["free"]))) for c in r["claims"]]
                scores.append(rule(claims, threshold) if claims else 0.0)
            auc, low, high = auroc_interval(labels, scores)
            data.setdefault(scoring, {})[combine] = [auc, low, high]
            lines.append(f"| {scoring} | {combine} | {auc:.3f} [{low:.3f}, {high:.3f}] |")
    return lines


def lfqa_claim_labels(row: dict[str, Any], claims: list[dict[str, Any]]) -> list[bool | None]:
    """Each claim's label by people's sentence labels: every labelled sentence it overlaps
    supported (None where it overlaps none)."""
    spans = sentence_spans(row)
    labels = [[label for start, end, label in spans if start < c["end"] and end > c["start"]]
              for c in claims]
    return [all(found) if found else None for found in labels]


def fit_sentences(sets: dict[str, tuple[list[dict[str, Any]], list[bool | None]]]) -> list[str]:
    """SENTENCE_FIT (judges/support.py): a logistic regression of a sentence's label on the
    judge's logit P(yes) and its word coverage, on every sentence claim read (short answers,
    which the judge reads otherwise (judges/short_answer.py), left out), each set weighted
    equally; also fitted on each set alone, to show how far the weights move."""
    def fit(chosen: list[str]) -> tuple[float, float, float]:
        features, labels, weights = [], [], []
        for name in chosen:
            claims, found = sets[name]
            kept = [(c, label) for c, label in zip(claims, found)
                    if label is not None and not c["short"]]
            features += [[logit(c["examples"]), c["coverage"]] for c, _ in kept]
            labels += [label for _, label in kept]
            weights += [1 / len(kept)] * len(kept)
        model = LogisticRegression(C=1e4).fit(np.array(features), np.array(labels),
                                              sample_weight=np.array(weights) * len(labels))
        return (float(model.intercept_[0]), *map(float, model.coef_[0]))
    lines = ["| fitted on | intercept | log-odds weight | coverage weight |", "|---|---|---|---|"]
    for chosen in [list(sets), *[[name] for name in sets]]:
        intercept, by_odds, by_coverage = fit(chosen)
        lines.append(f"| {' and '.join(chosen)} | {intercept:.2f} | {by_odds:.2f} | "
                     f"{by_coverage:.2f} |")
    return lines


def main() -> None:
    parser = bench_parser(__doc__, "support_wordings.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--per-source", type=int, default=8,
                        help="AttributionBench claims a source (0: LFQA-Verification only)")
    parser.add_argument("--answers", type=int, default=16)
    parser.add_argument("--judge-model", default="qwen-1.5b")
    parser.add_argument("--wordings", default=",".join([*WORDINGS, "free", "context"]),
                        help="what to ask, comma-separated: "
                             f"{', '.join(WORDINGS)}, free (the content-free statement), "
                             "context (the judge's, after the answer's sentence before)")
    parser.add_argument("--held-out", action="store_true",
                        help="read the rows bench_support.py reports (seed 0, at --per-source "
                             "and --answers) instead of development rows: to test a wording "
                             "chosen on the development rows")
    parser.add_argument("--fit", action="store_true",
                        help="fit the judge's SENTENCE_FIT on the rows read (development rows; "
                             "asks the judge's wording) and print it")
    args = parser.parse_args()
    if args.fit and (args.held_out or args.per_source == 0):
        parser.error("--fit: fits on development rows of both sets (no --held-out, "
                     "--per-source above 0)")
    asked = set(args.wordings.split(",")) | ({"examples"} if args.fit else set())
    unknown = asked - {*WORDINGS, "free", "context"}
    if unknown:
        parser.error(f"--wordings: unknown {', '.join(sorted(unknown))}")
    base = Settings()
    url = (base.database_url if "RAGSHIELD_DATABASE_URL" in os.environ
           else f"sqlite:///{base.cache_dir / 'bench_support_wordings.db'}")
    llm = TracedLLM(make_reader(base, args.judge_model, store=open_store(url)))
    folder = args.data_dir / "faithfulness"
    started, load = time.time(), psutil.getloadavg()[0]

    source = (lambda r: r["meta"]["src_dataset"])
    claims = read_rows(folder / "attributionbench.jsonl")
    attribution = [] if args.per_source == 0 else (
        draw(claims, source, args.per_source, 0) if args.held_out else dev_rows(
            claims, {r["id"] for size in BENCH_SOURCES for r in draw(claims, source, size, 0)},
            source, args.per_source))
    print(f"AttributionBench: {len(attribution)} claims", flush=True)
    data: dict[str, Any] = {"attributionbench": {}, "lfqa": {}}
    attribution_read = read_claims(attribution, llm, asked)
    attribution_lines = attribution_table(attribution, attribution_read,
                                          data["attributionbench"], asked) if attribution else []

    setting = (lambda r: r["meta"]["setting"])
    answers = [r for r in read_rows(folder / "lfqa_verification.jsonl")
               if setting(r) in SEEN_PASSAGES]
    lfqa = (lfqa_rows(folder, args.answers, 0) if args.held_out else dev_rows(
        answers, {r["id"] for size in BENCH_ANSWERS for r in lfqa_rows(folder, size, 0)},
        setting, max(1, args.answers // len(SEEN_PASSAGES))))
    print(f"LFQA-Verification: {len(lfqa)} answers", flush=True)
    lfqa_read = read_claims(lfqa, llm, asked)
    lfqa_lines = lfqa_table(lfqa, lfqa_read, data["lfqa"], asked)
    combine_lines = combine_table(lfqa, lfqa_read, data.setdefault("combine", {}), asked)

    fit_lines = fit_sentences({
        "AttributionBench": ([c for r in attribution_read for c in r["claims"]],
                             [row["label"] for row, r in zip(attribution, attribution_read)
                              for _ in r["claims"]]),
        "LFQA-Verification": ([c for r in lfqa_read for c in r["claims"]],
                              [label for row, r in zip(lfqa, lfqa_read)
                               for label in lfqa_claim_labels(row, r["claims"])])},
    ) if args.fit else []
    sections = ([f"### AttributionBench ({len(attribution)} claims)", "\n".join(attribution_lines)]
                if attribution else [])
    body = "\n\n".join([
        *sections,
        f"### LFQA-Verification, the model saw the passages ({len(lfqa)} answers)",
        "\n".join(lfqa_lines),
        "#### How an answer's claims combine (LFQA-Verification, per answer)",
        "\n".join(combine_lines),
        *(["#### SENTENCE_FIT (judges/support.py), fitted on these rows", "\n".join(fit_lines)]
          if fit_lines else [])])
    command = "python scripts/bench_support_wordings.py " + " ".join(sys.argv[1:])
    rows = ("The rows bench_support.py reports (seed 0), held out from the choice of wording"
            if args.held_out else f"Development rows (seed {SEED}) that no reported figure uses")
    notes = (f"{rows}, read by {args.judge_model}; an answer scores as its least supported "
             f"claim. Load average "
             f"(1 min) at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{time.time() - started:.0f} s.")
    publish("Support judge wordings", command, notes, body, data, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
