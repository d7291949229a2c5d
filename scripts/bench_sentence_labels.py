"""People's sentence labels against the support judge, and a threshold fitted on one team's
labels carried to other settings (issue 57). LFQA-Verification's sentence labels (three people
per sentence) go in through the store as people's labels (`labels import --sentences`); the
support judge reads the same answers in a run (`answerer given`). Appends to docs/QUALITY.md.

    python scripts/bench_sentence_labels.py --data-dir DIR [--per-setting 25]

- Per setting (the four where the model saw the passages): the people's agreement among
  themselves (Gwet's AC1, Fleiss' kappa) and the support judge against their majority per
  sentence (AUROC, balanced accuracy at its own mark), with 95% bootstrap intervals.
- Thresholds: on each setting's labelled answers (faithful by the majority of the people's
  answer labels, each following from their sentences: store/sentence_labels.py), the support
  score (the weakest sentence's) threshold with the best balanced accuracy; applied to the
  other settings' answers: the share shown, wrong (unfaithful) among shown against keep-all,
  and the faithful answers shown, pooled with bootstrap intervals and from setting to
  setting.

Every model call is kept in the call cache of a store of its own (bench_sentence_labels.db in
the cache folder): a second run reads no model again.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, bench_settings, publish  # noqa: E402
from bench_support import SEEN_PASSAGES, draw, read_rows  # noqa: E402
from ragshield.evaluation import run_tables  # noqa: E402
from ragshield.pipeline import execute_run, start_run  # noqa: E402
from ragshield.run_config import RunConfig  # noqa: E402
from ragshield.services.annotation.sentence_agreement import sentence_agreement  # noqa: E402
from ragshield.services.data.datasets import import_file  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.sentence_label_transfer import import_sentence_labels  # noqa: E402

RESAMPLES = 1000
DATASET_FIELDS = ("id", "question", "passages", "answer")  # the labels go apart


def fmt(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def answers(store, run_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(support score, faithful by the people's sentence labels) of the run's answers whose
    sentence labels decide the answer."""
    tables = run_tables(store, run_id, truth="human")
    samples = tables.samples.set_index("sample_id")
    support = tables.verdicts[tables.verdicts["judge"] == "support"].set_index("sample_id")
    flags = samples["human_answer_correct"]
    known = [i for i in samples.index if flags[i] is not None and i in support.index
             and support.loc[i, "score"] == support.loc[i, "score"]]
    return (np.array([support.loc[i, "score"] for i in known], dtype=float),
            np.array([bool(flags[i]) for i in known], dtype=bool))


def best_threshold(scores: np.ndarray, faithful: np.ndarray) -> float:
    """The score threshold with the best balanced accuracy (keep = score >= t)."""
    def balanced(t: float) -> float:
        kept = scores >= t
        rates = [kept[faithful].mean() if faithful.any() else 0.5,
                 (~kept[~faithful]).mean() if (~faithful).any() else 0.5]
        return float(np.mean(rates))
    candidates = np.unique(np.concatenate([scores, [np.inf]]))
    return float(max(candidates, key=balanced))


def shown_figures(scores: np.ndarray, faithful: np.ndarray, t: float) -> dict[str, float]:
    kept = scores >= t
    wrong = float((~faithful[kept]).mean()) if kept.any() else float("nan")
    return {"shown": float(kept.mean()), "wrong_among_shown": wrong,
            "keep_all_wrong": float((~faithful).mean()),
            "faithful_shown": float(kept[faithful].mean()) if faithful.any() else float("nan")}


def pooled_interval(scores: np.ndarray, faithful: np.ndarray, t: float, key: str,
                    seed: int = 0) -> list[float] | None:
    rng = np.random.default_rng(seed)
    draws = [shown_figures(scores[rows], faithful[rows], t)[key]
             for rows in rng.integers(0, len(scores), size=(RESAMPLES, len(scores)))]
    draws = [d for d in draws if d == d]  # a resample that shows nothing has no such share
    if not draws:
        return None
    return [float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))]


def share(value: float, interval: list[float] | None = None) -> str:
    if value != value:
        return "-"
    return f"{value:.0%}" + (f" [{interval[0]:.0%}, {interval[1]:.0%}]" if interval else "")


def main() -> None:
    parser = bench_parser(__doc__, "sentence_labels.json", runs=1)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--per-setting", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = bench_settings("bench_sentence_labels.db")
    store = open_store(settings.database_url)
    rows = [r for r in read_rows(args.data_dir / "faithfulness" / "lfqa_verification.jsonl")
            if r["meta"]["setting"] in SEEN_PASSAGES]
    chosen = draw(rows, lambda r: r["meta"]["setting"], args.per_setting, args.seed)
    started, load = time.time(), psutil.getloadavg()[0]
    runs: dict[str, int] = {}
    agreement_lines = ["| setting | answers | sentences | people's AC1 | Fleiss' kappa | "
                       "support AUROC per sentence | balanced accuracy at its mark |",
                       "|---|---|---|---|---|---|---|"]
    data: dict[str, Any] = {"settings": {}}
    with tempfile.TemporaryDirectory() as folder:
        for setting in SEEN_PASSAGES:
            name = f"lfqa-{setting}-{args.per_setting}"  # a size of its own: its samples
            mine = [r for r in chosen if r["meta"]["setting"] == setting]
            path, labels = Path(folder) / f"{setting}.jsonl", Path(folder) / f"{setting}-s.jsonl"
            path.write_text("".join(json.dumps({k: r[k] for k in DATASET_FIELDS}) + "\n"
                                    for r in mine), encoding="utf-8")
            labels.write_text("".join(json.dumps({"id": r["id"], "sentences": r["sentences"]})
                                      + "\n" for r in mine), encoding="utf-8")
            import_file(store, name, path, format="unified")
            import_sentence_labels(store, labels, dataset=name)
            run = start_run(store, RunConfig(dataset=name, answerer="given",
                                             judges=["support"], rule="support"))
            print(f"{name}: judging", flush=True)
            execute_run(store, run, settings, progress=False)
            runs[setting] = run
            agreed = sentence_agreement(store, name, run_id=run)
            judge = agreed.judge
            among = agreed.among
            agreement_lines.append(
                f"| {setting} | {sum(r['meta']['setting'] == setting for r in chosen)} | "
                f"{agreed.sentences} | {fmt(among['gwet_ac1'], among['gwet_ac1_interval'])} | "
                f"{fmt(among['fleiss'])} | {fmt(judge['auroc'], judge['auroc_interval'])} | "
                f"{fmt(judge['balanced_accuracy'], judge['balanced_accuracy_interval'])} |")
            data["settings"][setting] = {"among": among, "judge": judge}
    labelled = {setting: answers(store, run) for setting, run in runs.items()}
    fit_lines = ["| fitted on | threshold | applied to | shown | wrong among shown | "
                 "keep-all wrong | faithful shown |", "|---|---|---|---|---|---|---|"]
    data["transfer"] = []
    for fitted, (scores, faithful) in labelled.items():
        t = best_threshold(scores, faithful)
        others = [s for s in labelled if s != fitted]
        pooled_scores = np.concatenate([labelled[s][0] for s in others])
        pooled_faithful = np.concatenate([labelled[s][1] for s in others])
        figures = shown_figures(pooled_scores, pooled_faithful, t)
        spread = [shown_figures(*labelled[s], t)["wrong_among_shown"] for s in others]
        spread = [w for w in spread if w == w]
        wrong_interval = pooled_interval(pooled_scores, pooled_faithful, t, "wrong_among_shown")
        fit_lines.append(
            f"| {fitted} ({len(scores)} answers) | {t:.2f} | the other three "
            f"({len(pooled_scores)}) | {share(figures['shown'])} | "
            f"{share(figures['wrong_among_shown'], wrong_interval)}"
            + (f"; by setting {share(min(spread))} to {share(max(spread))}" if spread else "")
            + f" | {share(figures['keep_all_wrong'])} | {share(figures['faithful_shown'])} |")
        data["transfer"].append({"fitted_on": fitted, "threshold": t, **figures,
                                 "wrong_interval": wrong_interval, "by_setting": spread})
    body = ("People's sentence labels (imported) against the support judge, per setting:\n\n"
            + "\n".join(agreement_lines) + "\n\nA threshold fitted on one setting's labelled "
            "answers (best balanced accuracy), applied to the other three (95% bootstrap over "
            "answers):\n\n" + "\n".join(fit_lines))
    command = "python scripts/bench_sentence_labels.py " + " ".join(sys.argv[1:])
    notes = (f"LFQA-Verification answers ({args.per_setting} per setting where the model saw "
             f"the passages, drawn half faithful where the setting allows), their sentence "
             f"labels imported as three people's (lfqa-1..3; 'partially' = unsupported); the "
             f"support judge at its defaults read by the packaged 1.5B. An answer is faithful "
             f"by the majority of the people's answer labels, each person's following from "
             f"their sentences (all supported: faithful; one unsupported: not); ties are left "
             f"out. Load average (1 min) at start "
             f"{load:.1f}, at end {psutil.getloadavg()[0]:.1f}; {time.time() - started:.0f} s.")
    publish("Sentence labels of people against the support judge", command, notes, body, data,
            args.json_out, append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
