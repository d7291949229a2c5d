"""Agreement on sentence labels (issue 57): the people of a dataset among themselves (Cohen's
kappa and Gwet's AC1 per pair and overall; AC1 because most sentences are supported and kappa
then reads low on high agreement), and the support judge of the dataset's newest run against
their majority (AUROC of its scores, balanced accuracy of its marks), with bootstrap intervals.
A sentence is one span of one answer text of a sample."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ragshield.label_agreement import SentenceKey, run_claims
from ragshield.metrics.agreement import agreement_summary, gwet_ac1, gwet_ac1_interval
from ragshield.metrics.sentence_agreement import judge_against_majority, sentence_majority
from ragshield.store.database import Store
from ragshield.store.labels import annotator_names
from ragshield.store.samples import dataset_id_of
from ragshield.store.sentence_labels import current_sentence_labels

Rating = tuple[SentenceKey, str, str]  # sentence, person, label


@dataclass(frozen=True)
class PairSentenceAgreement:
    kappa: float | None  # None: both gave one and the same label on every shared sentence
    ac1: float | None
    shared: int  # sentences both labelled


@dataclass(frozen=True)
class SentenceAgreement:
    sentences: int  # sentences with a label
    people: int
    among: dict[str, Any]  # agreement_summary, with gwet_ac1_interval
    pairs: dict[tuple[str, str], PairSentenceAgreement]
    judge: dict[str, Any]  # judge_against_majority, and the judge's name


def sentence_ratings(store: Store, dataset: str) -> list[Rating]:
    """Every current sentence label of the dataset as (sentence, person's name, label)."""
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
    labels = current_sentence_labels(store, dataset_id)
    with store.session() as session:
        names = annotator_names(session)  # after the labels: a newcomer's row is there
    return [((sample, row.answer_sha256, row.start, row.end), names[row.annotator_id], row.label)
            for sample, rows in labels.items() for row in rows]


def _pairs(ratings: list[Rating]) -> dict[tuple[str, str], PairSentenceAgreement]:
    by_person: dict[str, dict[SentenceKey, str]] = {}
    for sentence, person, label in ratings:
        by_person.setdefault(person, {})[sentence] = label
    result = {}
    for first, second in combinations(sorted(by_person), 2):
        shared = by_person[first].keys() & by_person[second].keys()
        if not shared:
            continue
        pair = [(str(s), who, by_person[who][s]) for s in shared for who in (first, second)]
        summary = agreement_summary(pair)
        result[first, second] = PairSentenceAgreement(
            next(iter(summary["cohen"].values()), None), _none(gwet_ac1(pair)), len(shared))
    return result


def _none(value: float) -> float | None:
    return None if math.isnan(value) else value


def sentence_agreement(store: Store, dataset: str, judge: str = "support",
                       run_id: int | None = None) -> SentenceAgreement:
    """The agreement on the dataset's sentence labels, and that of the `judge`'s marks in the
    run (default: the dataset's newest) with the people's majority."""
    ratings = sentence_ratings(store, dataset)
    if not ratings:  # the common case: no need to read the run's claims
        return SentenceAgreement(0, 0, agreement_summary([]) | {"gwet_ac1_interval": None},
                                 {}, {"judge": judge, **judge_against_majority({}, {}, {})})
    keyed = [(str(sentence), person, label) for sentence, person, label in ratings]
    among = agreement_summary(keyed)
    among["gwet_ac1_interval"] = gwet_ac1_interval(keyed)
    votes: dict[SentenceKey, list[str]] = {}
    for sentence, _, label in ratings:
        votes.setdefault(sentence, []).append(label)
    majority = {sentence: sentence_majority(labels) for sentence, labels in votes.items()}
    claims = run_claims(store, dataset, judge, run_id)
    against = judge_against_majority({k: v[0] for k, v in claims.items()},
                                     {k: v[1] for k, v in claims.items()}, majority)
    return SentenceAgreement(sentences=len(votes), people=len({p for _, p, _ in ratings}),
                             among=among, pairs=_pairs(ratings),
                             judge={"judge": judge, **against})
