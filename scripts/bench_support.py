"""Quality of the support judge (claim by claim) on answers and claims that people labelled as
supported by their passages or not, beside p_true and pre_answer read by the same model and
keep-all; each group held out when a threshold is tuned. Appends to docs/QUALITY.md.

    python scripts/bench_support.py --data-dir DIR [--sets attributionbench,lfqa]
                                    [--per-source 24] [--answers 48] [--judge-model qwen-1.5b]

- AttributionBench (one claim vs its cited references; seven sources): per source, balanced
  accuracy at the threshold that is best on the other sources (each source held out), and
  AUROC; the median source with the lowest and highest.
- LFQA-Verification, the settings where the model saw the passages (webgpt, gpt3_wdoc,
  gpt3_whudoc, alpaca_wdoc): AUROC per answer (true = every sentence supported; the answer's
  score combines its claims: min, as the judge does, or mean, the share supported, the product
  or the mean of the lowest two) and per sentence (a labelled sentence scored by the claims of
  ours that overlap it), by setting; and what redacting the claims under the threshold would
  do: of the answers shortened, the share whose remaining sentences people all found
  supported, and the share of supported sentences lost.
- Cost: per LFQA answer, the support judge's own seconds after pre_answer read the passages
  (the prefix they share), against pre_answer's. `--cost N` measures only that, on N answers
  from an empty call cache (a temporary store), and appends to docs/BENCHMARKS.md instead.

`--data-dir` is the folder holding faithfulness/*.jsonl. Every model call goes through the
call cache of a store of its own (RAGSHIELD_DATABASE_URL, or bench_support.db in the cache
folder): run it again after an interruption and it resumes.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import psutil
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.judges.registry import make_judge  # noqa: E402
from ragshield.judges.judge_readers import JudgeReaders  # noqa: E402
from ragshield.llm.factory import make_reader  # noqa: E402
from ragshield.refusal import is_refusal  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.types import Answer, Passage, Sample, Verdict  # noqa: E402

JUDGES = ("pre_answer", "support", "p_true")  # pre_answer first: it reads the shared prefix
SEEN_PASSAGES = ("webgpt", "gpt3_wdoc", "gpt3_whudoc", "alpaca_wdoc")
RESAMPLES = 1000
COMBINE: dict[str, Callable[[list[float], float], float]] = {
    "min": lambda scores, t: min(scores),
    "mean": lambda scores, t: float(np.mean(scores)),
    "share supported": lambda scores, t: float(np.mean([s >= t for s in scores])),
    # P(every claim supported), were the claims' readings independent (a noisy AND).
    "product": lambda scores, t: float(np.prod(scores)),
    "mean of the lowest two": lambda scores, t: float(np.mean(sorted(scores)[:2])),
}


def read_rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as rows:
        return [json.loads(line) for line in rows if line.strip()]


def sample_of(row: dict[str, Any]) -> tuple[Sample, Answer]:
    passages = [Passage(text=p["text"], title=p.get("title") or None) for p in row["passages"]]
    text = row["answer"]
    return (Sample(id=row["id"], question=row["question"], passages=passages),
            Answer(answerer="given", text=text, raw=text, messages=[],
                   refusal=is_refusal(text)))


def draw(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], str], per_group: int,
         seed: int) -> list[dict[str, Any]]:
    """`per_group` rows of each group, half labelled true where the group allows."""
    rng = random.Random(seed)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    chosen = []
    for name in sorted(groups):
        halves = [[r for r in groups[name] if r["label"] is flag] for flag in (True, False)]
        first = min(per_group // 2, len(halves[0]))
        second = min(per_group - first, len(halves[1]))
        chosen += rng.sample(halves[0], first) + rng.sample(halves[1], second)
    return chosen


def judge_rows(rows: list[dict[str, Any]], llm, judges) -> list[dict[str, Verdict]]:
    out = []
    for number, row in enumerate(rows, start=1):
        sample, answer = sample_of(row)
        out.append({judge.name: judge.judge(sample, answer, llm) for judge in judges})
        if number % 10 == 0:
            print(f"  {number}/{len(rows)} judged", flush=True)
    return out


def _auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else np.nan


def auroc_interval(labels: Sequence[bool], scores: Sequence[float],
                   seed: int = 0) -> tuple[float, float, float]:
    labels, scores = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    draws = [_auroc(labels[i], scores[i])
             for i in rng.integers(0, len(labels), size=(RESAMPLES, len(labels)))]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return _auroc(labels, scores), float(low), float(high)


def balanced_accuracy(labels: np.ndarray, keep: np.ndarray) -> float:
    return float((keep[labels].mean() + (~keep[~labels]).mean()) / 2)


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    candidates = np.unique(np.concatenate([scores, [0.5]]))
    return float(max(candidates, key=lambda t: balanced_accuracy(labels, scores >= t)))


def ba_interval(labels: np.ndarray, keep: np.ndarray, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    draws = []
    for index in rng.integers(0, len(labels), size=(RESAMPLES, len(labels))):
        sub = labels[index]
        if 0 < sub.sum() < len(sub):
            draws.append(balanced_accuracy(sub, keep[index]))
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def _score(verdict: Verdict) -> float:
    return 0.0 if verdict.score is None else float(verdict.score)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def attribution_section(rows, verdicts) -> tuple[str, dict[str, Any]]:
    sources = sorted({r["meta"]["src_dataset"] for r in rows})
    labels = np.array([r["label"] for r in rows])
    source_of = np.array([r["meta"]["src_dataset"] for r in rows])
    lines = ["| judge | source (held out) | claims | threshold tuned on the others | balanced "
             "accuracy [95%] | AUROC [95%] |", "|---|---|---|---|---|---|"]
    data: dict[str, Any] = {}
    for judge in JUDGES:
        scores = np.array([_score(v[judge]) for v in verdicts])
        accuracies, aurocs, thresholds = [], [], []
        for source in sources:
            held = source_of == source
            threshold = best_threshold(labels[~held], scores[~held])
            keep = scores[held] >= threshold
            accuracy = balanced_accuracy(labels[held], keep)
            low, high = ba_interval(labels[held], keep)
            auc, auc_low, auc_high = auroc_interval(labels[held], scores[held])
            accuracies.append(accuracy)
            aurocs.append(auc)
            thresholds.append(threshold)
            lines.append(f"| {judge} | {source} | {held.sum()} | {threshold:.3f} | "
                         f"{accuracy:.3f} [{low:.3f}, {high:.3f}] | "
                         f"{auc:.3f} [{auc_low:.3f}, {auc_high:.3f}] |")
        lines.append(f"| **{judge}** | **median source [lowest, highest]** | {len(rows)} | "
                     f"{_spread(thresholds)} | **{_spread(accuracies)}** | {_spread(aurocs)} |")
        data[judge] = {"balanced_accuracy": dict(zip(sources, accuracies)),
                       "auroc": dict(zip(sources, aurocs)),
                       "thresholds": dict(zip(sources, thresholds))}
    lines.append(f"| keep-all | every source | {len(rows)} | - | 0.500 | 0.500 |")
    return "\n".join(lines), data


def sentence_spans(row: dict[str, Any]) -> list[tuple[int, int, bool]]:
    """Each labelled sentence of an LFQA answer as (start, end, supported) in the answer, in
    order (a sentence not found in the answer is left out)."""
    spans, position = [], 0
    for sentence in row["sentences"]:
        start = row["answer"].find(sentence["text"], position)
        if start >= 0:
            position = start + len(sentence["text"])
            spans.append((start, position, bool(sentence["supported"])))
    return spans


def sentence_scores(row: dict[str, Any], verdict: Verdict) -> list[tuple[bool, float]]:
    """Each labelled sentence of an LFQA answer with the lowest score of our claims that
    overlap it (a sentence no claim covers is left out)."""
    claims = [c for c in verdict.details.get("claims", []) if c.get("score") is not None]
    found = []
    for start, end, supported in sentence_spans(row):
        overlapping = [c["score"] for c in claims if c["start"] < end and c["end"] > start]
        if overlapping:
            found.append((supported, min(overlapping)))
    return found


def redaction(rows, verdicts, threshold: float) -> dict[str, float]:
    """What on_unsupported=redact does (services/questions/redaction.py), by people's sentence
    labels: an answer with a sentence under `threshold` is shortened when its first sentence passes,
    else withheld. Among the shortened: the share all of whose remaining sentences people found
    supported, against the same answers before the cut; supported sentences lost."""
    shortened = clean = clean_before = supported = lost = withheld = 0
    for row, verdict in zip(rows, verdicts):
        scored = sentence_scores(row, verdict["support"])
        supported += sum(label for label, _ in scored)
        if all(score >= threshold for _, score in scored):
            continue
        if scored[0][1] < threshold:  # no first sentence left: withheld whole
            withheld += 1
            continue
        shortened += 1
        lost += sum(label for label, score in scored if score < threshold)
        clean += all(label for label, score in scored if score >= threshold)
        clean_before += all(label for label, _ in scored)
    share = (lambda count: count / shortened if shortened else float("nan"))
    return {"shortened": shortened, "withheld": withheld, "clean_share": share(clean),
            "clean_before": share(clean_before),
            "supported_lost": lost / supported if supported else float("nan")}


def lfqa_section(rows, verdicts, threshold: float) -> tuple[str, dict[str, Any]]:
    settings = [r["meta"]["setting"] for r in rows]
    labels = [bool(r["label"]) for r in rows]
    lines = ["| measure | pooled [95%] | by setting: median [lowest, highest] | n |",
             "|---|---|---|---|"]
    data: dict[str, Any] = {}

    def row_line(name: str, pairs: list[tuple[str, bool, float]]) -> None:
        auc, low, high = auroc_interval([p[1] for p in pairs], [p[2] for p in pairs])
        by = [_auroc(np.array([p[1] for p in pairs if p[0] == s], dtype=int),
                     np.array([p[2] for p in pairs if p[0] == s])) for s in SEEN_PASSAGES]
        by = [b for b in by if not np.isnan(b)]
        lines.append(f"| {name} | {auc:.3f} [{low:.3f}, {high:.3f}] | "
                     f"{_spread(by) if by else '-'} | {len(pairs)} |")
        data[name] = {"auroc": auc, "interval": [low, high], "by_setting": by}

    for combine, rule in COMBINE.items():
        pairs = []
        for setting, label, verdict in zip(settings, labels, verdicts):
            scores = [c["score"] for c in verdict["support"].details.get("claims", [])
                      if c.get("score") is not None]
            pairs.append((setting, label, rule(scores, threshold) if scores else 0.0))
        row_line(f"support per answer, {combine} of the claims", pairs)
    for judge in ("p_true", "pre_answer"):
        row_line(f"{judge} per answer", [(s, label, _score(v[judge]))
                                         for s, label, v in zip(settings, labels, verdicts)])
    sentences = [(s, label, score) for s, row, v in zip(settings, rows, verdicts)
                 for label, score in sentence_scores(row, v["support"])]
    row_line("support per sentence", sentences)
    lines.append(f"| keep-all | 0.500 | 0.500 | {len(rows)} |")
    data["redaction"] = redact = redaction(rows, verdicts, threshold)
    lines += ["", f"Redacting the claims under {threshold:.2f} (on_unsupported=redact): "
              f"{redact['shortened']} of {len(rows)} answers shortened, "
              f"{redact['withheld']} withheld (their first sentence failed); of the shortened, "
              f"**{redact['clean_share']:.0%}** have only sentences people found supported "
              f"left, against {redact['clean_before']:.0%} of the same answers before the "
              f"cut; {redact['supported_lost']:.0%} of all supported sentences are cut (in "
              f"shortened answers)."]
    return "\n".join(lines), data


def cost_line(verdicts) -> tuple[str, dict[str, float]]:
    own = [sum(c.seconds for c in v["support"].trace if not c.cache_hit) for v in verdicts]
    before = [sum(c.seconds for c in v["pre_answer"].trace if not c.cache_hit)
              for v in verdicts]
    claims = [len(v["support"].details.get("claims", [])) for v in verdicts]
    fresh = [(o, b) for o, b in zip(own, before) if o > 0 and b > 0]
    if not fresh:
        return "Cost: every call came from the call cache; no time measured.", {}
    data = {"support_s": statistics.median(o for o, _ in fresh),
            "pre_answer_s": statistics.median(b for _, b in fresh),
            "claims": statistics.median(claims)}
    return (f"Cost per LFQA answer (median of {len(fresh)} answers measured, "
            f"{data['claims']:.0f} claims): support {data['support_s']:.1f} s after the "
            f"shared prefix, pre_answer {data['pre_answer_s']:.1f} s (reading the passages)."), data


def lfqa_rows(folder: Path, count: int, seed: int) -> list[dict[str, Any]]:
    rows = [r for r in read_rows(folder / "lfqa_verification.jsonl")
            if r["meta"]["setting"] in SEEN_PASSAGES]
    return draw(rows, lambda r: r["meta"]["setting"], max(1, count // len(SEEN_PASSAGES)), seed)


def cost_only(args, folder: Path, llm, judges, load: float) -> None:
    rows = lfqa_rows(folder, args.cost, args.seed + 1)  # answers the quality run did not read
    verdicts = judge_rows(rows, llm, judges)
    line, data = cost_line(verdicts)
    words = statistics.median(len(r["answer"].split()) for r in rows)
    command = "python scripts/bench_support.py " + " ".join(sys.argv[1:])
    notes = (f"{len(rows)} LFQA-Verification answers (median {words:.0f} words), each judged "
             f"by pre_answer, then support, then p_true, read by {args.judge_model} from an "
             f"empty call cache; one job on the machine. Load average (1 min) at start "
             f"{load:.1f}, at end {psutil.getloadavg()[0]:.1f}.")
    publish("Support judge cost", command, notes, line, data, args.json_out.with_name(
        "support_cost.json"), append=not args.no_append, show=True)


def main() -> None:
    parser = bench_parser(__doc__, "support_quality.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--sets", default="attributionbench,lfqa")
    parser.add_argument("--per-source", type=int, default=24)
    parser.add_argument("--answers", type=int, default=48)
    parser.add_argument("--judge-model", default="qwen-1.5b")
    parser.add_argument("--threshold", type=float, default=None,
                        help="the support threshold for LFQA's redaction (default: the "
                             "judge's own for the reader, judges/judge_readers.py)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost", type=int, default=0, metavar="N",
                        help="only the cost, on N LFQA answers from an empty call cache")
    args = parser.parse_args()
    base = Settings()
    if args.cost:
        url = f"sqlite:///{tempfile.mkdtemp()}/cost.db"
    elif "RAGSHIELD_DATABASE_URL" in os.environ:
        url = base.database_url
    else:
        url = f"sqlite:///{base.cache_dir / 'bench_support.db'}"
    store = open_store(url)
    llm = make_reader(base, args.judge_model, store=store)
    thresholds = JudgeReaders(every=args.judge_model).options()
    judges = [make_judge(name, base, **thresholds.get(name, {})) for name in JUDGES]
    folder = args.data_dir / "faithfulness"
    sets = args.sets.split(",")
    started, load = time.time(), psutil.getloadavg()[0]
    if args.cost:
        cost_only(args, folder, llm, judges, load)
        return
    sections, data = [], {}
    support = next(judge for judge in judges if judge.name == "support")
    threshold = args.threshold if args.threshold is not None else support.threshold
    if "attributionbench" in sets:
        rows = draw(read_rows(folder / "attributionbench.jsonl"),
                    lambda r: r["meta"]["src_dataset"], args.per_source, args.seed)
        print(f"AttributionBench: {len(rows)} claims", flush=True)
        body, data["attributionbench"] = attribution_section(rows, judge_rows(rows, llm, judges))
        sections.append(f"### AttributionBench, each source held out\n\n{body}")
    if "lfqa" in sets:
        rows = lfqa_rows(folder, args.answers, args.seed)
        print(f"LFQA-Verification: {len(rows)} answers", flush=True)
        verdicts = judge_rows(rows, llm, judges)
        body, data["lfqa"] = lfqa_section(rows, verdicts, threshold)
        cost, data["cost"] = cost_line(verdicts)
        sections.append(f"### LFQA-Verification (the model saw the passages), by setting\n\n"
                        f"{body}\n\n{cost}")
    command = "python scripts/bench_support.py " + " ".join(sys.argv[1:])
    notes = (f"Judges read by {args.judge_model} (pre_answer, support, p_true at their "
             f"thresholds for it); thresholds tuned per held-out group as the tables say. "
             f"Load average (1 min) at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{time.time() - started:.0f} s.")
    publish("Support judge", command, notes, "\n\n".join(sections), data, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
