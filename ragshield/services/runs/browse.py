"""Browsing a run: its wide frame (one row per sample, every judge side by side), the
filters over it, and the rows shown.

The frame is built once per version of a run's tables (a pivot of the verdicts, seconds
for nothing: tens of milliseconds for 10k samples x 10 judges) and kept while the tables
stay the same objects, so a filter is a few boolean masks over it.

Folds follow docs/METHODS.md 1 with answerable = the answer is correct under the chosen truth
(the RC-RAG label): those of ragshield.metrics.risk, or "-" when the judge gave no decision
(unavailable, failed, or not run on the sample).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd

from ragshield.errors import UserError
from ragshield.evaluation import RunTables
from ragshield.decision_rule import ABSTAINED, DEFERRED, KEPT, NOT_RUN, UNDECIDED, keep_counts
from ragshield.metrics.labels import ANSWERABLE, UNANSWERABLE, awf_truth
from ragshield.metrics.risk import FOLDS
from ragshield.policies.policy import DEFER
from ragshield.services.questions.claim_marks import SUPPORT, claim_marks, unsupported
from ragshield.services.runs.run_scores import RunView
from ragshield.services.runs.run_tables import RunTablesCache, remember
from ragshield.types import ABSTAIN, KEEP

DECISION = "decision"  # the run's decision rule, shown beside the judges in the fold filter
LABEL_STATES = ("any", "labelled", "unlabelled")
TRUTH_STATES = ("any", "right", "wrong")  # under the chosen truth (right: and supported)
SORTS = ("sample", "unsupported first", "disagreement first", "wrong shown first")
NONE = "-"
KEEP_WORDS = {KEPT: KEEP, ABSTAINED: ABSTAIN, UNDECIDED: NONE, NOT_RUN: NONE,
              DEFERRED: DEFER}
# The decision in words (the decision filter's choices) and as a badge people read without
# colour: a sign and the word.
DECISION_NAMES = {KEPT: "kept", ABSTAINED: "withheld", DEFERRED: "deferred",
                  UNDECIDED: "undecided", NOT_RUN: "undecided"}
DECISIONS = ("kept", "withheld", "deferred", "undecided")
DECISION_BADGES = dict(zip(DECISIONS, ("✓ kept", "✗ withheld", "? deferred", "– undecided")))
SHOWN_ROWS = 500
CELL_CHARS = 300  # question and answer cells are cut here; the case study shows all


def keep_column(judge: str) -> str:
    return f"keep:{judge}"


def fold_column(judge: str) -> str:
    return f"fold:{judge}"


@dataclass(frozen=True)
class BrowseFrame:
    """A run's wide frame and what it was built from."""

    run_id: int
    rule: str
    judges: tuple[str, ...]  # in the run's order
    rows: pd.DataFrame


def _folds(codes: np.ndarray, answerable: np.ndarray) -> np.ndarray:
    """Each sample's fold under a judge's keep codes. FOLDS is (AK, AD, UK, UD): answerable
    before unanswerable, kept before discarded."""
    index = np.where(answerable, 0, 2) + np.where(codes == KEPT, 0, 1)
    return np.where(np.isin(codes, (KEPT, ABSTAINED)), np.asarray(FOLDS)[index], NONE)


def _human_differs(samples: pd.DataFrame, auto_samples: pd.DataFrame) -> np.ndarray:
    """A human majority label (answerable / unanswerable) against the automatic
    "passages support an answer" of the same sample."""
    human = samples["human_label"]
    auto = samples["sample_id"].map(auto_samples.set_index("sample_id")["passages_support"])
    decided = human.isin([ANSWERABLE, UNANSWERABLE]) & auto.notna()
    return (decided & (human.eq(ANSWERABLE) != auto.eq(True))).to_numpy()


def run_decisions(view: RunView) -> np.ndarray:
    """The run's decision on each sample under its rule (a policy from its judge's scores,
    the grounded rule from its judges' scores and the answers' shapes, the others from the
    judges' keep codes), as judging.decide makes them one by one."""
    return view.rule.run_codes(view)


def _unsupported_sentences(tables: RunTables, sample_ids: pd.Series,
                           answers: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: how many of its answer's sentences the support judge marked unsupported
    (or could not read: nothing vouched for them) and how many it marked at all (-1 for
    both where it gave no marks)."""
    details = tables.records.support_details if tables.records is not None else {}
    counted: dict[str, tuple[int, int]] = {}
    for sample, answer in zip(sample_ids, answers):
        if sample in details:
            claims = claim_marks(answer, [{"judge": SUPPORT, "details": details[sample]}])
            if claims:
                counted[sample] = (len(unsupported(claims)), len(claims))
    pairs = [counted.get(sample, (-1, -1)) for sample in sample_ids]
    return (np.asarray([p[0] for p in pairs], dtype=int),
            np.asarray([p[1] for p in pairs], dtype=int))


def _person_words(samples: pd.DataFrame) -> np.ndarray:
    """People's majority on the sample in words: their label, and whether the answer is right
    where they said ("" without labels)."""
    flags = {True: "right", False: "wrong"}
    words = []
    for label, correct in zip(samples["human_label"], samples["human_answer_correct"]):
        said = [str(label)] if isinstance(label, str) else []
        said += [flags[bool(correct)]] if isinstance(correct, (bool, np.bool_)) else []
        words.append(", ".join(said))
    return np.asarray(words, dtype=object)


def build_frame(tables: RunTables, auto_tables: RunTables) -> BrowseFrame:
    """One row per sample of `tables` (the chosen truth); `auto_tables` are the same run's
    tables under truth auto (the same object when the truth is auto)."""
    view = RunView(tables)
    judges = view.judges
    rule = str(tables.config.get("rule", ""))
    samples = tables.samples
    if samples.empty:
        names = ["sample_id", "question", "answer", DECISION, "decided", "good", "refusal",
                   "unsupported", "sentences", "dissent", "deciding", fold_column(DECISION),
                   *map(keep_column, judges), *map(fold_column, judges),
                   "disagree", "labelled", "person", "human_differs", "text"]
        return BrowseFrame(tables.run_id, rule, judges, pd.DataFrame(columns=names))
    codes = view.codes
    answerable = samples["answer_correct"].fillna(False).astype(bool).to_numpy()
    decision = run_decisions(view)
    question, answer = samples["question"].fillna(""), samples["answer"].fillna("")
    sample_id = samples["sample_id"].astype(str)
    flagged, marked = _unsupported_sentences(tables, sample_id, answer)
    keeps, deciding = keep_counts(codes)
    columns: dict[str, object] = {
        "sample_id": sample_id.to_numpy(), "question": question.to_numpy(),
        "answer": answer.to_numpy(),
        DECISION: pd.Series(decision).map(KEEP_WORDS).to_numpy(),
        "decided": pd.Series(decision).map(DECISION_NAMES).to_numpy(),
        "good": awf_truth(answerable, samples["passages_support"].to_numpy(dtype=bool)),
        "refusal": samples["refusal"].to_numpy(dtype=bool),
        "unsupported": flagged, "sentences": marked,
        # The judges that decided the sample and went the other way from the decision.
        "dissent": np.where(decision == KEPT, deciding - keeps, keeps), "deciding": deciding,
        fold_column(DECISION): _folds(decision, answerable),
    }
    for index, judge in enumerate(judges):
        column = codes[:, index]
        columns[keep_column(judge)] = pd.Series(column).map(KEEP_WORDS).to_numpy()
        columns[fold_column(judge)] = _folds(column, answerable)
    columns["disagree"] = (keeps > 0) & (keeps < deciding)
    columns["labelled"] = samples["human_label"].notna().to_numpy()
    columns["person"] = _person_words(samples)
    columns["human_differs"] = _human_differs(samples, auto_tables.samples)
    columns["text"] = (sample_id + "\n" + question + "\n" + answer).str.lower().to_numpy()
    return BrowseFrame(tables.run_id, rule, judges, pd.DataFrame(columns))


class BrowseFrames:
    """Wide frames of the few most recently browsed (run, truth) pairs. An entry is reused
    while the run tables cache hands out the very same table object, i.e. until the run or
    its labels change; the automatic tables are then not asked for again (they change
    together with the chosen truth's tables)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, str], tuple[RunTables, BrowseFrame]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tables: RunTables, auto_tables: Callable[[], RunTables]) -> BrowseFrame:
        """The frame of `tables`; `auto_tables` gives the run's tables under truth auto,
        called only when the frame is built."""
        key = (tables.run_id, tables.truth)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is tables:
                self._entries.move_to_end(key)
                return entry[1]
        frame = build_frame(tables, tables if tables.truth == "auto" else auto_tables())
        with self._lock:
            remember(self._entries, key, (tables, frame), self.size)
        return frame


def run_frame(cache: RunTablesCache, frames: BrowseFrames, run_id: int,
              truth: str) -> tuple[RunTables, BrowseFrame]:
    """The run's tables under `truth` and its wide frame (built once per tables version)."""
    tables = cache.get(run_id, truth)
    return tables, frames.get(tables, lambda: cache.get(run_id, "auto"))


class FilterError(UserError, ValueError):
    """A filter value that is not one of the choices."""


@dataclass(frozen=True)
class BrowseFilters:
    fold_judge: str = DECISION
    folds: tuple[str, ...] = ()  # empty: any fold
    disagree: bool = False
    label_state: str = "any"
    human_differs: bool = False
    search: str = ""
    decisions: tuple[str, ...] = ()  # of DECISIONS; empty: any
    truth: str = "any"  # of TRUTH_STATES
    unsupported: bool = False  # only answers with a sentence the support judge did not vouch for
    sort: str = SORTS[0]


def _check(filters: BrowseFilters) -> None:
    for name, values, choices in (("decision", filters.decisions, DECISIONS),
                                  ("truth", (filters.truth,), TRUTH_STATES),
                                  ("sort", (filters.sort,), SORTS)):
        unknown = sorted(set(values) - set(choices))
        if unknown:
            raise FilterError(f"unknown {name} {', '.join(map(repr, unknown))}; choose from "
                              f"{', '.join(choices)}")


def _sorted(rows: pd.DataFrame, sort: str) -> pd.DataFrame:
    """`rows` in the order `sort` names, sample order breaking ties (a stable sort)."""
    if sort == "unsupported first":
        key = -rows["unsupported"].to_numpy(dtype=int)
    elif sort == "disagreement first":
        key = -rows["dissent"].to_numpy(dtype=int)
    elif sort == "wrong shown first":
        shown_wrong = (rows["decided"] == "kept").to_numpy() & ~rows["good"].to_numpy(bool)
        key = np.where(shown_wrong, 0, 1)
    else:
        return rows
    return rows.iloc[np.argsort(key, kind="stable")]


def filter_rows(frame: BrowseFrame, filters: BrowseFilters) -> pd.DataFrame:
    """The rows of `frame` that pass every filter, in the order filters.sort names."""
    rows = frame.rows
    _check(filters)
    if filters.fold_judge not in (DECISION, *frame.judges):
        raise FilterError(f"run {frame.run_id} has no judge {filters.fold_judge!r}; "
                          f"choose {DECISION} or one of {', '.join(frame.judges) or 'none'}")
    unknown = sorted(set(filters.folds) - set(FOLDS))
    if unknown:
        raise FilterError(f"unknown fold(s) {', '.join(unknown)}; folds are {', '.join(FOLDS)}")
    if filters.label_state not in LABEL_STATES:
        raise FilterError(f"label state must be one of {', '.join(LABEL_STATES)}, "
                          f"got {filters.label_state!r}")
    mask = np.ones(len(rows), dtype=bool)
    if filters.folds:
        mask &= rows[fold_column(filters.fold_judge)].isin(filters.folds).to_numpy()
    if filters.disagree:
        mask &= rows["disagree"].to_numpy(dtype=bool)
    if filters.label_state != "any":
        labelled = rows["labelled"].to_numpy(dtype=bool)
        mask &= labelled if filters.label_state == "labelled" else ~labelled
    if filters.human_differs:
        mask &= rows["human_differs"].to_numpy(dtype=bool)
    if filters.decisions:
        mask &= rows["decided"].isin(filters.decisions).to_numpy()
    if filters.truth != "any":
        good = rows["good"].to_numpy(dtype=bool)
        mask &= good if filters.truth == "right" else ~good
    if filters.unsupported:
        mask &= rows["unsupported"].to_numpy(dtype=int) > 0
    needle = filters.search.strip().lower()
    if needle:
        mask &= rows["text"].str.contains(needle, regex=False).to_numpy(dtype=bool)
    return _sorted(rows[mask], filters.sort)


def _cut(text: str) -> str:
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


def _truth_badge(good: bool, refusal: bool) -> str:
    return "– refused" if refusal else "✓ right" if good else "✗ wrong"


def _sentence_badge(unsupported: int, sentences: int) -> str:
    if sentences < 0:
        return "–"  # the support judge gave no marks
    return f"⚠ {unsupported} of {sentences}" if unsupported else f"✓ 0 of {sentences}"


def _dissent_badge(dissent: int, judges: int) -> str:
    return f"⚡ {dissent} of {judges}" if dissent else "agree"


def shown_table(frame: BrowseFrame, rows: pd.DataFrame, fold_judge: str,
                limit: int = SHOWN_ROWS) -> pd.DataFrame:
    """The first `limit` rows as plain text: the sample, its badges (the decision, right or
    wrong, unsupported sentences, judges against the decision, people's label: a sign and
    a word each, never colour alone), question, answer, the fold of `fold_judge`, each
    judge's keep, and the flags."""
    head = rows.head(limit)
    flag = {True: "yes", False: ""}
    shown = {
        "sample": head["sample_id"],
        "shown?": head["decided"].map(DECISION_BADGES),
        "answer is": [_truth_badge(g, r) for g, r in zip(head["good"], head["refusal"])],
        "unsupported": [_sentence_badge(u, n)
                        for u, n in zip(head["unsupported"], head["sentences"])],
        "judges against": [_dissent_badge(d, n)
                           for d, n in zip(head["dissent"], head["deciding"])],
        "people say": head["person"],
        "question": head["question"].map(_cut), "answer": head["answer"].map(_cut),
        f"fold ({fold_judge})": head[fold_column(fold_judge)],
        **{judge: head[keep_column(judge)] for judge in frame.judges},
        "disagree": head["disagree"].map(flag), "labelled": head["labelled"].map(flag),
        "human ≠ auto": head["human_differs"].map(flag),
    }
    return pd.DataFrame(shown).reset_index(drop=True)


@dataclass(frozen=True)
class BrowsedSamples:
    frame: BrowseFrame
    fold_judge: str  # the judge whose folds were filtered on
    dropped_judge: str | None  # the fold judge asked for when the run lacks it (then DECISION)
    matching: int  # how many samples pass the filters
    table: pd.DataFrame  # the first of them, as shown_table gives them


def browse_samples(cache: RunTablesCache, frames: BrowseFrames, run_id: int, truth: str,
                   filters: BrowseFilters, limit: int = SHOWN_ROWS) -> BrowsedSamples:
    """The run's samples under `truth` that pass `filters`. A fold judge the run lacks (the
    picker still shows the previous run's) falls back to the decision rather than failing.
    Raises UnknownRunError, OptionError (truth) or FilterError."""
    _, frame = run_frame(cache, frames, run_id, truth)
    dropped = None
    if filters.fold_judge not in (DECISION, *frame.judges):
        dropped, filters = filters.fold_judge, replace(filters, fold_judge=DECISION)
    rows = filter_rows(frame, filters)
    return BrowsedSamples(frame, filters.fold_judge, dropped, len(rows),
                          shown_table(frame, rows, filters.fold_judge, limit))
