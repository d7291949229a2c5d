"""Fit the support probe: a logistic reading of the 1.5B's final hidden state (with its P(yes)
and the claim's word coverage) where the support judge reads a claim, trained on the
licence-clear sets that scripts/read_support_states.py read, and measured on sets it never read.

    python scripts/train_support_probe.py [--states FILE.npz] [--write]

The probe's regularisation is chosen by leaving each training set out in turn; its threshold
is the best balanced accuracy on those left-out readings. Measured beside the support judge's
present score (SENTENCE_FIT: P(yes) and coverage) with the judge's threshold for the 1.5B, on
answers (the least supported claim's score) of every measured set and group. --write saves the
weights (judges/support_probe.py) and the model card.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, publish  # noqa: E402
from bench_support import (auroc_interval, ba_interval, balanced_accuracy,  # noqa: E402
                           best_threshold)
from train_verifier import TRAINING_SETS  # noqa: E402

from ragshield.config import Settings  # noqa: E402
from ragshield.judges.judge_readers import JudgeReaders  # noqa: E402
from ragshield.judges.learned import log_odds  # noqa: E402
from ragshield.judges.support import claim_score  # noqa: E402

STRENGTHS = (0.001, 0.003, 0.01, 0.03, 0.1)


def features(states: dict[str, np.ndarray], rows: np.ndarray, mean: np.ndarray,
             scale: np.ndarray) -> np.ndarray:
    hidden = (states["hidden"][rows].astype(np.float32) - mean) / scale
    p_yes = np.nan_to_num(states["p_yes"][rows], nan=0.5)
    return np.column_stack([hidden, log_odds(p_yes), states["coverage"][rows]])


def fit(states, rows: np.ndarray, strength: float):
    hidden = states["hidden"][rows].astype(np.float32)
    mean, scale = hidden.mean(axis=0), hidden.std(axis=0) + 1e-3
    sets = states["set"][rows]
    weights = {name: 1.0 / np.sum(sets == name) for name in set(sets)}
    model = LogisticRegression(C=strength, max_iter=2000)
    model.fit(features(states, rows, mean, scale), states["label"][rows],
              sample_weight=[weights[name] * len(rows) / len(weights) for name in sets])
    return model, mean, scale


def predict(probe, states, rows: np.ndarray) -> np.ndarray:
    model, mean, scale = probe
    return model.predict_proba(features(states, rows, mean, scale))[:, 1]


def left_out(states, train: np.ndarray, strength: float) -> np.ndarray:
    """Each training claim scored by a probe fitted without its set."""
    scores = np.zeros(len(train))
    sets = states["set"][train]
    for name in set(sets):
        inside = sets == name
        scores[inside] = predict(fit(states, train[~inside], strength), states, train[inside])
    return scores


def by_answer(states, rows: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Answers' labels, least claim scores and groups (LFQA's sentences stay sentences)."""
    answers: dict[str, list[int]] = defaultdict(list)
    for at, row in enumerate(rows):
        key = states["claim"][row] if states["set"][row] == "lfqa_verification" else \
            states["row"][row]
        answers[f"{states['set'][row]}/{key}"].append(at)
    ats = list(answers.values())
    return (np.array([states["label"][rows[a[0]]] for a in ats]),
            np.array([scores[a].min() for a in ats]),
            np.array([states["group"][rows[a[0]]] for a in ats]))


def table(states, rows: np.ndarray, scorings: dict[str, tuple[np.ndarray, float]]
          ) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The table by set and group, and each scoring's AUROC by set."""
    lines = ["| set | group | answers | " + " | ".join(
        f"{name} BA [95%] | {name} AUROC" for name in scorings) + " |",
        "|---|---|---|" + "---|---|" * len(scorings)]
    sets = states["set"][rows]
    summary: dict[str, list[float]] = defaultdict(list)
    aurocs: dict[str, dict[str, float]] = defaultdict(dict)
    for name in sorted(set(sets)):
        inside = rows[sets == name]
        groups = sorted(set(states["group"][inside]))
        for group in ([None] + groups) if len(groups) > 1 else [None]:
            cells = []
            for scoring, (scores, threshold) in scorings.items():
                labels, least, answer_groups = by_answer(states, inside, scores[sets == name])
                if group is not None:
                    labels, least = labels[answer_groups == group], least[answer_groups == group]
                labels = labels.astype(bool)
                if labels.all() or not labels.any():
                    cells.append(f"- ({labels.sum()} of {len(labels)} true) | -")
                    continue
                keep = least >= threshold
                ba = balanced_accuracy(labels, keep)
                low, high = ba_interval(labels, keep)
                auroc = auroc_interval(labels, least)[0]
                cells.append(f"{ba:.3f} [{low:.3f}, {high:.3f}] | {auroc:.3f}")
                if group is None:
                    summary[scoring].append(ba)
                    aurocs[scoring][name] = auroc
            lines.append(f"| {name} | {group or 'all'} | {len(labels)} | " + " | ".join(cells)
                         + " |")
    lines.append("")
    lines += [f"{scoring}: median set balanced accuracy {statistics.median(bas):.3f} "
              f"[{min(bas):.3f}, {max(bas):.3f}]" for scoring, bas in summary.items()]
    return lines, dict(aurocs)


def refit(states, train: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """P(yes) and coverage alone, refitted on the training sets (no hidden state): what the
    probe gains over a new fit of the present reading."""
    def two(rows: np.ndarray) -> np.ndarray:
        p_yes = np.nan_to_num(states["p_yes"][rows], nan=0.5)
        return np.column_stack([log_odds(p_yes), states["coverage"][rows]])
    model = LogisticRegression(max_iter=1000).fit(two(train), states["label"][train])
    return model.predict_proba(two(scored))[:, 1]


def each_set_left_out(states, rows: np.ndarray, strength: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Probe and refit scores of each measured claim by models fitted on every other set
    (the training sets and the other measured ones): does the hidden state carry what
    transfers, given more kinds of claims than the licence-clear sets hold?"""
    everything = np.arange(len(states["label"]))[~np.isnan(states["p_yes"])]
    probe, refitted = np.zeros(len(rows)), np.zeros(len(rows))
    sets = states["set"][rows]
    for name in set(sets):
        inside = sets == name
        others = everything[states["set"][everything] != name]
        probe[inside] = predict(fit(states, others, strength), states, rows[inside])
        refitted[inside] = refit(states, others, rows[inside])
    return probe, refitted


def main() -> None:
    parser = bench_parser(__doc__, "support_probe.json", runs=1)
    parser.add_argument("--states", type=Path,
                        default=Settings().cache_dir / "support_states.npz")
    args = parser.parse_args()
    states = dict(np.load(args.states, allow_pickle=False))
    everything = np.arange(len(states["label"]))
    readable = ~np.isnan(states["p_yes"])
    training = np.isin(states["set"], list(TRAINING_SETS))
    train, measured = everything[training & readable], everything[~training & readable]
    labels = states["label"][train].astype(bool)
    tried = []
    for strength in STRENGTHS:
        scores = left_out(states, train, strength)
        labelled, least, _ = by_answer(states, train, scores)
        tried.append((auroc_interval(labelled.astype(bool), least)[0], strength, scores))
        print(f"C={strength}: left-out AUROC by answer {tried[-1][0]:.3f}", flush=True)
    _, strength, scores = max(tried, key=lambda t: t[0])
    probe = fit(states, train, strength)
    present = np.array([claim_score(p, c) for p, c in zip(states["p_yes"][measured],
                                                           states["coverage"][measured])])
    trained_present = np.array([claim_score(p, c) for p, c in zip(states["p_yes"][train],
                                                                   states["coverage"][train])])
    support_threshold = JudgeReaders(every="qwen-1.5b").options()["support"]["threshold"]
    scorings = {
        "probe": (predict(probe, states, measured), best_threshold(labels, scores)),
        "refit": (refit(states, train, measured),
                  best_threshold(labels, refit(states, train, train))),
        "support": (present, support_threshold),
    }
    lines, aurocs = table(states, measured, scorings)
    every_probe, every_refit = each_set_left_out(states, measured, strength)
    every_lines, every_aurocs = table(states, measured, {
        "probe": (every_probe, 0.5), "refit": (every_refit, 0.5),
        "support": (present, support_threshold)})
    lines += ["", "Fitted on every other set (the training sets and the other measured ones), "
              "each measured set left out in turn (not shippable: it reads sets whose licence "
              "does not say so; it asks whether more kinds of claims would help):", "",
              *every_lines]
    sets = sorted(set(states["set"][train]))
    notes = (f"{len(train)} claims of the licence-clear sets {', '.join(sets)} trained the "
             f"probe (a logistic reading of the 1.5B's final hidden state at the support "
             f"judge's yes/no, with its P(yes) and the claim's word coverage; C={strength} "
             f"chosen by leaving each training set out); {len(measured)} claims of sets it "
             "never read measure it, by answer (the least supported claim's score; "
             "LFQA-Verification by sentence). 'refit': P(yes) and coverage alone, refitted on "
             "the same training claims; 'support': the judge's present score (SENTENCE_FIT) "
             f"at its threshold for the 1.5B ({support_threshold}). Thresholds of probe and "
             "refit: the best balanced accuracy on the training claims (left out, for the "
             f"probe). Support on the training claims, as a check: AUROC "
             f"{auroc_interval(labels, trained_present)[0]:.3f}.")
    command = "python scripts/train_support_probe.py " + " ".join(sys.argv[1:])
    publish("Support probe on the 1.5B's hidden state, held out", command, notes,
            "\n".join(lines), {"strength": strength, "training_claims": len(train),
                               "aurocs": aurocs, "every_other_set_aurocs": every_aurocs},
            args.json_out,
            append=not args.no_append, show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
