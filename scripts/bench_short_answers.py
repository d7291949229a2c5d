"""Short answers judged as the answers to their questions: does the default decision keep a
right short answer and withhold a wrong one whose words are in the passages? Appends to
docs/QUALITY.md.

    python scripts/bench_short_answers.py --data-dir DIR [--per-article 15] [--halueval 40]
                                          [--fit]

- SQuAD 2.0 part A, by article. Each answerable question that has one is judged three times:
  with its gold answer, with a same-passage distractor (the gold answer of another question
  of its passage, the kind of wrong answer whose words are all in the passages) and with the
  default answerer's own answer (right by the matcher or not). The gold answer and the
  distractor come in the same shape, drawn from SHAPES ("Rollo", "Rollo.", "It was Rollo.").
  FIT_ARTICLES are the rows `--fit` fits the short-answer reading and its floor on (SHORT_FIT,
  SHORT_SUPPORT_FLOOR in ragshield/judges/short_answer.py); the report holds them out and
  gives every other article.
- HaluEval (second half): its right answer against its hallucinated one.
- The Normandy answers of issue 56, against the two demo passages.

Every answer goes through `Shield.judge` with the defaults (pre_answer, support and p_true read
by the packaged 1.5B, the `grounded` rule). Per article: AUROC of support, p_true and
pre_answer (gold and right own answers against distractors and wrong own ones) and the shares
the decision keeps; pooled, with 95% bootstrap intervals over questions; the spread over
articles. Every model call is kept in the call cache of a store of its own: a second run
(after `--fit` and pasting its constants) reads no model again.
"""

from __future__ import annotations

import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_report import QUALITY_MD, bench_parser, bench_settings, publish  # noqa: E402
from bench_support import read_rows  # noqa: E402
from ragshield.datasets.demo import DEMO_CORPUS  # noqa: E402
from ragshield.judges.learned import log_odds  # noqa: E402
from ragshield.judges.short_answer import LOGPROB_FLOOR, SHORT_SUPPORT_FLOOR  # noqa: E402
from ragshield.metrics.correctness import is_correct  # noqa: E402
from ragshield.services.shield import Shield  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402

FIT_ARTICLES = ("Steam_engine", "European_Union_law", "Packet_switching", "1973_oil_crisis")
SHAPES = ("{}", "{}.", "It was {}.", "The answer is {}.")
NORMANDY_QUESTION = "Who gave their name to Normandy?"
NORMANDY_PASSAGES = ("squad2-f19a5b45994b", "squad2-c9f56009b144")  # demo corpus ids
NORMANDY_ANSWERS = (("Guy de Lusignan", False), ("Guy de Lusignan.", False),
                    ("It was Guy de Lusignan.", False),
                    ("Guy de Lusignan gave his name to Normandy.", False), ("Rollo.", False),
                    ("King Charles III.", False), ("The Normans", True), ("The Normans.", True))
RESAMPLES = 1000
# The share of the right short answers of FIT_ARTICLES that SHORT_SUPPORT_FLOOR keeps.
SHORT_KEPT_AIM = 0.85


def squad_questions(folder: Path, per_article: int) -> list[dict[str, Any]]:
    """Up to `per_article` answerable questions of each article that have a distractor: a
    gold answer of another question of the same passage, neither inside the other."""
    rows = [r for r in read_rows(folder / "squad2_dev_part_a.jsonl") if r["answerable"]]
    by_passage: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_passage[row["passages"][0]["text"]].append(row["reference_answers"][0])
    rng, chosen = random.Random(0), defaultdict(list)
    for row in rows:
        golds = [g.lower() for g in row["reference_answers"]]
        others = [a for a in by_passage[row["passages"][0]["text"]]
                  if all(a.lower() not in g and g not in a.lower() for g in golds)]
        if others:
            chosen[row["passages"][0]["title"]].append(
                {**row, "distractor": rng.choice(others), "shape": rng.choice(SHAPES)})
    out = []
    for article, questions in sorted(chosen.items()):
        rng.shuffle(questions)
        out += questions[:per_article]
    return out


def passages_of(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A data row's passages as `Shield.judge` takes them: text and title."""
    return [{"text": p["text"], "title": p.get("title")} for p in passages]


def judged(shield: Shield, question: str, passages: list[dict], answer: str) -> dict[str, Any]:
    decision = shield.judge(question, passages, answer)
    verdicts = {v.judge: v for v in decision.verdicts}
    support = verdicts["support"]
    claims = support.details.get("claims") or [{}]
    return {"answer": answer, "kept": decision.kept,
            **{name: v.score for name, v in verdicts.items()},
            "p_yes": claims[0].get("p_yes"), "logprob": claims[0].get("answer_logprob"),
            "aligned": claims[0].get("aligned"),
            "short": "short_answer" in claims[0],
            "marked": claims[0].get("supported")}


def squad_rows(shield: Shield, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for number, row in enumerate(questions, 1):
        passages = passages_of(row["passages"])
        group = row["passages"][0]["title"]
        own = shield.ask(row["question"], passages=passages).answer
        for kind, answer, right in (
                ("gold", row["shape"].format(row["reference_answers"][0]), True),
                ("distractor", row["shape"].format(row["distractor"]), False),
                ("own", own, is_correct(own, row["reference_answers"]))):
            out.append({"group": group, "question": row["question"], "kind": kind,
                        "right": right, **judged(shield, row["question"], passages, answer)})
        if number % 10 == 0:
            print(f"  {number}/{len(questions)} questions", flush=True)
    return out


def halueval_rows(shield: Shield, folder: Path, count: int) -> list[dict[str, Any]]:
    rows = read_rows(folder / "halueval_qa500.jsonl")
    out = []
    for row in rows[len(rows) // 2:][:count]:
        passages = passages_of(row["passages"])
        for kind, answer, right in (("gold", row["reference_answers"][0], True),
                                    ("distractor", row["extra"]["hallucinated_answer"], False)):
            out.append({"group": "HaluEval", "question": row["question"], "kind": kind,
                        "right": right, **judged(shield, row["question"], passages, answer)})
    return out


def fit(rows: list[dict[str, Any]]) -> str:
    """SHORT_FIT, SHORT_FIT_YES_NO and the floor fitted on the short answers of `rows` (the
    floor on the fitted SHORT_FIT's scores: it keeps SHORT_KEPT_AIM of the right ones), with
    the AUROC of each reading alone and of the fit without the alignment, to compare."""
    rows = [r for r in rows if r["short"] and r["p_yes"] is not None]
    labels = np.asarray([r["right"] for r in rows])
    odds = log_odds([r["p_yes"] for r in rows])
    aligned = log_odds([r["aligned"] for r in rows])
    logprob = np.asarray([max(r["logprob"], LOGPROB_FLOOR) for r in rows])
    full = LogisticRegression(C=1.0).fit(np.c_[odds, logprob, aligned], labels)
    alone = LogisticRegression(C=1.0).fit(np.c_[odds, aligned], labels)
    bare = LogisticRegression(C=1.0).fit(np.c_[odds, logprob], labels)
    scores = full.predict_proba(np.c_[odds, logprob, aligned])[:, 1]
    right = np.sort(scores[labels])
    floor = right[int(np.floor((1 - SHORT_KEPT_AIM) * len(right)))]
    without = bare.predict_proba(np.c_[odds, logprob])[:, 1]

    def area(values) -> str:
        return f"{roc_auc_score(labels, values):.3f}"

    weights = ", ".join(f"{w:.2f}" for w in full.coef_[0])
    return (f"fitted on {len(rows)} short answers ({labels.sum()} right); AUROC in sample: "
            f"the fit {area(scores)}, without the alignment {area(without)}, P(yes) "
            f"{area(odds)}, log P(core) {area(logprob)}, the alignment {area(aligned)}, "
            f"p_true {area([r['p_true'] for r in rows])}\n"
            f"SHORT_FIT = ({full.intercept_[0]:.2f}, {weights})\n"
            f"SHORT_FIT_YES_NO = ({alone.intercept_[0]:.2f}, {alone.coef_[0][0]:.2f}, "
            f"{alone.coef_[0][1]:.2f})\n"
            f"SHORT_SUPPORT_FLOOR = {floor:.2f}  # keeps {np.mean(scores[labels] >= floor):.0%} "
            f"of the right, {np.mean(scores[~labels] >= floor):.0%} of the wrong")


def auroc(rows: list[dict[str, Any]], judge: str) -> float | None:
    pairs = [(r["right"], r[judge]) for r in rows if r.get(judge) is not None]
    labels = [label for label, _ in pairs]
    if len(set(labels)) < 2:
        return None
    return float(roc_auc_score(labels, [score for _, score in pairs]))


def kept_share(rows: list[dict[str, Any]], kind: str, right: bool | None = None) -> float | None:
    chosen = [r["kept"] for r in rows if r["kind"] == kind and (right is None
                                                               or r["right"] == right)]
    return float(np.mean(chosen)) if chosen else None


def interval(rows: list[dict[str, Any]], statistic) -> str:
    """The statistic on every row, and its 95% interval over questions resampled."""
    questions = sorted({r["question"] for r in rows})
    by_question = defaultdict(list)
    for row in rows:
        by_question[row["question"]].append(row)
    rng = np.random.default_rng(0)
    values = []
    for _ in range(RESAMPLES):
        drawn = rng.choice(len(questions), len(questions))
        value = statistic([r for i in drawn for r in by_question[questions[i]]])
        if value is not None:
            values.append(value)
    low, high = np.percentile(values, [2.5, 97.5])
    return f"{statistic(rows):.2f} [{low:.2f}, {high:.2f}]"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    header = ("| group | questions | AUROC support | p_true | pre_answer | gold kept | "
              "distractors kept | own right kept | own wrong kept |\n"
              "|---|---|---|---|---|---|---|---|---|")
    groups = defaultdict(list)
    for row in rows:
        groups[row["group"]].append(row)
    lines, data = [header], {}
    for group, members in sorted(groups.items()):
        figures = {"questions": len({r["question"] for r in members}),
                   **{judge: auroc(members, judge) for judge in ("support", "p_true",
                                                                 "pre_answer")},
                   "gold kept": kept_share(members, "gold"),
                   "distractors kept": kept_share(members, "distractor"),
                   "own right kept": kept_share(members, "own", True),
                   "own wrong kept": kept_share(members, "own", False)}
        data[group] = figures
        lines.append(f"| {group} | {figures['questions']} | "
                     + " | ".join("-" if figures[j] is None else f"{figures[j]:.2f}"
                                  for j in ("support", "p_true", "pre_answer")) + " | "
                     + " | ".join(percent(figures[k]) for k in (
                         "gold kept", "distractors kept", "own right kept", "own wrong kept"))
                     + " |")
    squad = [r for r in rows if r["group"] != "HaluEval"]
    pooled = {"support AUROC": interval(squad, lambda rs: auroc(rs, "support")),
              "gold kept": interval(squad, lambda rs: kept_share(rs, "gold")),
              "distractors kept": interval(squad, lambda rs: kept_share(rs, "distractor"))}
    articles = [f for g, f in data.items() if g != "HaluEval"]
    spread = {k: (min(a[k] for a in articles), max(a[k] for a in articles))
              for k in ("gold kept", "distractors kept")}
    lines.append("")
    lines.append(f"SQuAD articles pooled ({len(articles)} articles, 95% bootstrap over "
                 f"questions): support AUROC {pooled['support AUROC']}; gold answers kept "
                 f"{pooled['gold kept']}; distractors kept {pooled['distractors kept']}. "
                 f"From article to article: gold kept {percent(spread['gold kept'][0])} to "
                 f"{percent(spread['gold kept'][1])}, distractors kept "
                 f"{percent(spread['distractors kept'][0])} to "
                 f"{percent(spread['distractors kept'][1])}.")
    return "\n".join(lines), {"groups": data, "pooled": pooled}


def normandy(shield: Shield) -> tuple[str, list[dict[str, Any]]]:
    demo = {row["id"]: row for row in read_rows(DEMO_CORPUS)}
    passages = passages_of([demo[i] for i in NORMANDY_PASSAGES])
    rows = [{**judged(shield, NORMANDY_QUESTION, passages, answer), "right": right}
            for answer, right in NORMANDY_ANSWERS]
    lines = ["| given answer | right | decision | pre_answer | support | p_true | marked |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['answer']} | {'yes' if r['right'] else 'no'} | "
              f"{'keep' if r['kept'] else 'withhold'} | {r['pre_answer']:.2f} | "
              f"{r['support']:.2f} | {r['p_true']:.2f} | "
              f"{'supported' if r['marked'] else 'not supported'} |" for r in rows]
    return "\n".join(lines), rows


def main() -> None:
    parser = bench_parser(__doc__, "short_answers.json")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--per-article", type=int, default=15)
    parser.add_argument("--halueval", type=int, default=40)
    parser.add_argument("--fit", action="store_true",
                        help="print SHORT_FIT and SHORT_SUPPORT_FLOOR fitted on FIT_ARTICLES "
                             "and stop")
    args = parser.parse_args()
    started, load = time.time(), psutil.getloadavg()[0]
    settings = bench_settings("bench_short_answers.db")
    with Shield(settings, open_store(settings.database_url), record=False) as shield:
        questions = squad_questions(args.data_dir, args.per_article)
        fitting = [q for q in questions if q["passages"][0]["title"] in FIT_ARTICLES]
        if args.fit:
            print(fit(squad_rows(shield, fitting)))
            return
        held_out = [q for q in questions if q["passages"][0]["title"] not in FIT_ARTICLES]
        rows = squad_rows(shield, held_out) + halueval_rows(shield, args.data_dir,
                                                            args.halueval)
        body, data = table(rows)
        eight, eight_rows = normandy(shield)
    command = ("python scripts/bench_short_answers.py --data-dir DIR "
               f"--per-article {args.per_article} --halueval {args.halueval}")
    notes = (f"Each answer judged by `Shield.judge` with the defaults (the `grounded` rule on "
             f"pre_answer and support, p_true shown; every judge read by the packaged 1.5B); "
             f"the default answerer's own answers by `Shield.ask`. The short-answer reading was "
             f"fitted on {', '.join(FIT_ARTICLES)} (`--fit`), none of the articles below, "
             f"and so was the floor: a short answer is kept only at support >= "
             f"{SHORT_SUPPORT_FLOOR}. "
             f"Load average (1 min) at start {load:.1f}, at end {psutil.getloadavg()[0]:.1f}; "
             f"{(time.time() - started) / 60:.0f} min.")
    publish("Short answers, same-passage distractors held out", command, notes,
            f"{body}\n\nThe Normandy answers (issue 56), the two demo passages:\n\n{eight}",
            {**data, "normandy": eight_rows}, args.json_out, append=not args.no_append,
            show=True, markdown=QUALITY_MD)


if __name__ == "__main__":
    main()
