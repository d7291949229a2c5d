"""Answer support, claim by claim (docs/METHODS.md 4.14): is what each sentence of the answer
says supported by the passages?

The answer is split into claims (ragshield/claims.py: sentences and list items; a short answer
is one claim; a refusal has none). Each claim is asked about after the sample's shared prefix,
so the passages are read once and each claim costs only its own tokens: P(yes) that the
passages support the sentence, as part of an answer to the question (yes_no module). A model
server takes up to CLAIMS_AT_ONCE claims side by side; an in-process model reads them in turn. The
answer's score is the least supported claim's (min): an answer is as trustworthy as its
weakest sentence. keep = score >= threshold (for a short answer, at least SHORT_SUPPORT_FLOOR).

Each claim in `details["claims"]` carries its span in the answer, its score, whether it
passes the threshold, and the passage that shares the most content words (stemmed) with it (the
passage a reader should look at; the model is not asked which, to keep one call a claim).

A sentence's score is not the model's P(yes) alone: it is combined with the share of the
sentence's content words that the passages contain (its word coverage), by a logistic fit on
development rows of AttributionBench and LFQA-Verification (SENTENCE_FIT). A sentence that
brings words the passages never use is often one that adds what they do not say, and the 1.5B
is too ready to say yes to it.

A short answer ("Normans", "Guy de Lusignan.", "It was Guy de Lusignan.") is judged as the
answer to its question (short_answer.py): its words are nearly always in the passages, right
or wrong, so its coverage says nothing; whether the passages give it as the answer does.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from scipy.special import expit

from ragshield.answerers.context import PromptOptions, shared_messages
from ragshield.claims import MAX_CLAIMS, Claim, split_claims
from ragshield.judges.base import Judge
from ragshield.judges.learned import log_odds
from ragshield.judges.short_answer import (SHORT_SUPPORT_FLOOR, is_short_answer,
                                           read_short_answer)
from ragshield.judges.signals import word_reader
from ragshield.judges.yes_no import REPLY_YES_OR_NO, ask_yes_no
from ragshield.llm.base import CHAT, LOGPROBS, serves_at_once
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, DetailTable, Passage, Sample, Verdict, passage_label

# The instruction comes before the claim, so that it is read once, with the passages, and
# each further claim costs only its own tokens. The statement question was chosen among four
# wordings on a dev slice of Factcheck-GPT; the made-up passage that shows what "all of what it
# says" means was chosen among five ways of asking on development rows of AttributionBench and
# LFQA-Verification, then tested on the rows bench_support.py reports, where it ranked and
# transferred its threshold better (docs/QUALITY.md, "Support judge wordings").
INSTRUCTIONS = ("Is the following statement true according to the passages above? Reply yes "
                "only if the passages say all of what it says. Reply no if they do not mention "
                "it, say something else, or say only part of it. For example, had a passage "
                "said \"The bridge opened in 1932 and carries six lanes.\", then \"The bridge "
                "opened in 1932.\" is yes; \"The bridge opened in 1932 and is the longest in "
                "the country.\" is no; \"The bridge opened in 1935.\" is no. "
                f"{REPLY_YES_OR_NO}\n\nStatement: ")


# A sentence's score: sigmoid(intercept + log-odds weight * logit P(yes) + coverage weight *
# word coverage), fitted by `python scripts/bench_support_wordings.py --data-dir DIR --fit` on
# development rows (docs/QUALITY.md, "Support judge wordings"), each set weighted equally, on
# the packaged 1.5B's readings (another reader gets the same weights; none was fitted for it).
SENTENCE_FIT = (-3.85, 0.81, 4.84)
# A server backend's claims asked side by side: each is a short call after the same prefix,
# which a server batches; more would crowd out the other judges' and callers' calls.
CLAIMS_AT_ONCE = 4


def claim_score(p_yes: float, coverage: float) -> float:
    """A sentence's score: P(yes) and the word coverage combined as fitted (SENTENCE_FIT)."""
    intercept, by_odds, by_coverage = SENTENCE_FIT
    return float(expit(intercept + by_odds * log_odds([p_yes])[0] + by_coverage * coverage))


def _content_words(text: str) -> set[str]:
    """Content words as the learned judge's signals read them (stemmed, stop words out)."""
    return set(word_reader().stems(text))


def passage_words(passages: Sequence[Passage]) -> list[set[str]]:
    """Each passage's content words, read once for all the claims of an answer."""
    return [_content_words(p.text) for p in passages]


def word_coverage(claim: str, passages: Sequence[set[str]]) -> float:
    """The share of the claim's content words that some passage contains (1.0 for a claim
    without one: it brings nothing the passages lack)."""
    words = _content_words(claim)
    found = set().union(*passages) if passages else set()
    return len(words & found) / len(words) if words else 1.0


def closest_passage(claim: str, passages: Sequence[set[str]]) -> int | None:
    """The passage (given by its content words) sharing the most of the claim's content
    words (ties: the first), None when none shares any."""
    words = _content_words(claim)
    shared = [len(words & found) for found in passages]
    if not shared or max(shared) == 0:
        return None
    return shared.index(max(shared))


class SupportJudge(Judge):
    name = "support"
    requires = frozenset({CHAT, LOGPROBS})
    cost = "moderate"  # one call a claim (each read after the cached prefix)

    def __init__(self, threshold: float = 0.5, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        claims = [] if answer.refusal else split_claims(answer.text)
        short = is_short_answer(claims)
        threshold = max(self.threshold, SHORT_SUPPORT_FLOOR) if short else self.threshold
        details: dict[str, Any] = {"threshold": threshold, "combine": "min",
                                   "sentence_fit": list(SENTENCE_FIT), "claims": []}
        if not claims:
            what = "a refusal" if answer.refusal else "an answer without a sentence to check"
            return Verdict(judge=self.name, keep=False, score=0.0, details=details,
                           rationale=f"{what}: nothing the passages could support")
        passages = passage_words(sample.passages)
        if short:
            details["claims"].append(self._short_json(sample, claims[0], llm, passages,
                                                      threshold))
        else:
            for claim, p_yes in zip(claims, self._claim_readings(sample, claims, llm)):
                details["claims"].append(self._claim_json(claim, p_yes, passages, threshold))
        unread = sum(c["score"] is None for c in details["claims"])
        scores = [c["score"] for c in details["claims"] if c["score"] is not None]
        error = f"{unread} of {len(claims)} claims could not be read" if unread else None
        if not scores:
            return Verdict(judge=self.name, keep=False, score=None, details=details,
                           parse_error=error, rationale="no claim could be read; withheld")
        score = min(scores)
        keep = score >= threshold
        compared = f"{'>=' if keep else '<'} threshold {threshold:g}"
        if short:
            aligned = details["claims"][0]["aligned"]
            rationale = (f"a short answer, read as the answer to the question: "
                         f"{'supported' if keep else 'NOT supported'}, {score:.2f} ({compared}; "
                         f"where it sits in the passages {aligned:.2f})")
        else:
            weakest = next(i for i, c in enumerate(details["claims"], 1) if c["score"] == score)
            rationale = (f"{_supported_count(details['claims'])}; the least supported, "
                         f"sentence {weakest}, scored {score:.2f} ({compared})")
        return Verdict(judge=self.name, keep=keep, score=score, details=details,
                       parse_error=error, rationale=rationale)

    def _claim_readings(self, sample: Sample, claims: Sequence[Claim],
                        llm: TracedLLM) -> list[float | None]:
        """P(yes) of each claim. A server takes up to CLAIMS_AT_ONCE of them side by side,
        each traced on its own and the traces joined in claim order; an in-process model
        reads them in turn, each after the one before in its cache."""
        def read(number: int, claim: Claim, traced: TracedLLM) -> float | None:
            messages = shared_messages(sample, INSTRUCTIONS + claim.text, self.options)
            return ask_yes_no(traced, messages,
                              purpose=f"{self.name}: claim {number} of {len(claims)}").p_yes

        if not serves_at_once(llm) or len(claims) == 1:
            return [read(number, claim, llm) for number, claim in enumerate(claims, start=1)]
        own = [TracedLLM(llm.inner) for _ in claims]
        with ThreadPoolExecutor(min(CLAIMS_AT_ONCE, len(claims))) as pool:
            readings = list(pool.map(read, range(1, len(claims) + 1), claims, own))
        for traced in own:
            llm.calls.extend(traced.calls)
        return readings

    def _claim_json(self, claim: Claim, p_yes: float | None, passages: Sequence[set[str]],
                    threshold: float) -> dict[str, Any]:
        coverage = word_coverage(claim.text, passages)
        score = None if p_yes is None else claim_score(p_yes, coverage)
        return _scored(claim, score, passages, threshold, p_yes=p_yes, coverage=coverage)

    def _short_json(self, sample: Sample, claim: Claim, llm: TracedLLM,
                    passages: Sequence[set[str]], threshold: float) -> dict[str, Any]:
        reading = read_short_answer(sample, claim.text, llm, self.options,
                                    purpose=f"{self.name}: the short answer")
        return _scored(claim, reading.score, passages, threshold, p_yes=reading.p_yes,
                       coverage=None, short_answer=reading.core,
                       answer_logprob=reading.logprob, aligned=reading.aligned)

    @classmethod
    def detail_view(cls, details: dict[str, Any],
                    trace: Sequence[dict[str, Any]]) -> list[DetailTable] | None:
        claims = details.get("claims")
        if not isinstance(claims, list) or not claims:
            return None
        rows = [[number, claim.get("text"), _score_text(claim.get("score")),
                 _score_text(claim["p_yes"]) if "p_yes" in claim else "-",  # older runs: none
                 _coverage_text(claim.get("coverage")),
                 _support_word(claim.get("supported")),
                 passage_label(claim["passage"]) if isinstance(claim.get("passage"), int)
                 else "none"]
                for number, claim in enumerate(claims[:MAX_CLAIMS], start=1)
                if isinstance(claim, dict)]
        # The judge keeps at most MAX_CLAIMS; a verdict from elsewhere shows no more.
        shown = f"; the first {MAX_CLAIMS} of {len(claims):,}" if len(claims) > MAX_CLAIMS else ""
        return [DetailTable(f"Claims (threshold {details.get('threshold')}{shown})",
                            ["#", "claim", "P(supported)", "model's P(yes)",
                             "words in the passages", "verdict", "closest passage"], rows)]


def _supported_count(claims: Sequence[dict[str, Any]]) -> str:
    """How many sentences were found supported, of how many; an unread one is not."""
    supported = sum(claim["supported"] is True for claim in claims)
    unread = sum(claim["supported"] is None for claim in claims)
    return (f"{supported} of {len(claims)} sentences supported"
            + (f" ({unread} unread)" if unread else ""))


def _score_text(score: Any) -> str:
    return f"{score:.2f}" if isinstance(score, (int, float)) else "unread"


def _coverage_text(coverage: Any) -> str:
    return f"{coverage:.0%}" if isinstance(coverage, (int, float)) else "-"


def _support_word(supported: Any) -> str:
    return {True: "supported", False: "NOT supported"}.get(supported, "unread")


def _scored(claim: Claim, score: float | None, passages: Sequence[set[str]], threshold: float,
            **readings: Any) -> dict[str, Any]:
    return {"start": claim.start, "end": claim.end, "text": claim.text, "score": score,
            **readings, "supported": None if score is None else score >= threshold,
            "passage": closest_passage(claim.text, passages)}
