"""Benchmark the learned judge (docs/METHODS.md 4.13, kind signals) where it was not tuned:
nested grouped cross-validation on SQuAD 2.0 part A (leave one of its 8 articles out) and on
ClapNQ (its titles hashed into 8 groups), a learning curve, and a transfer matrix (trained
on one dataset, measured on the other); with --cross-encoder, kind cross-encoder by the same
folds (one fine-tuning per fold). Prints the tables and appends them to
docs/QUALITY.md.

    python scripts/bench_trained_judge.py --data-dir DIR [--reads pre_answer]
        [--judge-model qwen-1.5b] [--reads-per-group 50] [--reads-on squad2-part-a]
        [--answers 200 --answer-reads token_prob,p_true]
        [--cross-encoder [--epochs 2] [--encoder-labels N]]

Each figure is QPP PR-AUC (does P(answerable) rank the questions the passages answer first):
the median over the held-out folds with the lowest and highest fold, and the pooled
out-of-fold figure with a 95% bootstrap interval, beside keep-all (the share answerable).
Hard negatives (judges/hard_negatives.py) are made from the training folds' answerable
questions only and never scored. With --reads, the LLM's reads (e.g. pre_answer,p_true) are
taken by the packaged reader on a balanced subset (--reads-per-group questions of each group,
half answerable), all of a question's reads one after the other so that they share its cached
passages, and cached in the cache directory; that subset's rows compare each read alone, the
signals alone, the signals with each read and, with several reads, with all of them. With
--answers N, N balanced questions of each dataset are answered by the configured model (a run
kept in the cache directory's answers.db, resumed when it exists) and the AwF target is
measured the same way: is the answer right (by the matcher or the configured model as grader)
and supported (an answer to a question flagged unanswerable is wrong); its reads
(--answer-reads) are read by --judge-model. The figures need the public sets
(--data-dir, required).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_quality import DATA_DIR_HELP, DATASETS, quality_run, sample_groups  # noqa: E402
from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from ragshield.config import TRAINING_EPOCHS, Settings  # noqa: E402
from ragshield.datasets.registry import load_dataset  # noqa: E402
from ragshield.judges.hard_negatives import hard_negatives  # noqa: E402
from ragshield.judges.learned import (Extra, area, fit_final, folds_of, grouped_cv,  # noqa: E402
                                      log_odds)
from ragshield.judges.registry import make_judge  # noqa: E402
from ragshield.judges.signals import QUESTION_SIGNALS, SignalReader  # noqa: E402
from ragshield.judges.trained import feature_names, feature_rows  # noqa: E402
from ragshield.judges.training import (Example, load_base, pair_texts, predict,  # noqa: E402
                                       train_cross_encoder)
from ragshield.llm.factory import make_llm, make_reader  # noqa: E402
from ragshield.metrics.decision_view import shown_answers  # noqa: E402
from ragshield.refusal import is_refusal  # noqa: E402
from ragshield.retrieval.embeddings import packaged_embedding_path  # noqa: E402
from ragshield.services.learning.judge_examples import answer_examples  # noqa: E402
from ragshield.services.learning.judge_training import held_out_metrics  # noqa: E402
from ragshield.services.runs.llm_grading import configured_grader  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.types import Answer  # noqa: E402

CURVE = (100, 200, 400, 800, 1600)
CURVE_SEEDS = 3
TIMED = 50  # samples timed one at a time for the cost of the signals
TARGET_SQUAD, TARGET_CLAPNQ = 0.75, 0.80


def _code_digest() -> str:
    """What the cached signals depend on: the code that computes them."""
    digest = hashlib.sha256()
    for module in ("signals.py", "hard_negatives.py"):
        digest.update((ROOT / "ragshield" / "judges" / module).read_bytes())
    return digest.hexdigest()[:12]


def _timed_ms(reader: SignalReader, samples: list, count: int = TIMED) -> float:
    """Median ms to read one sample's signals alone (as the judge does), over `count`."""
    seconds = []
    for sample in random.Random(0).sample(samples, min(count, len(samples))):
        started = time.perf_counter()
        reader.read([sample])
        seconds.append(time.perf_counter() - started)
    return 1000 * float(np.median(seconds))


class Corpus:
    """One dataset's samples with their signals, labels, groups and hard negatives; the
    signals are cached in the cache directory until the code that computes them changes."""

    def __init__(self, name: str, path: Path, reader: SignalReader, cache_dir: Path) -> None:
        self.name = name
        self.samples = list(load_dataset(path))
        group_of = sample_groups(self.samples)
        self.groups = np.asarray([group_of[s.id] for s in self.samples], dtype=object)
        self.labels = np.asarray([bool(s.answerable) for s in self.samples])
        made = hard_negatives(self.samples, lambda s: group_of[s.id])
        cached = cache_dir / f"signals-{name}-{len(self.samples)}-{_code_digest()}.npz"
        if cached.exists():
            stored = np.load(cached)
            self.rows, self.made_rows = stored["rows"], stored["made"]
        else:
            self.rows, self.made_rows = reader.read(self.samples), reader.read(made)
            cached.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cached, rows=self.rows, made=self.made_rows)
        self.ms_per_sample = _timed_ms(reader, self.samples)
        self.made_groups = np.asarray([group_of[m.id.split("#")[0]] for m in made], dtype=object)
        self.made_kinds = [m.id.split("#")[1] for m in made]
        self.made_sources = [m.id.split("#")[0] for m in made]

    def extra(self, keep: np.ndarray | None = None) -> Extra:
        keep = np.ones(len(self.made_rows), bool) if keep is None else keep
        return Extra(self.made_rows[keep], np.zeros(int(keep.sum()), bool), self.made_groups[keep])


def _figure(cv_areas: list[float], keep_all: list[float], pooled: dict) -> dict:
    low, high = pooled["pr_auc_interval"]
    return {"median": float(np.median(cv_areas)), "min": float(min(cv_areas)),
            "max": float(max(cv_areas)), "folds": len(cv_areas),
            "keep_all": float(np.median(keep_all)), "pooled": pooled["pr_auc"],
            "pooled_interval": [low, high], "n": pooled["n"]}


def grouped_figure(rows, labels, groups, features, extra=None) -> dict:
    """The figure of nested grouped CV, with the out-of-fold scores under "out_of_fold"."""
    cv = grouped_cv(rows, labels, groups, features, extra)
    scored = ~np.isnan(cv.out_of_fold)
    figure = _figure(cv.fold_areas, cv.fold_keep_all,
                     held_out_metrics(cv.out_of_fold[scored], labels[scored]))
    return {**figure, "out_of_fold": cv.out_of_fold}


def score_figure(scores, labels, groups) -> dict:
    """A fixed score (an LLM read alone) measured by the same folds."""
    folds = folds_of(groups)
    areas, keep_all = [], []
    for fold in np.unique(folds):
        found = area(scores[folds == fold], labels[folds == fold])
        if found is not None:
            areas.append(found)
            keep_all.append(float(labels[folds == fold].mean()))
    return _figure(areas, keep_all, held_out_metrics(scores, labels))


def learning_curve(corpus: Corpus, size: int, with_negatives: bool) -> float | None:
    """Median over held-out folds and seeds of PR-AUC when `size` labels of the other folds
    teach the model (hard negatives made from those labels' answerable questions only)."""
    folds = folds_of(corpus.groups)
    found = []
    for fold in np.unique(folds):
        pool = np.flatnonzero(folds != fold)
        if len(pool) < size:
            return None
        for seed in range(CURVE_SEEDS):
            chosen = np.asarray(sorted(random.Random(seed).sample(list(pool), size)))
            extra = None
            if with_negatives:
                sources = {corpus.samples[i].id for i in chosen if corpus.labels[i]}
                made_from = np.asarray([s in sources for s in corpus.made_sources])
                extra = corpus.extra(made_from)
            model = fit_final(corpus.rows[chosen], corpus.labels[chosen],
                              corpus.groups[chosen], QUESTION_SIGNALS, extra)
            held = folds == fold
            value = area(model.probability(corpus.rows[held]), corpus.labels[held])
            if value is not None:
                found.append(value)
    return float(np.median(found))


def transfer(train: Corpus, test: Corpus, with_negatives: bool) -> dict:
    model = fit_final(train.rows, train.labels, train.groups, QUESTION_SIGNALS,
                      train.extra() if with_negatives else None)
    return held_out_metrics(model.probability(test.rows), test.labels)


def encoder_by_fold(corpus: Corpus, epochs: int, cap: int | None) -> dict:
    """Kind cross-encoder (the packaged MiniLM fine-tuned, as `judges train --kind
    cross-encoder` does) measured by the same held-out folds: one fine-tuning per fold on the
    other folds' labels (at most `cap` of them, drawn at random), scoring the held-out
    fold."""
    folds = folds_of(corpus.groups)
    examples = [Example(s.id, *pair_texts(s), bool(label), str(group))
                for s, label, group in zip(corpus.samples, corpus.labels, corpus.groups)]
    scores = np.full(len(examples), np.nan)
    areas, keep_all, seconds = [], [], []
    for fold in np.unique(folds):
        held, pool = np.flatnonzero(folds == fold), list(np.flatnonzero(folds != fold))
        chosen = sorted(random.Random(0).sample(pool, min(cap or len(pool), len(pool))))
        with tempfile.TemporaryDirectory() as work:
            seconds.append(train_cross_encoder(
                packaged_embedding_path(), [examples[i] for i in chosen], Path(work),
                epochs=epochs))
            tokenizer, model = load_base(Path(work))
            scores[held] = predict(tokenizer, model, [examples[i] for i in held])
        found = area(scores[held], corpus.labels[held])
        if found is not None:
            areas.append(found)
            keep_all.append(float(corpus.labels[held].mean()))
        print(f"  cross-encoder on {corpus.name}: fold {fold} {found} "
              f"({seconds[-1]:.0f} s)", flush=True)
    return {**_figure(areas, keep_all, held_out_metrics(scores, corpus.labels)),
            "train_seconds_median": float(np.median(seconds))}


def llm_reads(corpus: Corpus, settings: Settings, reads: list[str], judge_model: str | None,
              per_group: int, cache_path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(indices of the subset, {read: its scores}): per_group questions of each group, half
    of them answerable, read by each of `reads` on the judges' model, one question after
    the other (its reads share the cached passages); cached by model, judge and id."""
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    model_name = judge_model or "configured"
    chosen = []
    for group in sorted(set(corpus.groups)):
        for answerable in (True, False):
            members = [i for i in np.flatnonzero(corpus.groups == group)
                       if corpus.labels[i] == answerable]
            chosen += random.Random(0).sample(members, min(per_group // 2, len(members)))
    chosen = np.asarray(sorted(chosen))

    def key(read: str, index: int) -> str:
        return f"{model_name}|{read}|{corpus.name}|{corpus.samples[index].id}"

    missing = [i for i in chosen if any(key(read, i) not in cache for read in reads)]
    if missing:
        llm = make_reader(settings, judge_model) if judge_model else make_llm(settings)
        judges = [make_judge(read, settings) for read in reads]
        empty = Answer(answerer="none", text="", raw="", messages=[])
        for count, index in enumerate(missing, 1):
            for read, judge in zip(reads, judges):
                if key(read, index) not in cache:
                    cache[key(read, index)] = judge.judge(corpus.samples[index], empty, llm).score
            if count % 25 == 0 or count == len(missing):
                cache_path.parent.mkdir(parents=True, exist_ok=True)
                cache_path.write_text(json.dumps(cache))
                print(f"  {','.join(reads)} on {corpus.name}: {count} of {len(missing)}",
                      flush=True)
    return chosen, {read: np.asarray([np.nan if cache[key(read, i)] is None
                                      else cache[key(read, i)] for i in chosen])
                    for read in reads}


def answer_figures(corpus: Corpus, settings: Settings, database: str, count: int,
                   reads: list[str], judge_model: str | None,
                   data_dir: Path) -> dict[str, dict]:
    """Target answer_ok (AwF): a run of `count` balanced questions answered by the
    configured model, its judges `reads` read by `judge_model`; the figures of each read
    alone, of the signals alone and of both, by the same grouped folds. Labels as `judges
    train` takes them."""
    store = open_store(database)
    try:
        run_id = quality_run(store, settings, corpus.name, count, reads,
                             judge_model=judge_model or "self", data_dir=data_dir)
        dataset = f"quality-{corpus.name}-{count}"
        examples, _ = answer_examples(store, dataset, run_id, reads,
                                      configured_grader(settings, store))
    finally:
        store.close()
    group_of = dict(zip((s.id for s in corpus.samples), corpus.groups))
    groups = np.asarray([group_of[e.sample.id] for e in examples], dtype=object)
    labels = np.asarray([e.label for e in examples])
    both = feature_rows(SignalReader(), "answer_ok", [e.sample for e in examples],
                        [e.answer for e in examples], [e.reads for e in examples])
    signals = both[:, :len(feature_names("answer_ok", ()))]  # the reads come last
    found = {}
    for index, read in enumerate(reads):
        scores = np.asarray([np.nan if e.reads[index] is None else e.reads[index]
                             for e in examples])
        found[f"{read} alone"] = score_figure(np.nan_to_num(scores, nan=0.5), labels, groups)
    found["signals"] = grouped_figure(signals, labels, groups, feature_names("answer_ok", ()))
    combined = grouped_figure(both, labels, groups, feature_names("answer_ok", reads))
    found[f"signals + {' + '.join(reads)}"] = combined
    # What a person sees when the learned judge decides (out of fold, its threshold 0.5; a
    # refusal shows no answer), beside keep-all (every answer shown).
    refused = np.asarray([is_refusal(e.answer) for e in examples])
    view = shown_answers((combined["out_of_fold"] >= 0.5) & ~refused, labels)
    keep_all = shown_answers(np.ones(len(labels), bool), labels)
    found["decision view"] = {"shown": view.shown, "wrong_shown": view.wrong_shown,
                              "right_shown": view.right_shown,
                              "keep_all_wrong": keep_all.wrong_shown}
    return found


def _plain(figure: dict) -> dict:
    """The figure without its per-sample scores (for the JSON file)."""
    return {key: value for key, value in figure.items() if key != "out_of_fold"}


def _cell(figure: dict) -> str:
    low, high = figure["pooled_interval"]
    return (f"{figure['median']:.3f} [{figure['min']:.3f}, {figure['max']:.3f}] | "
            f"{figure['pooled']:.3f} [{low:.3f}, {high:.3f}] | {figure['keep_all']:.3f}")


def main() -> None:
    parser = bench_parser(__doc__, "trained_judge.json", runs=1)
    parser.add_argument("--data-dir", type=Path, help=DATA_DIR_HELP)
    parser.add_argument("--reads", default="", help="LLM judges read on a subset, e.g. pre_answer")
    parser.add_argument("--judge-model", default=None,
                        help="the model every judge reads from (a packaged name); default, or "
                             "self: the configured model")
    parser.add_argument("--reads-per-group", type=int, default=50)
    parser.add_argument("--reads-on", default=",".join(DATASETS),
                        help="the datasets whose subset is read (comma-separated)")
    parser.add_argument("--answers", type=int, default=0,
                        help="target answer_ok: answer this many questions of each dataset "
                             "(0: skip), judged by --answer-reads")
    parser.add_argument("--answer-reads", default="token_prob,p_true")
    parser.add_argument("--cross-encoder", action="store_true",
                        help="also fine-tune kind cross-encoder once per held-out fold "
                             "(minutes a fold)")
    parser.add_argument("--epochs", type=int, default=TRAINING_EPOCHS,
                        help="the cross-encoder's passes over its training folds")
    parser.add_argument("--encoder-labels", type=int, default=None,
                        help="at most this many training labels a fold for the cross-encoder "
                             "(all of them take about 12 minutes a fold on SQuAD 2.0 here)")
    parser.add_argument("--database", default=None,
                        help="where the answer runs are kept (default: the cache directory)")
    args = parser.parse_args()
    if args.judge_model == "self":
        args.judge_model = None  # the configured model reads every judge
    if args.data_dir is None:
        parser.error(f"--data-dir is {DATA_DIR_HELP}")
    settings = Settings()
    load = os.getloadavg()[0]
    reader = SignalReader()
    cache_dir = settings.cache_dir / "bench"
    corpora = {name: Corpus(name, args.data_dir / file, reader, cache_dir)
               for name, file in DATASETS.items()}
    data: dict = {"grouped": {}, "curve": {}, "transfer": {}, "subset": {}, "answers": {}}
    rows = ["| dataset | model | fold median [min, max] | pooled [95% CI] | keep-all |",
            "|---|---|---|---|---|"]
    read_rows = []
    reads = [r for r in args.reads.split(",") if r]
    for name in [n for n in args.reads_on.split(",") if n and reads]:
        corpus = corpora[name]
        chosen, scores = llm_reads(corpus, settings, reads, args.judge_model,
                                   args.reads_per_group, cache_dir / "llm_reads.json")
        labels, groups, signals = corpus.labels[chosen], corpus.groups[chosen], corpus.rows[chosen]
        reader_name = args.judge_model or "configured model"
        figures = [(f"{read} alone ({reader_name})",
                    score_figure(np.nan_to_num(scores[read], nan=0.5), labels, groups))
                   for read in reads]
        figures.append(("signals (same subset)",
                         grouped_figure(signals, labels, groups, QUESTION_SIGNALS)))
        for combined in [[read] for read in reads] + ([reads] if len(reads) > 1 else []):
            columns = np.column_stack([signals] + [log_odds(scores[r]) for r in combined])
            figures.append((f"signals + {' + '.join(combined)}", grouped_figure(
                columns, labels, groups,
                [*QUESTION_SIGNALS, *(f"{r} (log-odds)" for r in combined)])))
        for label, figure in figures:
            data["subset"][f"{name} {label}"] = _plain(figure)
            read_rows.append(f"| {name} ({len(chosen)} read) | {label} | {_cell(figure)} |")
    for name, corpus in corpora.items():
        for label, extra in (("signals", None), ("signals + hard negatives", corpus.extra())):
            figure = grouped_figure(corpus.rows, corpus.labels, corpus.groups,
                                    QUESTION_SIGNALS, extra)
            data["grouped"][f"{name} {label}"] = _plain(figure)
            rows.append(f"| {name} | {label} | {_cell(figure)} |")
        if args.cross_encoder:
            figure = encoder_by_fold(corpus, args.epochs, args.encoder_labels)
            data["grouped"][f"{name} cross-encoder"] = figure
            labels = (f"at most {args.encoder_labels:,} labels" if args.encoder_labels
                      else "all labels")
            rows.append(f"| {name} | cross-encoder (MiniLM fine-tuned, {labels} of the other "
                        f"folds, {args.epochs} epochs, {figure['train_seconds_median']:.0f} s "
                        f"a fold) | {_cell(figure)} |")
    rows += read_rows
    views = ["| dataset | answers shown | wrong among them | right answers shown |",
             "|---|---|---|---|"]
    if args.answers:
        database = args.database or f"sqlite:///{cache_dir / 'answers.db'}"
        answer_reads = [r for r in args.answer_reads.split(",") if r]
        for name, corpus in corpora.items():
            found = answer_figures(corpus, settings, database, args.answers, answer_reads,
                                   args.judge_model, args.data_dir)
            view = found.pop("decision view")
            data["answers"][f"{name} decision view"] = view
            for label, figure in found.items():
                data["answers"][f"{name} {label}"] = _plain(figure)
                rows.append(f"| {name} ({args.answers} answered) | AwF: {label} | "
                            f"{_cell(figure)} |")
            views.append(f"| {name} | {view['shown']:.1%} | {view['wrong_shown']:.1%} "
                         f"({view['wrong_shown'] / view['keep_all_wrong']:.2f} x keep-all's "
                         f"{view['keep_all_wrong']:.1%}) | {view['right_shown']:.1%} |")
    curve = ["| dataset | labels | signals | signals + hard negatives |", "|---|---|---|---|"]
    for name, corpus in corpora.items():
        for size in CURVE:
            plain, made = (learning_curve(corpus, size, False), learning_curve(corpus, size, True))
            if plain is None:
                continue
            data["curve"][f"{name} {size}"] = {"signals": plain, "hard_negatives": made}
            curve.append(f"| {name} | {size} | {plain:.3f} | {made:.3f} |")
    matrix = ["| trained on | measured on | signals | signals + hard negatives | keep-all |",
              "|---|---|---|---|---|"]
    for train_name, train in corpora.items():
        for test_name, test in corpora.items():
            if train_name == test_name:
                continue
            plain, made = transfer(train, test, False), transfer(train, test, True)
            data["transfer"][f"{train_name} -> {test_name}"] = {"signals": plain,
                                                                "hard_negatives": made}
            matrix.append(f"| {train_name} | {test_name} | {plain['pr_auc']:.3f} "
                          f"[{plain['pr_auc_interval'][0]:.3f}, {plain['pr_auc_interval'][1]:.3f}] "
                          f"| {made['pr_auc']:.3f} | {plain['positive_rate']:.3f} |")
    best = {name: max(((figure["median"], key.split(" ", 1)[1])
                       for table in ("grouped", "subset")
                       for key, figure in data[table].items() if key.startswith(f"{name} ")),
                      default=(float("nan"), "-"))
            for name in corpora}
    targets = "; ".join(
        f"{name} >= {goal}: {'met' if best[name][0] >= goal else 'NOT MET'} "
        f"({best[name][0]:.3f}, {best[name][1]})"
        for name, goal in (("squad2-part-a", TARGET_SQUAD), ("clapnq", TARGET_CLAPNQ)))
    made_counts = {name: {kind: c.made_kinds.count(kind) for kind in sorted(set(c.made_kinds))}
                   for name, c in corpora.items()}
    notes = (f"Kind signals: a logistic regression over {len(QUESTION_SIGNALS)} signals "
             f"({', '.join(QUESTION_SIGNALS)}), C chosen inside each training part by grouped CV. "
             f"Hard negatives made: {made_counts}. Signals of one sample (median of {TIMED}): "
             + ", ".join(f"{c.ms_per_sample:.0f} ms on {n}" for n, c in corpora.items())
             + f". Targets (QPP, fold median of the best model): {targets}. "
             f"Learning curve: median over held-out folds and {CURVE_SEEDS} draws of the labels. "
             f"Load average (1 min) at start {load:.1f}, at end {os.getloadavg()[0]:.1f}.")
    body = "\n".join(rows) + "\n\n" + "\n".join(curve) + "\n\n" + "\n".join(matrix)
    if len(views) > 2:
        body += ("\n\nThe decision view of the learned judge (AwF, signals + reads, out of fold, "
                 "threshold 0.5):\n\n" + "\n".join(views))
    command = "python scripts/bench_trained_judge.py " + " ".join(sys.argv[1:])
    publish("Learned judge (signals) by held-out group", command.strip(), notes, body, data,
            args.json_out, append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
