"""Quality of every judge on real labelled data: a balanced sample of SQuAD 2.0 part A and of
ClapNQ (the full public sets, in the folder given by --data-dir), answered by the default
answerer on the configured model and judged by the chosen judges; per judge AwF PR-AUC and QPP
PR-AUC with 95% bootstrap intervals, the paired gap to keep-all and to the best judge, how many
distinct scores it gave, and seconds per sample. Appends to docs/QUALITY.md.

    python scripts/bench_quality.py --data-dir DIR [--samples 300] [--judges all]
                                    [--datasets squad2-part-a,clapnq] [--model qwen-1.5b]

Each dataset's sample is a run in the configured store (RAGSHIELD_DATABASE_URL), found again
by its name: run the command again after an interruption and it resumes where it stopped.
The stacked judge (out of fold) is added when there are 20 labels of each class.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from ragshield.config import Settings  # noqa: E402
from ragshield.datasets.registry import load_dataset  # noqa: E402
from ragshield.evaluation import run_tables  # noqa: E402
from ragshield.judges.hard_negatives import hard_negatives  # noqa: E402
from ragshield.judges.registry import judge_names  # noqa: E402
from ragshield.metrics.decision_view import shown_answers  # noqa: E402
from ragshield.metrics.precision_recall import pr_auc, pr_curve  # noqa: E402
from ragshield.metrics.ratio import ratio  # noqa: E402
from ragshield.metrics.stacked import fit_stacked_judge  # noqa: E402
from ragshield.policies.stacked_score import STACKED  # noqa: E402
from ragshield.reports.stacking import stack_inputs, with_stacked_judge  # noqa: E402
from ragshield.run_config import RunConfig  # noqa: E402
from ragshield.services.runs.llm_grading import configured_grader  # noqa: E402
from ragshield.services.runs.runs import execute, record_run  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.models import AnswerRow, Run, VerdictRow  # noqa: E402
from ragshield.store.sample_import import import_samples  # noqa: E402
from ragshield.store.samples import has_dataset  # noqa: E402
from ragshield.types import Sample  # noqa: E402

DATASETS = {"squad2-part-a": "squad2_dev_part_a.jsonl", "clapnq": "clapnq_dev.jsonl"}
# Sets whose questions all have their answer in their passages: the unanswerable half of
# their sample is made from their own questions, as SQuAD 2.0's were written by people
# (ragshield.judges.hard_negatives: another passage of the set, a swapped name or number,
# a negation). For the measure across datasets (--across-datasets).
MADE_UNANSWERABLE = {"nq-open": "nq_open_oracle.jsonl", "halueval": "halueval_qa500.jsonl"}
FILES = {**DATASETS, **MADE_UNANSWERABLE}
# Where the full sets come from; the repository holds only the tests' small subsets.
DATA_DIR_HELP = (
    "required: the folder of the public sets squad2_dev_part_a.jsonl (SQuAD 2.0 dev, its "
    "first half, 2,805 questions) and clapnq_dev.jsonl (ClapNQ dev, 600 questions) in "
    "ragshield's unified JSONL (sources and licences: tests/data/README.md; tests/data holds "
    "only small subsets, too small for these figures)")
KEEP_ALL = "trivial"
ACROSS = "tuned on the other datasets"  # in the names of the rules of --across-datasets
RESAMPLES = 1000
MAX_GROUPS = 12  # more titles than this (ClapNQ: one page per question) are hashed into
HASHED_GROUPS = 8  # this many groups


def balanced(samples: Sequence[Sample], count: int, seed: int = 0) -> list[Sample]:
    """`count` samples, half answerable, half not, drawn with `seed`."""
    known = [s for s in samples if s.answerable is not None]
    rng = random.Random(seed)
    halves = [[s for s in known if s.answerable is flag] for flag in (True, False)]
    return [s for half in halves for s in rng.sample(half, min(count // 2, len(half)))]


def sample_groups(samples: Iterable[Sample]) -> dict[str, str]:
    """Sample id -> its group: the title of its first passage (SQuAD 2.0 part A: its 8
    articles); where there are more than MAX_GROUPS titles (ClapNQ, NQ: a page a question),
    or one title for all (HaluEval: none), the title or else the question's own id hashed
    into HASHED_GROUPS groups, so that no title is split across groups. A made sample
    (`<id>#<kind>`) counts in its source's group by id."""
    keys = {s.id: (s.passages[0].title or "") if s.passages else "" for s in samples}
    if 1 < len(set(keys.values())) <= MAX_GROUPS:
        return keys
    return {i: f"group {zlib.crc32((t or i.split('#')[0]).encode()) % HASHED_GROUPS}"
            for i, t in keys.items()}


def dataset_samples(data_dir: Path, name: str) -> list[Sample]:
    """The whole public set `name`; for a set of answerable questions only, with as many
    made unanswerable ones (`hard_negatives`, each in its source's group)."""
    samples = list(load_dataset(data_dir / FILES[name]))
    if name in MADE_UNANSWERABLE:
        groups = sample_groups(samples)
        samples += hard_negatives(samples, lambda s: groups[s.id])
    return samples


def quality_run(store, settings: Settings, name: str, count: int, judges: list[str],
                model: str | None = None, judge_model: str | None = None, *,
                data_dir: Path) -> int:
    """The run of this benchmark's settings (resumed when it exists), executed to the end;
    `model` a packaged model's name (None: the configured model); `judge_model` the model
    every judge reads from (None: the default readers, judges/judge_readers.py; "self": the
    answering model); `data_dir` the folder of the public sets."""
    dataset = f"quality-{name}-{count}"
    if not has_dataset(store, dataset):
        import_samples(store, dataset, balanced(dataset_samples(data_dir, name), count))
    run_name = (f"quality {name} {count} {','.join(judges)}" + (f" {model}" if model else "")
                + f" read by {judge_model or 'the default readers'}")
    with store.session() as session:
        run_id = session.scalar(select(Run.id).where(Run.name == run_name).limit(1))
    if run_id is None:
        run_id = record_run(store, settings, RunConfig(dataset=dataset, judges=judges,
                                                       rule="majority", model=model,
                                                       judge_model=judge_model),
                            name=run_name).run_id
    execute(store, settings, run_id, progress=True)
    return run_id


def _area(score: np.ndarray, keep: np.ndarray, truth: np.ndarray,
          support: np.ndarray) -> float:
    """PR-AUC of a scored judge; precision x recall of a hard one (docs/METHODS.md 5.2)."""
    if not np.isnan(score).all():
        return pr_auc(pr_curve(score, truth, support))
    found = np.count_nonzero(keep & truth)
    return float(ratio(found, keep.sum()) * ratio(found, support.sum()))


def _areas(verdicts: pd.DataFrame,
           rows: np.ndarray | None = None) -> dict[str, tuple[float, float]]:
    """judge -> (AwF PR-AUC, QPP PR-AUC) over the samples `rows` (positions; None: all)."""
    out = {}
    for judge, group in verdicts.groupby("judge", sort=False):
        group = group if rows is None else group.iloc[rows]
        score = group["score"].to_numpy(dtype=float)
        keep = group["keep"].to_numpy(dtype=bool)
        correct = group["answer_correct"].to_numpy(bool)
        support = group["passages_support"].to_numpy(bool)
        out[str(judge)] = (_area(score, keep, correct & support, support),
                           _area(score, keep, support, support))
    return out


def judge_quality(verdicts: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per judge: the two areas with 95% percentile intervals, and the paired gaps (the same
    resamples for every judge) to keep-all and to the best judge by AwF PR-AUC."""
    decided = verdicts[verdicts["keep"].notna()]
    samples = sorted(set(decided["sample_id"]))
    # every judge on the same samples, in the same order, so that resamples pair up
    judges = [j for j, g in decided.groupby("judge") if len(g) == len(samples)]
    table = (decided[decided["judge"].isin(judges)]
             .sort_values(["judge", "sample_id"]).reset_index(drop=True))
    point = _areas(table)
    rng = np.random.default_rng(seed)
    draws = [_areas(table, rng.integers(0, len(samples), len(samples))) for _ in range(RESAMPLES)]
    best = max(point, key=lambda j: point[j][0])
    rows = []
    for judge in point:
        awf = np.array([d[judge][0] for d in draws])
        qpp = np.array([d[judge][1] for d in draws])
        gap_all = awf - np.array([d[KEEP_ALL][0] for d in draws]) if KEEP_ALL in point else None
        gap_best = awf - np.array([d[best][0] for d in draws])
        rows.append({
            "judge": judge, "awf_pr_auc": point[judge][0],
            "awf_interval": np.nanpercentile(awf, [2.5, 97.5]).tolist(),
            "qpp_pr_auc": point[judge][1],
            "qpp_interval": np.nanpercentile(qpp, [2.5, 97.5]).tolist(),
            "gap_to_keep_all": None if gap_all is None else np.nanpercentile(
                gap_all, [2.5, 50, 97.5]).tolist(),
            "gap_to_best": np.nanpercentile(gap_best, [2.5, 50, 97.5]).tolist(),
            "distinct_scores": int(table.loc[table["judge"] == judge, "score"].nunique()),
        })
    return pd.DataFrame(rows).sort_values("awf_pr_auc", ascending=False)


def _good(truth: pd.DataFrame) -> np.ndarray:
    return (truth["answer_correct"] & truth["passages_support"]).to_numpy(bool)


def decision_view(verdicts: pd.DataFrame,
                  all_of: Sequence[tuple[str, ...]] = ()) -> list[dict]:
    """Per judge at its own threshold (its keep bit), the majority of the judges (not keep-all,
    nor a stacked judge or a rule tuned across datasets), and rule `all` over each judge set
    of `all_of` (an answer shown when every one of them keeps it): the share of answers
    shown, the share of those wrong, and the share of the right answers shown; keep-all
    first, then by the share wrong."""
    table = verdicts.pivot(index="sample_id", columns="judge", values="keep")
    truth = verdicts.drop_duplicates("sample_id").set_index("sample_id").loc[table.index]
    good = _good(truth)
    keeps = {judge: (table[judge] == True).to_numpy() for judge in table.columns}  # noqa: E712
    decided = {judge: table[judge].notna().to_numpy() for judge in table.columns}
    voters = [judge for judge in keeps if judge != KEEP_ALL
              and not judge.startswith(STACKED) and ACROSS not in judge]
    # As judging.decide: an undecided judge has no vote (it is not a vote to withhold).
    if len(voters) > 1:
        votes = np.sum([keeps[judge] for judge in voters], axis=0)
        deciding = np.sum([decided[judge] for judge in voters], axis=0)
        keeps[f"majority of {len(voters)}"] = votes * 2 > deciding
    for chosen in all_of:
        if all(judge in keeps for judge in chosen):
            deciding = np.sum([decided[judge] for judge in chosen], axis=0)
            withheld = np.any([decided[judge] & ~keeps[judge] for judge in chosen], axis=0)
            keeps[all_of_name(chosen)] = (deciding > 0) & ~withheld
    rows = [{"rule": rule, **asdict(shown_answers(keep, good))} for rule, keep in keeps.items()]
    return sorted(rows, key=lambda r: (r["rule"] != KEEP_ALL, np.nan_to_num(r["wrong_shown"],
                                                                            nan=2.0)))


def all_of_name(judges: Sequence[str]) -> str:
    return f"all of {' + '.join(judges)}"


def decision_lines(rows: list[dict]) -> list[str]:
    keep_all = next((r for r in rows if r["rule"] == KEEP_ALL), None)
    lines = ["| decided by | answers shown | wrong among shown | x keep-all | right answers "
             "shown |", "|---|---|---|---|---|"]
    for row in rows:
        times = (row["wrong_shown"] / keep_all["wrong_shown"]) if keep_all else np.nan
        lines.append(f"| {row['rule']} | {row['shown']:.1%} | {row['wrong_shown']:.1%} | "
                     f"{times:.2f} | {row['right_shown']:.1%} |")
    return lines


def _spread(values: list[float]) -> str:
    values = [v for v in values if not np.isnan(v)]
    if not values:
        return "-"
    return f"{np.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def grouped_quality(verdicts: pd.DataFrame, groups: dict[str, str],
                    all_of: Sequence[tuple[str, ...]] = ()) -> list[dict]:
    """Per judge and rule of the decision view, each figure on each group alone (a group
    never tunes anything: the stacked judge is scored with its group left out): AwF and QPP
    PR-AUC (judges only), and the decision view's share of wrong answers among those shown
    as a multiple of keep-all's, with the share of right answers shown. The table gives the
    median over the groups and its range."""
    decided = verdicts[verdicts["keep"].notna()]
    group_of = decided["sample_id"].astype(str).map(groups)
    per_judge: dict[str, dict[str, list[float]]] = {}
    for _, part in decided.groupby(group_of):
        areas = _areas(part)
        shown = {row["rule"]: row for row in decision_view(part, all_of)}
        base = shown.get(KEEP_ALL, {}).get("wrong_shown", np.nan)
        for judge in shown:
            awf, qpp = areas.get(judge, (np.nan, np.nan))
            figures = per_judge.setdefault(judge, {"awf": [], "qpp": [], "wrong_x": [],
                                                    "right_shown": [], "shown": []})
            figures["awf"].append(awf)
            figures["qpp"].append(qpp)
            figures["wrong_x"].append(shown[judge]["wrong_shown"] / base)
            figures["right_shown"].append(shown[judge]["right_shown"])
            figures["shown"].append(shown[judge]["shown"])
    return [{"judge": judge, "groups": int(group_of.nunique()), **figures}
            for judge, figures in per_judge.items()]


def grouped_lines(rows: list[dict]) -> list[str]:
    lines = ["| judge | AwF PR-AUC | QPP PR-AUC | answers shown | wrong among shown, x keep-all "
             "| right answers shown |", "|---|---|---|---|---|---|"]
    # judges by AwF PR-AUC, then the rules (which have none)
    for row in sorted(rows, key=lambda r: -np.median([v for v in r["awf"] if not np.isnan(v)]
                                                     or [-1.0])):
        lines.append(f"| {row['judge']} | {_spread(row['awf'])} | {_spread(row['qpp'])} | "
                     f"{_spread(row['shown'])} | {_spread(row['wrong_x'])} | "
                     f"{_spread(row['right_shown'])} |")
    return lines


RIGHT_SHOWN_AIM = 0.6  # the aimed threshold shows this share of the right answers fitted on


def _aimed(scores: np.ndarray, good: np.ndarray) -> float:
    """The threshold that keeps RIGHT_SHOWN_AIM of the right answers' scores."""
    return float(np.quantile(scores[good & ~np.isnan(scores)], 1 - RIGHT_SHOWN_AIM))


def across_datasets(tables: dict[str, pd.DataFrame]) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Each dataset's verdicts plus rules tuned on the labels of the other datasets alone
    (nothing tuned on the dataset it decides): a stacked judge fitted there, kept at P >= 0.5
    and at its aimed threshold, and each scored judge at its aimed threshold, where the
    aimed threshold shows RIGHT_SHOWN_AIM of the right answers of those other datasets.
    dataset -> (verdicts with those rules, rule -> its threshold)."""
    inputs = {name: stack_inputs(verdicts) for name, verdicts in tables.items()}
    columns = sorted(set().union(*(features.columns for features, _ in inputs.values())))
    scored = [c for c in columns if c.endswith(":score") and c != f"{KEEP_ALL}:score"]
    out = {}
    for held, (features, truth) in inputs.items():
        others = [inputs[name] for name in inputs if name != held]
        x = pd.concat([f for f, _ in others]).reindex(columns=columns)
        good = np.concatenate([_good(t) for _, t in others])
        model = fit_stacked_judge(x, good)
        held_x = features.reindex(columns=columns)
        stacked = model.predict_proba(held_x)[:, 1]
        thresholds = {f"stacked {ACROSS}, P >= 0.5": (stacked, 0.5),
                      f"stacked {ACROSS}, aimed": (stacked,
                                                   _aimed(model.predict_proba(x)[:, 1], good))}
        for column in scored:
            judge = column.split(":")[0]
            thresholds[f"{judge} aimed {ACROSS}"] = (held_x[column].to_numpy(float),
                                                     _aimed(x[column].to_numpy(float), good))
        rules = [truth.reset_index().assign(judge=rule, score=score, keep=score >= threshold)
                 for rule, (score, threshold) in thresholds.items()]
        out[held] = (pd.concat([tables[held], *rules], ignore_index=True),
                     {rule: threshold for rule, (_, threshold) in thresholds.items()})
    return out


def across_lines(tables: dict[str, pd.DataFrame], groups: dict[str, dict[str, str]],
                 all_of: Sequence[tuple[str, ...]]) -> tuple[list[str], dict]:
    lines, data = [], {}
    for held, (verdicts, thresholds) in across_datasets(tables).items():
        decisions = decision_view(verdicts, all_of)
        grouped = grouped_quality(verdicts, groups[held], all_of)
        aimed = "; ".join(f"{rule.split(' ')[0]} {threshold:.3f}"
                          for rule, threshold in thresholds.items() if "aimed" in rule)
        lines += [f"**{held}**, rules tuned on {', '.join(n for n in tables if n != held)} "
                  f"(aimed thresholds: {aimed}). Pooled:", "", *decision_lines(decisions), "",
                  f"By group ({grouped[0]['groups']} groups): median [lowest, highest].", "",
                  *grouped_lines(grouped), ""]
        data[held] = {"thresholds": thresholds, "decisions": decisions, "grouped": grouped}
    return lines, data


def seconds_per_sample(store, run_id: int) -> dict[str, float]:
    with store.session() as session:
        rows = session.execute(
            select(VerdictRow.judge, func.avg(VerdictRow.seconds))
            .join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
            .where(AnswerRow.run_id == run_id).group_by(VerdictRow.judge)).all()
        answer = session.scalar(select(func.avg(AnswerRow.seconds))
                                .where(AnswerRow.run_id == run_id))
    return {"(base answer)": float(answer or 0), **{j: float(s) for j, s in rows}}


def _fmt(value: float, bounds: list[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _gap(bounds: list[float] | None) -> str:
    return "-" if bounds is None else f"{bounds[1]:+.3f} [{bounds[0]:+.3f}, {bounds[2]:+.3f}]"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"  # the stacked judge makes no call


def main() -> None:
    parser = bench_parser(__doc__, "quality.json", runs=1)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--judges", default="all")
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help=f"of {', '.join(FILES)}; the last {len(MADE_UNANSWERABLE)} have "
                             "no unanswerable questions of their own: half are made. NAME:N "
                             "samples N of that one instead of --samples")
    parser.add_argument("--llm-grader", action="store_true",
                        help="also grade each answer with the model (docs/METHODS.md 2): "
                             "needed where references are long-form, as ClapNQ's")
    parser.add_argument("--model", default=None,
                        help="a packaged model that answers and judges (default: the configured "
                             "one), e.g. qwen-1.5b")
    parser.add_argument("--judge-model", default=None,
                        help="the model every judge reads from, e.g. qwen-1.5b, or self (the "
                             "answering one); default: where the 0.5B answers, pre_answer and "
                             "p_true read from the 1.5B")
    parser.add_argument("--all-of", default="",
                        help="judge sets decided by rule all in the decision view, e.g. "
                             "pre_answer+p_true (comma-separated sets)")
    parser.add_argument("--across-datasets", action="store_true",
                        help="also decide each dataset by a stacked judge fitted on the "
                             "others' labels (three datasets or more)")
    parser.add_argument("--data-dir", type=Path, help=DATA_DIR_HELP)
    args = parser.parse_args()
    all_of = [tuple(part.split("+")) for part in args.all_of.split(",") if part]
    if args.data_dir is None:
        parser.error(f"--data-dir is {DATA_DIR_HELP}")

    settings = Settings()
    store = open_store(settings.database_url)
    judges = judge_names(args.judges)
    if KEEP_ALL not in judges:
        judges = [KEEP_ALL, *judges]
    load_before = os.getloadavg()[0]
    sections, data, tables_by_name, groups_by_name = [], {}, {}, {}
    grader = configured_grader(settings, store) if args.llm_grader else None
    for spec in args.datasets.split(","):
        name, _, count = spec.partition(":")
        run_id = quality_run(store, settings, name, int(count or args.samples), judges, args.model,
                             args.judge_model, data_dir=args.data_dir)
        tables = run_tables(store, run_id, grader=grader)
        groups = sample_groups(dataset_samples(args.data_dir, name))
        tables_by_name[name], groups_by_name[name] = tables.verdicts, groups
        verdicts, stacked_note = with_stacked_judge(tables.verdicts, groups=groups)
        quality = judge_quality(verdicts)
        seconds = seconds_per_sample(store, run_id)
        right = float(tables.samples["answer_correct"].mean())
        lines = [f"**{name}** (run {run_id}, {len(tables.samples)} samples, the answer right "
                 f"{right:.0%} of the time). {stacked_note}", "",
                 "| judge | AwF PR-AUC [95%] | QPP PR-AUC [95%] | AwF gap to keep-all | AwF gap "
                 "to the best | distinct scores | s / sample |", "|---|---|---|---|---|---|---|"]
        for row in quality.itertuples():
            lines.append(f"| {row.judge} | {_fmt(row.awf_pr_auc, row.awf_interval)} | "
                         f"{_fmt(row.qpp_pr_auc, row.qpp_interval)} | {_gap(row.gap_to_keep_all)}"
                         f" | {_gap(row.gap_to_best)} | {row.distinct_scores} | "
                         f"{_seconds(seconds.get(row.judge))} |")
        decisions = decision_view(verdicts, all_of)
        grouped = grouped_quality(verdicts, groups, all_of)
        lines += ["", f"Decision view ({name}, all samples pooled): each judge at its own "
                      "threshold, as a stakeholder sees it.", "", *decision_lines(decisions),
                  "", f"By group ({name}, {grouped[0]['groups']} groups): median over the "
                      "groups [lowest, highest].", "", *grouped_lines(grouped)]
        sections.append("\n".join(lines))
        data[name] = {"run": run_id, "judges": quality.to_dict(orient="records"),
                      "seconds": seconds, "decisions": decisions, "grouped": grouped}
    store.close()
    if args.across_datasets and len(tables_by_name) >= 3:
        lines, data["across_datasets"] = across_lines(tables_by_name, groups_by_name, all_of)
        sections.append("\n".join([
            "**Across datasets**: each dataset decided by rules tuned on the labels of the "
            "others only: a stacked judge fitted there (its features: every judge's score "
            "and keep bit) and each judge at an aimed threshold, the one that shows "
            f"{RIGHT_SHOWN_AIM:.0%} of the right answers of those datasets; beside the "
            "judges at their built-in thresholds.",
            "", *lines]))
    command = (f"python scripts/bench_quality.py --data-dir {args.data_dir}"
               f" --samples {args.samples} --judges {args.judges}"
               f" --datasets {args.datasets}" + (" --llm-grader" if args.llm_grader else "")
               + (f" --model {args.model}" if args.model else "")
               + (f" --judge-model {args.judge_model}" if args.judge_model else "")
               + (f" --all-of {args.all_of}" if args.all_of else "")
               + (" --across-datasets" if args.across_datasets else ""))
    graded = ("answers right by the matcher or the LLM grader" if args.llm_grader
              else "answers right by the matcher")
    notes = (f"Balanced samples ({args.samples} per dataset unless its name says, half "
             "answerable), the default "
             f"answerer and the {args.model or settings.model or settings.backend} model"
             + (f", the judges reading from {args.judge_model}; " if args.judge_model else "; ") +
             f"{graded}. PR-AUC: average precision of the "
             "judge's score (a hard judge: its keep bit) against V (AwF: right and supported) "
             "and against S (QPP: the passages support an answer). Intervals and gaps: 1000 "
             "paired bootstrap resamples of the samples (gaps: median [2.5%, 97.5%]). Load "
             f"average (1 min) at start {load_before:.1f}, at end {os.getloadavg()[0]:.1f}.")
    publish("Judge quality", command, notes, "\n\n".join(sections), data, args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
