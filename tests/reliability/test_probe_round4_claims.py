"""Claims, round 4 (faults a hostile probe found, issue 55): text the support judge never read
(a heading, a code block, a lead-in, a sentence that opens like a refusal) passed as
supported, under `support` and `grounded`, and `redact` left it in; claim splitting took
quadratic time, and a budgeted `Shield` call returned while its judge burnt on unheard;
`Shield` took any `budget_ms` and any answer length; a bundle's support verdict could carry
any number of claims into Browse."""

from __future__ import annotations

import json
import lzma
import math
import time
from pathlib import Path
from typing import Any, Sequence

import pytest

import ragshield
from ragshield.claims import MAX_CLAIMS, split_claims
from ragshield.config import MAX_BUDGET_MS
from ragshield.errors import OptionError
from ragshield.services.data.run_bundles import export_run, import_run
from ragshield.services.questions.claim_marks import claim_marks
from ragshield.services.questions.settlement import MAX_ANSWER_CHARS
from ragshield.store.database import Store, open_store
from ragshield.store.run_bundle import BundleError, run_count
from ragshield.store.runs import get_run
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import list_samples, load_sample
from ragshield.testing.synthetic_run import fill_synthetic_run
from ragshield.types import Message
from ragshield.ui.case_study import answer_html, verdict_html
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply
from tests.reliability.scenario import Scenario

UNREAD = "Claims, round 4: every word of an answer is read or counts against it"
SPEED = "Claims, round 4: splitting in linear time, a budget that stops the work"
OPTIONS = "Claims, round 4: Shield's answer and budget_ms bounds"
BUNDLES = "Claims, round 4: a bundle's claims bounded on import and in Browse"

QUESTION = "Who gave their name to Normandy?"
PASSAGE = "The Normans gave their name to Normandy, a region in France."
SUPPORTED = "The Normans gave their name to Normandy."
YES = ScriptedReply("Yes", top={"Yes": -0.02, "No": -4.0})
NO = ScriptedReply("No", top={"Yes": -4.0, "No": -0.02})
# The same false sentence, where the judge used to pass it over.
HOSTILE = {
    "heading": f"{SUPPORTED}\n# The moon is made of cheese",
    "code block": f"{SUPPORTED}\n```\nThe moon is made of cheese\n```",
    "lead-in": f"{SUPPORTED}\nThe moon is made of cheese, as these show:",
    "refusal": f"{SUPPORTED} I don't know why, but the moon is made of cheese.",
}


def cheese_is_false(messages: Sequence[Message]) -> ScriptedReply:
    """No to a statement about the moon, yes to everything else (pre_answer's question
    included)."""
    statement = messages[-1]["content"].rpartition("Statement: ")[2]
    return NO if "moon" in statement else YES


def judged(answer: str, rule: str, **options: Any) -> ragshield.Decision:
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(ScriptedLLM(respond=cheese_is_false))  # type: ignore[assignment]
        judges = ["pre_answer", "support"] if rule == "grounded" else ["support"]
        return shield.judge(QUESTION, [PASSAGE], answer, judges=judges, rule=rule, **options)


@pytest.mark.scenario(UNREAD)
@pytest.mark.parametrize("kind", HOSTILE)
def test_text_the_judge_did_not_read_is_not_shown_as_supported(scenario: Scenario,
                                                                kind: str) -> None:
    answer = HOSTILE[kind]
    claims = split_claims(answer)
    scenario.check(f"the {kind}'s words are read", any("moon" in c.text for c in claims),
                   [c.text for c in claims])
    for rule in ("support", "grounded"):
        decision = judged(answer, rule)
        scenario.check(f"a false {kind} withholds the answer under {rule}", not decision.kept,
                       decision.reason)
    cut = judged(answer, "support", on_unsupported="redact")
    scenario.check(f"redact cuts the false {kind}", cut.shortened and cut.shown == SUPPORTED,
                   cut.shown)
    plain = judged(SUPPORTED + "\n## Summary\nHere is what I found:\n- Normandy is in France.",
                   "support")
    scenario.check("headings and lead-ins of filler words still change nothing", plain.kept,
                   plain.reason)


@pytest.mark.scenario(UNREAD)
def test_an_unread_claim_is_not_counted_as_supported(scenario: Scenario) -> None:
    def unreadable_moon(messages: Sequence[Message]) -> ScriptedReply:
        return (ScriptedReply("Maybe", top={"Maybe": -0.1})
                if "moon" in messages[-1]["content"] else YES)

    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(ScriptedLLM(respond=unreadable_moon))  # type: ignore[assignment]
        decision = shield.judge(QUESTION, [PASSAGE], f"{SUPPORTED} The moon is made of cheese.",
                                judges=["support"], rule="support")
    [verdict] = decision.verdicts
    scenario.check("the rationale counts only the sentences found supported",
                   verdict.rationale.startswith("1 of 2 sentences supported (1 unread)"),
                   verdict.rationale)


@pytest.mark.scenario(SPEED)
def test_splitting_takes_linear_time(scenario: Scenario) -> None:
    for name, answer in {"one-character sentences": "7. " * 50_000,
                         "initials": "A. " * 50_000, "dots": "Paris" + "." * 50_000 + " It is.",
                         "spaces": "Paris" + " " * 50_000 + "[1] is. It is."}.items():
        # This thread's CPU time: neither the load of other processes nor another thread
        # of this one (a judge a budget left running) counts. Quadratic, it took 30 to 60 s.
        started = time.thread_time()
        claims = split_claims(answer)
        seconds = time.thread_time() - started
        scenario.figure(f"{name}: seconds to split 150,000 characters", round(seconds, 3))
        scenario.check(f"{name}: split in under 2 s of CPU", seconds < 2.0 and claims,
                       seconds)


class BurningLLM(ScriptedLLM):
    """Each chat call burns `seconds` of CPU, as an in-process model does."""

    def __init__(self, seconds: float) -> None:
        super().__init__(respond=lambda _messages: YES)
        self.seconds = seconds

    def chat(self, messages, **params):  # type: ignore[no-untyped-def, override]
        until = time.thread_time() + self.seconds
        while time.thread_time() < until:
            pass
        return super().chat(messages, **params)


def cpu_after_return(llm: ScriptedLLM, answer: str, window_s: float = 1.5) -> float:
    """The process's CPU seconds in the `window_s` after a 300 ms budgeted call returned."""
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(llm)  # type: ignore[assignment]
        decision = shield.judge(QUESTION, [PASSAGE], answer, judges=["support"],
                                rule="support", budget_ms=300, on_budget="keep")
        assert decision.to_dict()["unfinished"] == ["support"]
        before = time.process_time()
        time.sleep(window_s)
        return time.process_time() - before


@pytest.mark.scenario(SPEED)
def test_a_budget_stops_the_judge_it_cut_off(scenario: Scenario) -> None:
    """The support judge cut off at 300 ms used to read its remaining claims unheard (here
    40 calls of 0.1 s of CPU each); it now stops at its next model call."""
    answer = " ".join(f"Sentence {i} is here." for i in range(MAX_CLAIMS))
    burnt = cpu_after_return(BurningLLM(0.1), answer)
    scenario.figure("CPU seconds in the 1.5 s after the budgeted call returned", round(burnt, 2))
    scenario.check("no judge burns on after its budget", burnt < 0.5, burnt)


@pytest.mark.scenario(OPTIONS)
def test_shield_refuses_an_answer_longer_than_the_api_takes(scenario: Scenario) -> None:
    llm = ScriptedLLM(respond=lambda _messages: YES)
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(llm)  # type: ignore[assignment]
        with pytest.raises(OptionError) as raised:
            shield.judge(QUESTION, [PASSAGE], "A. " * 50_000, judges=["support"],
                         rule="support", budget_ms=500)
        scenario.check("an over-long answer is an OptionError naming the field",
                       str(raised.value).startswith("answer is 150,000 characters")
                       and f"{MAX_ANSWER_CHARS:,}" in str(raised.value), raised.value)
        scenario.check("no model is asked", llm.seen == [])
        kept = shield.judge(QUESTION, [PASSAGE], "A. " * (MAX_ANSWER_CHARS // 3),
                            judges=["support"], rule="support", budget_ms=500)
    scenario.check("an answer at the bound is judged", kept.verdicts[0].judge == "support")


@pytest.mark.scenario(OPTIONS)
@pytest.mark.parametrize("budget_ms", [0, -100, True, 1.5, math.nan, math.inf, "300", 10**20,
                                       MAX_BUDGET_MS + 1])
def test_shield_refuses_a_budget_the_api_would_refuse(scenario: Scenario,
                                                      budget_ms: object) -> None:
    llm = ScriptedLLM(respond=lambda _messages: YES)
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(llm)  # type: ignore[assignment]
        with pytest.raises(OptionError) as raised:
            shield.judge(QUESTION, [PASSAGE], SUPPORTED, judges=["support"], rule="support",
                         budget_ms=budget_ms)  # type: ignore[arg-type]
    scenario.check(f"budget_ms={budget_ms!r} is an OptionError naming budget_ms",
                   str(raised.value).startswith("budget_ms must be a whole number")
                   and f"{MAX_BUDGET_MS:,}" in str(raised.value), raised.value)
    scenario.check("no model is asked", llm.seen == [])


@pytest.mark.scenario(OPTIONS)
def test_shield_takes_the_budgets_the_api_takes(scenario: Scenario) -> None:
    with ragshield.Shield.open() as shield:
        shield.models = FakeModels(ScriptedLLM(respond=lambda _messages: YES))  # type: ignore[assignment]
        for budget_ms in (1, MAX_BUDGET_MS):
            decision = shield.judge(QUESTION, [PASSAGE], SUPPORTED, judges=["support"],
                                    rule="support", budget_ms=budget_ms)
            scenario.check(f"budget_ms={budget_ms:,} is taken", decision.rule == "support")


def _bundle_with_claims(store: Store, path: Path, claims: int) -> tuple[Path, str, list]:
    """A synthetic run's bundle whose first verdict is a support verdict of `claims` claims."""
    run_id = fill_synthetic_run(store, 3, ["trivial"], seed=5)
    dataset = get_run(store, run_id).dataset
    samples = [load_sample(store, dataset, s.id) for s in list_samples(store, dataset)]
    exported = export_run(store, run_id, path)
    with lzma.open(exported, "rt", encoding="utf-8") as handle:
        body = json.load(handle)
    verdict = body["answers"][0]["verdicts"][0]
    verdict["judge"] = "support"
    verdict["details"] = {"threshold": 0.5, "claims": [
        {"start": 0, "end": 1, "text": "x" * 50, "score": 0.1, "supported": False,
         "passage": 0}] * claims}
    with lzma.open(exported, "wt", encoding="utf-8") as handle:
        json.dump(body, handle)
    return exported, dataset, samples


@pytest.mark.scenario(BUNDLES)
def test_a_bundle_with_more_claims_than_the_judge_writes_is_refused(
        scenario: Scenario, sqlite_store: Store, tmp_path: Path) -> None:
    path, dataset, samples = _bundle_with_claims(sqlite_store, tmp_path / "run.json.xz", 93_000)
    target = open_store(f"sqlite:///{tmp_path / 'target.db'}")
    import_samples(target, dataset, samples)
    with pytest.raises(BundleError) as raised:
        import_run(target, path)
    scenario.check("refused naming the file and the field",
                   str(raised.value) == f"{path}: field answers[0].verdicts[0].details.claims "
                                        f"holds 93,000 claims; a verdict has at most "
                                        f"{MAX_CLAIMS}", raised.value)
    scenario.check("nothing is imported", run_count(target) == 0)


@pytest.mark.scenario(BUNDLES)
def test_browse_shows_no_more_claims_than_the_judge_writes(scenario: Scenario) -> None:
    """A verdict stored before imports were bounded: its case study stays small."""
    text = "x. " * 20_000
    claims = [{"start": i * 3, "end": i * 3 + 2, "text": "x.", "score": 0.1,
               "supported": False, "passage": 0} for i in range(20_000)]
    verdict = {"judge": "support", "keep": False, "score": 0.1, "rationale": "",
               "details": {"threshold": 0.5, "claims": claims}, "trace": []}
    marks = claim_marks(text, [verdict])
    html = answer_html({"text": text}, marks) + verdict_html(verdict)
    scenario.figure("case study HTML of a 20,000-claim verdict, in characters", len(html))
    scenario.check("at most MAX_CLAIMS claims are marked and listed",
                   len(marks) == MAX_CLAIMS and html.count("NOT supported") == MAX_CLAIMS
                   and html.count('class="rs-claim-unsupported"') == MAX_CLAIMS,
                   len(marks))
    scenario.check("the case study stays under 200 kB", len(html) < 200_000, len(html))
