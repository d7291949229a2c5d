"""Which default decision should read the answer: today's (pre_answer alone) against rules that
combine answerability with the support judge, each fitted with one labelled set left out and
judged on that set. Appends to docs/QUALITY.md.

    python scripts/bench_default_rule.py --data-dir DIR [--short 80] [--per-source 14]
                                         [--answers 48] [--claims 48] [--wice 32] [--write]

Sets (the folder of the public sets; `faithfulness/` for the long ones):
- short, answered by the configured (0.5B) model, right = the answer is correct and its
  passages hold it: SQuAD 2.0 part A, ClapNQ, NQ-open and HaluEval (half of the last two made
  unanswerable, as scripts/bench_quality.py does; its runs are reused and resumed);
- long, answers written elsewhere, right = people found it supported by its passages:
  LFQA-Verification (the settings where the model saw the passages; by setting),
  AttributionBench (by source), Factcheck-GPT and WiCE (by hashed question; WiCE has no
  question, so only support reads it and the rule fills the answerability score in).

Every judge reads from the packaged 1.5B. For each set held out, every rule's thresholds and
weights are fitted on the other sets alone, weighting each set equally, to show at least
RIGHT_SHOWN_AIM of the right answers on average over them, then as few wrong ones as possible;
the held-out set reports answers shown, wrong among shown as a multiple of showing every
answer (95% bootstrap interval) and right answers shown, and the spread over its groups.
A last table bounds each set: every combination fitted, and thresholded to show 70% of the
right answers, on that set itself (optimistic: where even this misses 0.6x, no weighting of
these judges can meet the target there). `--frame-out F` keeps every judged answer (scores,
label, texts) as JSON lines, for studying features without the models.
`--write pre_answer+support` stores that rule fitted on every set in
ragshield/assets/grounded_rule.json, the rule the package ships (ragshield/policies/answer_rule.py).
"""

from __future__ import annotations

import json
import sys
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_quality import dataset_samples, quality_run, sample_groups  # noqa: E402
from bench_report import QUALITY_MD, bench_parser, bench_settings, publish, stamp  # noqa: E402
from bench_support import draw, lfqa_rows, read_rows, sample_of  # noqa: E402
from ragshield.claims import split_claims  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.evaluation import run_tables  # noqa: E402
from ragshield.judges.judge_readers import JudgeReaders  # noqa: E402
from ragshield.judges.registry import make_judge  # noqa: E402
from ragshield.llm.factory import make_reader  # noqa: E402
from ragshield.metrics.decision_view import shown_answers  # noqa: E402
from ragshield.metrics.stacked import NotEnoughLabels  # noqa: E402
from ragshield.policies.answer_rule import RIGHT_SHOWN_AIM, fit_answer_rule  # noqa: E402
from ragshield.policies.rule_figures import (RULE_FILE, HeldOut, Spread,  # noqa: E402
                                             read_held_out)
from ragshield.services.runs.llm_grading import configured_grader  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.types import Sample  # noqa: E402

READER = "qwen-1.5b"
JUDGES = ("pre_answer", "support", "p_true")  # pre_answer first: it reads the shared prefix
SHORT = ("squad2-part-a", "clapnq", "nq-open", "halueval")
LONG = ("lfqa", "attributionbench", "factcheck-gpt", "wice")
HASHED_GROUPS = 6
SHORT_WORDS = (4, 8)  # where a length-aware rule splits: a phrase, or a short sentence
RESAMPLES = 1000


def _hashed(text: str) -> str:
    return f"group {zlib.crc32(text.encode()) % HASHED_GROUPS}"


def short_set(store, settings: Settings, name: str, count: int, data_dir: Path,
              grader, model: str | None) -> pd.DataFrame:
    """One row per sample of bench_quality's run of `name` answered by `model` (None: the
    configured one): the judges' scores, right, the answer's words, group."""
    run_id = quality_run(store, settings, name, count, ["trivial", *JUDGES], model=model,
                         judge_model=READER, data_dir=data_dir)
    tables = run_tables(store, run_id, grader=grader)
    verdicts, samples = tables.verdicts, tables.samples.set_index("sample_id")
    scores = verdicts.pivot_table(index="sample_id", columns="judge", values="score",
                                  aggfunc="first", dropna=False)
    truth = verdicts.drop_duplicates("sample_id").set_index("sample_id")
    public = dataset_samples(data_dir, name)
    groups = sample_groups(public)
    frame = pd.DataFrame({judge: scores[judge] for judge in JUDGES}).reindex(truth.index)
    frame["good"] = (truth["answer_correct"] & truth["passages_support"]).astype(bool)
    frame["words"] = [claim_words(samples.at[s, "answer"], bool(samples.at[s, "refusal"]))
                      for s in frame.index]
    frame["group"] = [groups[str(s)] for s in frame.index]
    frame["set"] = name
    by_id = {s.id: s for s in public}
    frame["texts"] = [_texts(by_id[str(s)], samples.at[s, "answer"]) for s in frame.index]
    return frame.reset_index(drop=True)


def long_rows(folder: Path, name: str, args) -> tuple[list[dict[str, Any]], Callable]:
    """The drawn rows of a long set and the function naming a row's group."""
    if name == "lfqa":
        return lfqa_rows(folder, args.answers, args.seed), lambda r: r["meta"]["setting"]
    if name == "attributionbench":
        source = (lambda r: r["meta"]["src_dataset"])
        return draw(read_rows(folder / "attributionbench.jsonl"), source, args.per_source,
                    args.seed), source
    count = args.claims if name == "factcheck-gpt" else args.wice
    group = (lambda r: _hashed(r["question"] or r["id"]))
    rows = read_rows(folder / f"{name.replace('-', '_')}.jsonl")
    return draw(rows, lambda r: "all", count, args.seed), group


def long_set(folder: Path, name: str, args, llm, judges) -> pd.DataFrame:
    """One row per drawn answer: the judges' scores (answerability only where there is a
    question), right = people's label, group."""
    rows, group = long_rows(folder, name, args)
    records = []
    for number, row in enumerate(rows, start=1):
        sample, answer = sample_of(row)
        record = {"good": bool(row["label"]), "group": group(row), "set": name,
                  "words": claim_words(answer.text, answer.refusal),
                  "texts": _texts(sample, answer.text)}
        for judge in judges:
            if judge.name != "support" and not sample.question.strip():
                continue
            record[judge.name] = judge.judge(sample, answer, llm).score
        records.append(record)
        if number % 10 == 0:
            print(f"  {name}: {number}/{len(rows)} judged", flush=True)
    return pd.DataFrame(records).reindex(columns=[*JUDGES, "good", "words", "group", "set",
                                                  "texts"])


def _texts(sample: Sample, answer: str | None) -> dict[str, Any]:
    """What was judged, kept in `--frame-out` for studying features without the models."""
    return {"question": sample.question, "answer": answer,
            "passages": [p.text for p in sample.passages]}


@dataclass(frozen=True)
class Candidate:
    name: str
    fit: Callable[[pd.DataFrame], Callable[[pd.DataFrame], np.ndarray]]  # train -> keep of


def _fixed(judge: str, threshold: float) -> Callable:
    return lambda train: (lambda test: test[judge].fillna(-1).to_numpy() >= threshold)


def _both_fixed(thresholds: dict[str, float]) -> Callable:
    def keep(test: pd.DataFrame) -> np.ndarray:
        return np.all([test[j].isna().to_numpy() | (test[j].to_numpy() >= t)
                       for j, t in thresholds.items()], axis=0)
    return lambda train: keep


def _fitted(judges: tuple[str, ...]) -> Callable:
    def fit(train: pd.DataFrame) -> Callable[[pd.DataFrame], np.ndarray]:
        rule = fit_answer_rule(train, judges)
        return lambda test: rule.keep_frame(test)
    return fit


def _by_length(judges: tuple[str, ...], short_words: int) -> Callable:
    """One rule fitted on the answers of at most `short_words` claim words, one on the
    longer ones; each answer decided by the rule of its length."""
    def fit(train: pd.DataFrame) -> Callable[[pd.DataFrame], np.ndarray]:
        short = train["words"] <= short_words
        rules = (fit_answer_rule(train[short], judges), fit_answer_rule(train[~short], judges))

        def keep(test: pd.DataFrame) -> np.ndarray:
            out, brief = np.zeros(len(test), bool), (test["words"] <= short_words).to_numpy()
            for rule, rows in zip(rules, (brief, ~brief)):
                if rows.any():
                    out[rows] = rule.keep_frame(test[rows])
            return out
        return keep
    return fit


def claim_words(text: str | None, refusal: bool = False) -> int:
    """Words of the answer's claims (claims.py): what a rule by length reads."""
    return 0 if refusal or not text else sum(len(c.text.split()) for c in split_claims(text))


def candidates() -> list[Candidate]:
    options = JudgeReaders(every=READER).options()
    own = {j: make_judge(j, Settings(), **options.get(j, {})).threshold for j in JUDGES}
    return [
        Candidate("show every answer", lambda train: (lambda test: np.ones(len(test), bool))),
        Candidate(f"pre_answer >= {own['pre_answer']:.2f} (the default before grounded)",
                  _fixed("pre_answer", own["pre_answer"])),
        Candidate(f"support >= {own['support']:.2f}", _fixed("support", own["support"])),
        Candidate("pre_answer and p_true, each at its own threshold",
                  _both_fixed({"pre_answer": own["pre_answer"], "p_true": own["p_true"]})),
        Candidate("pre_answer and support, each at its own threshold",
                  _both_fixed({"pre_answer": own["pre_answer"], "support": own["support"]})),
        Candidate("fitted: pre_answer + support", _fitted(("pre_answer", "support"))),
        Candidate("fitted: pre_answer + support + p_true",
                  _fitted(("pre_answer", "support", "p_true"))),
        Candidate("fitted: support alone", _fitted(("support",))),
        *[Candidate(f"fitted by length (<= {w} words or more): pre_answer + support",
                    _by_length(("pre_answer", "support"), w)) for w in SHORT_WORDS],
        *[Candidate(f"fitted by length (<= {w} words or more): pre_answer + support + p_true",
                    _by_length(("pre_answer", "support", "p_true"), w)) for w in SHORT_WORDS],
    ]


def _times(keep: np.ndarray, good: np.ndarray) -> float:
    base = shown_answers(np.ones_like(keep), good).wrong_shown
    return shown_answers(keep, good).wrong_shown / base if base else np.nan


def interval(keep: np.ndarray, good: np.ndarray, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    draws = [_times(keep[i], good[i])
             for i in rng.integers(0, len(keep), size=(RESAMPLES, len(keep)))]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return float(low), float(high)


def held_out(frame: pd.DataFrame, rules: list[Candidate]) -> list[dict[str, Any]]:
    """Each set decided by each rule fitted on the other sets."""
    rows = []
    for name in frame["set"].unique():
        test, train = frame[frame["set"] == name], frame[frame["set"] != name]
        good = test["good"].to_numpy(bool)
        for rule in rules:
            keep = rule.fit(train)(test)
            shown = shown_answers(keep, good)
            by_group = [_times(keep[(test["group"] == g).to_numpy()],
                               good[(test["group"] == g).to_numpy()])
                        for g in sorted(test["group"].unique())]
            by_group = [t for t in by_group if not np.isnan(t)]
            rows.append({"set": name, "rule": rule.name, "samples": len(test),
                         "wrong_all": shown_answers(np.ones_like(keep), good).wrong_shown,
                         "shown": shown.shown, "wrong_shown": shown.wrong_shown,
                         "times": _times(keep, good), "interval": interval(keep, good),
                         "right_shown": shown.right_shown, "groups": by_group})
    return rows


CEILING_JUDGES = (("pre_answer",), ("support",), ("p_true",), ("pre_answer", "support"),
                  ("pre_answer", "support", "p_true"))


def ceilings(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """What each set allows at best: each combination fitted, and its threshold set to show
    70% of the right answers, on the set itself (nothing held out, so an optimistic bound).
    Where even this misses 0.6x, no weighting of these judges meets the target there."""
    rows = []
    for name in frame["set"].unique():
        test = frame[frame["set"] == name]
        good = test["good"].to_numpy(bool)
        for judges in CEILING_JUDGES:
            if test[list(judges)].isna().all().any():
                continue  # a judge that gave no score here (WiCE has no question)
            try:
                keep = fit_answer_rule(test, judges, aim=0.7).keep_frame(test)
            except NotEnoughLabels:
                continue
            rows.append({"set": name, "judges": "+".join(judges), "times": _times(keep, good),
                         "right_shown": shown_answers(keep, good).right_shown})
    return rows


def ceiling_table(rows: list[dict[str, Any]]) -> list[str]:
    columns = ["+".join(j) for j in CEILING_JUDGES]
    lines = ["| set | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = {r["judges"]: r for r in rows if r["set"] == name}
        cells = [f"{mine[c]['times']:.2f} ({mine[c]['right_shown']:.0%})" if c in mine else "-"
                 for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def meets(row: dict[str, Any]) -> bool:
    return row["times"] <= 0.6 and row["right_shown"] >= 0.7


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| set (held out) | decided by | answers shown | wrong among shown (keep-all) | "
             "x keep-all [95%] | by group: median [lowest, highest] | right answers shown | "
             "target |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        spread = (f"{np.median(row['groups']):.2f} [{min(row['groups']):.2f}, "
                  f"{max(row['groups']):.2f}]" if row["groups"] else "-")
        lines.append(f"| {row['set']} ({row['samples']}) | {row['rule']} | {row['shown']:.0%} | "
                     f"{row['wrong_shown']:.0%} ({row['wrong_all']:.0%}) | {row['times']:.2f} "
                     f"[{row['interval'][0]:.2f}, {row['interval'][1]:.2f}] | {spread} | "
                     f"{row['right_shown']:.0%} | {'met' if meets(row) else '-'} |")
    return lines


def summary(rows: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    lines = ["| decided by | sets meeting the target | x keep-all: median set [lowest, highest] "
             "| right answers shown: median set [lowest, highest] |", "|---|---|---|---|"]
    data = {}
    for rule in dict.fromkeys(r["rule"] for r in rows):
        mine = [r for r in rows if r["rule"] == rule]
        times = [r["times"] for r in mine if not np.isnan(r["times"])]  # nan: shows nothing
        right = [r["right_shown"] for r in mine]
        met = sum(meets(r) for r in mine)
        blank = len(mine) - len(times)
        spread = (f"{np.median(times):.2f} [{min(times):.2f}, {max(times):.2f}]" if times
                  else "-") + (f"; nothing shown on {blank} set(s)" if blank else "")
        lines.append(f"| {rule} | {met} of {len(mine)} | {spread} | {np.median(right):.0%} "
                     f"[{min(right):.0%}, {max(right):.0%}] |")
        data[rule] = {"met": met, "times": times, "right_shown": right}
    return lines, data


def held_out_figures(data: dict[str, Any], written: str, baseline: str,
                     before: HeldOut) -> HeldOut:
    """The written rule's figures over the held-out sets (the reason the faces show,
    policies/rule_figures.py), beside the baseline judge's; the short-answer floor's figures
    stay those of `before` (bench_short_answers.py --fit measures them)."""
    def spread(values: list[float]) -> Spread:
        return Spread(float(np.median(values)), float(min(values)), float(max(values)))

    mine = data[written]
    return replace(before, sets=len(mine["right_shown"]), times=spread(mine["times"]),
                   right_shown=spread(mine["right_shown"]), baseline=baseline.split()[0],
                   baseline_right_shown=float(np.median(data[baseline]["right_shown"])))


def main() -> None:
    parser = bench_parser(__doc__, "default_rule.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--short", type=int, default=80, help="samples per short set")
    parser.add_argument("--per-source", type=int, default=14, help="AttributionBench claims "
                                                                    "per source")
    parser.add_argument("--answers", type=int, default=48, help="LFQA-Verification answers")
    parser.add_argument("--claims", type=int, default=48, help="Factcheck-GPT claims")
    parser.add_argument("--wice", type=int, default=32, help="WiCE claims")
    parser.add_argument("--sets", default=",".join((*SHORT, *LONG)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="the packaged model answering the short "
                                                      "sets (default: the configured one)")
    parser.add_argument("--frame-out", type=Path, default=None,
                        help="write every judged answer (scores, label, set, group, texts) "
                             "here as JSON lines")
    parser.add_argument("--write", metavar="JUDGES", default="",
                        help=f"store the rule fitting these judges' scores (e.g. "
                             f"pre_answer+support), fitted on every set, in {RULE_FILE.name}")
    args = parser.parse_args()
    settings = bench_settings("bench_default_rule.db")
    store = open_store(settings.database_url)
    started, load = time.time(), psutil.getloadavg()[0]
    sets = args.sets.split(",")
    frames = []
    grader = configured_grader(settings, store)
    for name in (s for s in SHORT if s in sets):
        frames.append(short_set(store, settings, name, args.short, args.data_dir, grader,
                                args.model))
        print(f"{name}: {len(frames[-1])} samples", flush=True)
    llm = make_reader(settings, READER, store=store)
    options = JudgeReaders(every=READER).options()
    judges = [make_judge(name, settings, **options.get(name, {})) for name in JUDGES]
    for name in (s for s in LONG if s in sets):
        frames.append(long_set(args.data_dir / "faithfulness", name, args, llm, judges))
        print(f"{name}: {len(frames[-1])} answers", flush=True)
    frame = pd.concat(frames, ignore_index=True)
    if args.frame_out:
        frame.to_json(args.frame_out, orient="records", lines=True)
    rows = held_out(frame, candidates())
    summary_lines, data = summary(rows)
    bounds = ceilings(frame)
    notes = (f"{len(frame)} answers of {len(frames)} sets, each set decided by rules fitted on "
             f"the other sets alone (each set weighted equally, thresholds set to show "
             f"{RIGHT_SHOWN_AIM:.0%} of the right answers on average over them); target: "
             f"wrong among shown <= 0.6x keep-all with >= 70% of the right answers "
             f"shown. Judges read by {READER}; short sets answered by "
             f"{args.model or 'the configured model'}. "
             f"Load average (1 min) at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{(time.time() - started) / 60:.0f} min.")
    body = "\n".join(["Summary over the held-out sets:", "", *summary_lines, "",
                      "Each set held out:", "", *table(rows), "",
                      "What each set allows at best: x keep-all (right answers shown) when the "
                      "combination is fitted, and its threshold set to show 70% of the right "
                      "answers, on that set itself. Nothing is held out, so these are "
                      "optimistic; '-': a judge gave no score there, or under 20 answers of a "
                      "kind to fit.", "", *ceiling_table(bounds)])
    command = "python scripts/bench_default_rule.py " + " ".join(sys.argv[1:])
    publish("Default decision rule, each set held out", command, notes, body,
            {"summary": data, "rows": rows, "ceilings": bounds}, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)
    if args.write:
        judges = args.write.split("+")
        rule = fit_answer_rule(frame, judges)
        figures = held_out_figures(data, f"fitted: {' + '.join(judges)}",
                                   candidates()[1].name, read_held_out())
        body = {**rule.to_dict(), "held_out": {**figures.to_dict(),
                                                "measured": stamp(), "command": command}}
        RULE_FILE.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RULE_FILE}")


if __name__ == "__main__":
    main()
