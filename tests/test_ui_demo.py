"""The Demo tab's handlers, called without a browser: streaming verdicts, badges, decisions
and fallbacks with a scripted model; escaping of hostile passages and model output; the
evidence highlight; retrieval with noise from a real corpus; coverage and risk at a
threshold on a hand-built run; readable errors; and one question through the embedded model."""

from __future__ import annotations

import html
import re
from typing import Iterator

import numpy as np
import pytest

from ragshield.config import DEFAULT_RULE_SELF_READ_REASON, SELF_READ_RULE, Settings
from ragshield.datasets.demo import DEMO_DATASET
from ragshield.judging import rule_of
from ragshield.judges.calibration import QUESTION as CALIBRATION_QUESTION
from ragshield.llm.base import CHAT, LLM, LOGPROBS, LLMError
from ragshield.llm.call_cache import CachedLLM
from ragshield.llm.packaged_models import LARGER_MODEL, SMALLER_MODEL
from ragshield.llm.streaming import text_sink
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.ingest import IngestOptions, ingest_corpus
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.questions.ask_choices import rule_choices, sample_choices
from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from ragshield.services.questions.settlement import rule_reason
from ragshield.services.questions.demo_examples import DemoExample
from ragshield.services.runs.thresholds import score_range, scored_judges, threshold_choice
from ragshield.store.database import Store, open_store
from ragshield.store.runs import RoleAnswer, create_run, save_sample
from ragshield.store.sample_import import import_samples
from ragshield.store.samples import UnknownDatasetError, iter_sample_rows
from ragshield.types import Answer, Passage, Sample, Verdict
from ragshield.ui.context import UiContext
from ragshield.ui.demo_tab import (ABSTAIN, LARGER, NORAG, STORED, DemoForm, PassageFinders,
                                   ask, example_form)
from ragshield.ui.threshold_panel import choice_html, threshold_html
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.retrieval_fixtures import DOCUMENTS, write_jsonl

HOSTILE = [
    Passage(text="Paris is the capital of France. <script>alert('p0')</script>", doc_id="fr"),
    Passage(text="Lyon is big. <img src=x onerror=alert('p1')>", doc_id="ly"),
]
BASE_ANSWER = "Answer: Paris <img src=x onerror=alert('a')>\nEvidence: ## Passage-1 ##"
JUDGES = ("p_true", "calibration", "trivial")  # runs cheapest first: trivial, calibration, p_true


def replies(probability: str = "0.9"):
    """A model that answers, vouches for its answer with `probability` and says yes."""
    def respond(messages) -> ScriptedReply:
        last = messages[-1]["content"]
        if "No passages are given" in last:
            return ScriptedReply("Answer: Rome <b>norag</b>")
        if last == CALIBRATION_QUESTION:
            return ScriptedReply(probability)
        if "Is the proposed answer" in last:
            return ScriptedReply("yes", top={"yes": -0.1, "no": -2.5})
        return ScriptedReply(BASE_ANSWER)
    return respond


@pytest.fixture
def context(settings, tmp_path) -> Iterator[UiContext]:
    # One scripted model answers and judges (judge_model "self"): the default readers would
    # hand pre_answer and p_true to the packaged 1.5B (tests/test_judge_readers.py). It stands
    # for the 0.5B, so that the larger model's fallback has a larger model to ask.
    settings = settings.model_copy(update={"corpora_dir": tmp_path / "corpora",
                                           "judge_model": "self", "model": SMALLER_MODEL})
    store = open_store(settings.database_url)
    import_samples(store, "toy", [Sample(id="q1", question="What is the capital of France?",
                                         passages=HOSTILE, reference_answers=["Paris"])])
    yield UiContext(settings=settings, store=store)
    store.close()


def with_model(context: UiContext, llm: LLM, packaged: str | None = None) -> LLM:
    """Put `llm` where context.llm(packaged) finds it (instead of opening a model)."""
    context.models._opened[packaged] = llm
    return llm


def request(**fields) -> DemoForm:
    base = dict(source=STORED, dataset="toy", sample_id="q1", judges=JUDGES, rule="majority")
    return DemoForm(**{**base, **fields})


def badges(html: str) -> dict[str, str]:
    """judge -> the word on its badge (pending until its verdict arrives)."""
    return dict(re.findall(r'data-judge="([^"]+)"><span class="rs-demo-badge rs-demo-badge-(\w+)"',
                           html))


def decision(html: str) -> str:
    found = re.search(r'rs-demo-decision"><span class="rs-demo-badge rs-demo-badge-(\w+)"', html)
    return found.group(1)


def table_rows(html: str) -> list[list[str]]:
    body = html.split("<tbody>")[1]
    return [re.findall(r"<td>(.*?)</td>", row) for row in body.split("</tr>") if "<td>" in row]


def test_verdicts_stream_in_one_by_one_free_first_then_by_cost(context):
    with_model(context, ScriptedLLM(respond=replies()))
    frames = list(ask(context, request()))
    done = [sum(word != "pending" for word in badges(f).values()) for f in frames]
    assert [n for n in done if n] == sorted(n for n in done if n)  # never goes back
    by_count = {n: badges(f) for n, f in zip(done, frames)}
    assert {1, 2, 3} <= set(by_count)
    # free first; among the cheap ones, the one that continues the answer's conversation
    assert by_count[1] == {"trivial": "keep", "calibration": "pending", "p_true": "pending"}
    assert by_count[2]["calibration"] == "keep" and by_count[2]["p_true"] == "pending"
    assert "Paris" in frames[1] and "rs-demo-answer" not in frames[1]  # passages first
    assert "Done in" in frames[-1] and decision(frames[-1]) == "keep"


def test_the_decision_shows_as_soon_as_the_rules_judge_is_in(context):
    """Rule p_true: after the free judge, p_true runs before calibration (which costs the
    same), and the decision is on the page while calibration is still pending."""
    with_model(context, ScriptedLLM(respond=replies("0.2")))
    frames = list(ask(context, request(rule="p_true")))
    first = next(f for f in frames if "rs-demo-decision" in f)
    assert badges(first) == {"trivial": "keep", "p_true": "keep", "calibration": "pending"}
    assert decision(first) == "keep" and "Judging… 2 of 3 judges done" in first
    assert badges(frames[-1])["calibration"] == "abstain" and decision(frames[-1]) == "keep"
    withheld = list(ask(context, request(rule="calibration")))
    shown = next(f for f in withheld if "rs-demo-decision" in f)
    assert decision(shown) == "abstain" and badges(shown)["p_true"] == "pending"
    assert "Preparing the fallback" not in shown  # p_true still runs first


def test_badges_show_keep_abstain_unavailable_and_error_with_scores_and_costs(context):
    def respond(messages):
        if "Is the proposed answer" in messages[-1]["content"]:
            raise LLMError("server said 503")
        return replies("0.2")(messages)

    with_model(context, ScriptedLLM(respond=respond, capabilities=frozenset({CHAT, LOGPROBS})))
    judges = ("trivial", "calibration", "dual_generation", "p_true")
    final = list(ask(context, request(judges=judges)))[-1]
    assert badges(final) == {"calibration": "abstain", "trivial": "keep",
                             "dual_generation": "unavailable", "p_true": "error"}
    assert "score 0.200" in final and "threshold 0.6" in final
    assert "server said 503" in final and "cannot provide score" in final
    assert "1 call · " in final and "generated tokens" in final  # calibration's cost


@pytest.mark.parametrize("strategy", [ABSTAIN, NORAG])
def test_abstaining_shows_the_chosen_fallback(context, strategy):
    llm = with_model(context, ScriptedLLM(respond=replies("0.2")))
    final = list(ask(context, request(rule="calibration", fallback=strategy)))[-1]
    assert decision(final) == "abstain"
    no_passages = [m for m in llm.seen if "No passages are given" in m[-1]["content"]]
    if strategy == ABSTAIN:
        assert ABSTAIN_MESSAGE.replace("'", "&#x27;") in final and not no_passages
    else:
        assert "Rome &lt;b&gt;norag&lt;/b&gt;" in final and len(no_passages) == 1
        assert "norag answerer on scripted:test-double" in final


def test_a_kept_answer_has_no_fallback(context):
    llm = with_model(context, ScriptedLLM(respond=replies("0.9")))
    final = list(ask(context, request(rule="calibration", fallback=NORAG)))[-1]
    assert decision(final) == "keep" and "rs-demo-fallback" not in final
    assert not any("No passages are given" in m[-1]["content"] for m in llm.seen)


def test_larger_model_mode_falls_back_to_the_packaged_larger_model(context):
    small = with_model(context, ScriptedLLM(respond=replies("0.2")))
    larger = with_model(context, ScriptedLLM(["Answer: Paris, from the larger model"]),
                        LARGER_MODEL)
    final = list(ask(context, request(rule="calibration", fallback=LARGER)))[-1]
    assert decision(final) == "abstain"
    assert len(small.seen) == 3 and len(larger.seen) == 1  # answer + 2 judges; the fallback
    assert "capital of France" in larger.seen[0][-1]["content"]  # same answerer and passages
    assert "Paris, from the larger model" in final.split("rs-demo-fallback")[1]


def test_undecided_rule_shows_undecided_and_the_fallback(context):
    with_model(context, ScriptedLLM(respond=replies(), capabilities=frozenset({CHAT, LOGPROBS})))
    final = list(ask(context, request(judges=("dual_generation",), rule="dual_generation")))[-1]
    assert decision(final) == "undecided" and "rs-demo-fallback" in final


def test_hostile_passages_and_model_output_show_as_text(context):
    with_model(context, ScriptedLLM(respond=replies()))
    for frame in ask(context, request()):
        assert "<script" not in frame and "<img" not in frame and "<b>norag" not in frame
    assert "&lt;script&gt;alert(&#x27;p0&#x27;)&lt;/script&gt;" in frame
    assert "&lt;img src=x onerror=alert(&#x27;p1&#x27;)&gt;" in frame  # passage 1
    assert "Paris &lt;img src=x onerror=alert(&#x27;a&#x27;)&gt;" in frame  # the answer


def test_passages_the_answer_cites_are_highlighted(context):
    with_model(context, ScriptedLLM(respond=replies()))
    final = list(ask(context, request()))[-1]
    classes = re.findall(r'<div class="(rs-demo-passage(?: [^"]*)?)">', final)
    assert classes == ["rs-demo-passage", "rs-demo-passage rs-demo-cited"]


class LetterCounts:
    """A stand-in sentence encoder (letter counts): the tests below retrieve with BM25, so
    the corpus needs vectors but not good ones, and loading MiniLM would cost seconds."""

    def encode(self, sentences: list[str], **options) -> np.ndarray:
        counts = np.array([[text.lower().count(c) + 1 for c in "abcdefghijklmnopqrstuvwxyz"]
                           for text in sentences], dtype=np.float32)
        return counts / np.linalg.norm(counts, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def corpora_dir(tmp_path_factory):
    """A small real corpus "kb" (BM25 index, letter-count vectors)."""
    from ragshield.config import Settings

    folder = tmp_path_factory.mktemp("kb")
    settings = Settings(corpora_dir=folder / "corpora")
    ingest_corpus("kb", [write_jsonl(folder / "kb.jsonl", DOCUMENTS)], settings,
                  IngestOptions(), embedder=Embedder("letter counts", LetterCounts()))
    return settings.corpora_dir


def test_a_typed_question_is_answered_from_retrieved_passages_plus_noise(context, corpora_dir):
    context.settings = context.settings.model_copy(update={"corpora_dir": corpora_dir})
    with_model(context, ScriptedLLM(respond=replies()))
    finders = PassageFinders(context.settings)
    typed = DemoForm(question="Who designed the Eiffel Tower?", corpus="kb", mode="bm25", k=2,
                       noise=1, judges=("trivial",), rule="trivial")
    final = list(ask(context, typed, finders))[-1]
    assert "Passages (3)" in final and "top 2 by bm25 from corpus kb" in final
    assert "Passage-0 · doc eiffel · Eiffel Tower · score" in final
    assert final.count("rs-demo-badge-noise") == 1
    stored = list(ask(context, request(corpus="kb", noise=2, judges=("trivial",),
                                       rule="trivial"), finders))[-1]
    assert "Passages (4)" in stored and stored.count("rs-demo-badge-noise") == 2
    assert "plus 2 random chunks of corpus kb" in stored


@pytest.mark.parametrize(("fields", "message"), [
    ({"source": "type a question", "question": "  "}, "Type a question first"),
    ({"sample_id": None}, "Pick a sample"),
    ({"rule": "counterfactual"},
     "rule &#x27;counterfactual&#x27; must be all, majority, grounded, one of the chosen judges"),
    ({"judges": ()}, "Choose at least one judge"),
    ({"judges": ("oracle",), "rule": "all"}, "unknown judge"),
    ({"answerer": "oracle"}, "unknown answerer"),
    ({"sample_id": "nope"}, "has no sample &#x27;nope&#x27;"),
    ({"dataset": "nope"}, "nope"),
    ({"source": "type a question", "question": "Why?", "corpus": "nowhere", "mode": "bm25"},
     "no corpus &#x27;nowhere&#x27;"),
    ({"noise": 1, "corpus": "nowhere"}, "nowhere"),
])
def test_bad_input_is_a_readable_message(context, fields, message):
    frames = list(ask(context, request(**fields)))
    assert len(frames) <= 2 and 'class="rs-msg rs-msg-error"' in frames[-1]
    assert message in frames[-1] and "Traceback" not in frames[-1]


def test_a_model_failure_while_answering_is_shown_in_the_page(context):
    def down(messages):
        raise LLMError("model server unreachable")

    with_model(context, ScriptedLLM(respond=down))
    final = list(ask(context, request()))[-1]
    assert "rs-msg-error" in final and "model server unreachable" in final
    assert "Stopped by an error." in final


def test_sample_and_rule_choices(context):
    ensure_demo_dataset(context.store)
    choices = sample_choices(context.store, DEMO_DATASET)
    label, value = choices[0]
    assert len(choices) == 160 and label.startswith(f"{value}: ")
    with pytest.raises(UnknownDatasetError):
        sample_choices(context.store, "nope")
    assert rule_choices(["p_true", "trivial"], "trivial") == (["majority", "all", "p_true",
                                                               "trivial"], "trivial")
    assert rule_choices(["p_true"], "counterfactual")[1] == "majority"


# -- the threshold panel --------------------------------------------------------------------

SCORES = {"s0": 0.9, "s1": 0.8, "s2": 0.3, "s3": 0.7, "s4": 0.2, "s5": None}  # s5: unavailable


def build_run(store: Store) -> int:
    """s0-s2 answered correctly, s3-s5 wrongly; p_true scores as above, keep = score >= 0.5;
    trivial keeps everything without a score."""
    import_samples(store, "six", [Sample(id=f"s{i}", question=f"Capital of country {i}?",
                                         passages=[Passage(text=f"The capital is City{i}.")],
                                         reference_answers=[f"City{i}"]) for i in range(6)])
    run_id = create_run(store, dataset="six", config={}, seed=0, code_version="test",
                        samples_total=6)
    for row_id, sample in iter_sample_rows(store, "six"):
        i = int(sample.id[1])
        text = f"City{i}" if i < 3 else "Atlantis"
        answer = Answer(answerer="evidence", text=text, raw=text, messages=[])
        score = SCORES[sample.id]
        p_true = (Verdict("p_true", keep=score >= 0.5, score=score) if score is not None
                  else Verdict("p_true", keep=None, available=False, rationale="unavailable"))
        save_sample(store, run_id, row_id, {"main": RoleAnswer(answer, "fake", sample.passages)},
                    [p_true, Verdict("trivial", keep=True)])
    return run_id


def test_threshold_coverage_and_risk_match_hand_counts(store, settings):
    context = UiContext(settings=settings, store=store)
    run_id = build_run(store)
    assert scored_judges(context.tables, run_id) == ["p_true"]
    assert score_range(context.tables, run_id, "p_true").__dict__ == {"low": 0.2, "high": 0.9,
                                                                       "middle": 0.7}
    # 5 decided samples. Own decisions keep s0, s1 (correct) and s3 (wrong): AK 2, UK 1.
    # t = 0.75 keeps s0, s1: AK 2, UK 0.  t = 0.25 keeps s0-s3: AK 3, UK 1.
    assert table_rows(threshold_html(context, run_id, "p_true", 0.75)) == [
        ["the judge&#x27;s own", "3 of 5", "0.600", "0.333", "2", "1"],
        ["score &gt;= 0.75", "2 of 5", "0.400", "0.000", "2", "0"]]
    assert table_rows(threshold_html(context, run_id, "p_true", 0.25))[1] == [
        "score &gt;= 0.25", "4 of 5", "0.800", "0.250", "3", "1"]
    assert table_rows(threshold_html(context, run_id, "p_true", 0.95))[1][3] == "n/a"
    choice = threshold_choice(store, context.tables)
    assert (choice.run_id, choice.judge, choice.scores.middle) == (run_id, "p_true", 0.7)
    assert "3 of 5" in choice_html(context, choice)
    for judge in ("trivial", "oracle", None):
        html = threshold_html(context, run_id, judge, 0.5)
        assert "rs-msg-error" in html and "judges with scores: p_true" in html
    assert "no run with id 99" in threshold_html(context, 99, "p_true", 0.5)


def test_an_empty_store_says_there_are_no_runs(context):
    choice = threshold_choice(context.store, context.tables)
    assert choice.runs == [] and choice.judges == []
    assert "No stored runs yet" in choice_html(context, choice)
    assert "No stored runs yet" in threshold_html(context, None, None, 0.5)


# -- the real model -----------------------------------------------------------------------

SHORT_DEMO_SAMPLE = "clapnq:-3438511383213545458"  # one short passage: a quick prompt


def test_one_demo_sample_through_the_embedded_model(context, embedded_llm):
    ensure_demo_dataset(context.store)
    with_model(context, embedded_llm)
    frames = list(ask(context, request(dataset=DEMO_DATASET, sample_id=SHORT_DEMO_SAMPLE,
                                       judges=("token_prob", "p_true"), rule="majority")))
    final = frames[-1]
    written = [re.search(r'rs-demo-partial">(.*?)</div>', f, re.S).group(1)
               for f in frames if "Answer (being written)" in f]
    assert len(written) >= 2 and all(b.startswith(a) for a, b in zip(written, written[1:]))
    found = badges(final)
    assert set(found) == {"token_prob", "p_true"}
    assert set(found.values()) <= {"keep", "abstain"}
    assert "qwen" in final.lower() and "Done in" in final


# -- the named endpoints, through Gradio ----------------------------------------------------

def test_named_endpoints_stream_and_answer_through_gradio(context):
    import gradio as gr
    from gradio_client import Client

    from ragshield.ui import demo_tab
    from tests.conftest import free_port

    with_model(context, ScriptedLLM(respond=replies("0.2")))
    with gr.Blocks() as blocks, gr.Tab(demo_tab.TITLE) as tab:
        demo_tab.build(context, blocks, tab)
    blocks.queue()
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1",
                              server_port=free_port(), quiet=True)
    try:
        client = Client(url, verbose=False)
        assert {"/demo_ask", "/demo_samples", "/demo_threshold", "/demo_runs"} <= set(
            client.view_api(return_format="dict")["named_endpoints"])
        _, notice = client.predict("toy", api_name="/demo_samples")
        assert "Dataset toy: 1 sample;" in notice
        job = client.submit(STORED, "", "toy", "q1", "demo", "hybrid", 3, 0, "evidence",
                            list(JUDGES), "calibration", NORAG, "configured",
                            api_name="/demo_ask")
        frames = list(job)
        assert len(frames) > 4 and decision(frames[-1]) == "abstain"
        assert "Rome &lt;b&gt;norag&lt;/b&gt;" in frames[-1]
        bad_rule = client.predict(STORED, "", "toy", "q1", "demo", "hybrid", 3, 0, "evidence",
                                  ["trivial"], "p_true", ABSTAIN, "configured",
                                  api_name="/demo_ask")
        assert "rs-msg-error" in bad_rule and "one of the chosen judges" in bad_rule
        assert "No stored runs yet" in client.predict(None, None, 0.5,
                                                      api_name="/demo_threshold")
    finally:
        blocks.close()


def test_every_ask_is_kept_in_a_live_run_and_shows_up_in_browse_and_the_queue(context,
                                                                              corpora_dir):
    from ragshield.pipeline import LiveRunError, execute_run
    from ragshield.services.questions.live_runs import LIVE_DATASET
    from ragshield.services.runs.browse import BrowseFrames
    from ragshield.store.annotation_queue import next_sample
    from ragshield.store.labels import add_annotator
    from ragshield.store.runs import get_run, list_runs
    from ragshield.ui.browse_tab import browse_detail, browse_filter

    context.settings = context.settings.model_copy(update={"corpora_dir": corpora_dir})
    with_model(context, ScriptedLLM(respond=replies("0.1")))
    typed = DemoForm(question="Who designed the Eiffel Tower?", corpus="kb", mode="bm25", k=2,
                     judges=JUDGES, rule="calibration", fallback=NORAG)
    first = list(ask(context, typed))[-1]
    again = list(ask(context, typed))[-1]
    stored = list(ask(context, request(noise=1, corpus="kb")))[-1]
    runs = {run.name: run for run in list_runs(context.store)}
    live = [run for name, run in runs.items() if name and name.startswith("live ")]
    assert "Kept as sample q-" in first and f"dataset {LIVE_DATASET}" in first
    assert "Already kept today with these settings" in again
    assert "Kept as sample q1 of dataset toy" in stored
    assert sorted(run.dataset for run in live) == [LIVE_DATASET, "toy"]
    typed_run = next(run for run in live if run.dataset == LIVE_DATASET)
    assert typed_run.total == 1 and get_run(context.store, typed_run.id).status == "live"
    # Browse lists the typed question, and its case study holds the answer, the verdicts
    # and the No-RAG fallback that was shown instead.
    frames = BrowseFrames()
    _, rows, _ = browse_filter(context, frames, typed_run.id, "auto", None, None, False, "any",
                               False, None)
    assert list(rows["question"]) == ["Who designed the Eiffel Tower?"]
    detail = browse_detail(context, frames, typed_run.id, "auto", rows["sample"].iloc[0])
    assert "Paris" in detail and "calibration" in detail and "Rome" in detail
    # The stored sample's live answer kept the passages it was shown: its 2 and 1 of noise.
    toy_run = next(run for run in live if run.dataset == "toy")
    toy_detail = browse_detail(context, frames, toy_run.id, "auto", "q1")
    assert "Passage-2" in toy_detail
    # The label queue offers the asked question; a live run cannot be "resumed".
    add_annotator(context.store, "ann")
    assert next_sample(context.store, LIVE_DATASET, "ann") == rows["sample"].iloc[0]
    with pytest.raises(LiveRunError, match="live run"):
        execute_run(context.store, typed_run.id, context.settings)


class WritingLLM(ScriptedLLM):
    """A scripted model that hands the text sink its reply a few characters at a time, as
    the embedded backend does token by token."""

    def chat(self, messages, **options):
        completion = super().chat(messages, **options)
        sink = text_sink()
        if sink is not None:
            for end in range(4, len(completion.text) + 4, 4):
                sink(completion.text[:end])
        return completion


def test_the_answer_shows_while_it_is_written(context):
    with_model(context, WritingLLM(respond=replies()))
    frames = list(ask(context, request()))
    writing = [f for f in frames if "Answer (being written)" in f]
    assert len(writing) >= 5 and "Writing the answer" in writing[0]
    texts = [re.search(r'rs-demo-partial">(.*?)</div>', f, re.S).group(1) for f in writing]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:]))  # it only grows
    assert texts[0] == "Answ" and "Paris &lt;img" in texts[-1]  # escaped as it goes
    first_verdict = next(i for i, f in enumerate(frames) if "rs-demo-badge-keep" in f)
    assert frames.index(writing[-1]) < first_verdict  # judges only judge a written answer
    assert "Answer (being written)" not in frames[-1]  # the parsed answer replaced it


def test_a_stored_question_asked_again_is_replayed_from_the_call_cache(context):
    with_model(context, CachedLLM(ScriptedLLM(respond=replies()), context.store))
    first = list(ask(context, request()))[-1]
    again = list(ask(context, request()))[-1]
    assert "rs-demo-replayed" not in first and "replayed from the call cache" not in first
    assert 'class="rs-demo-replayed"' in again and "replayed from the call cache" in again
    assert decision(again) == decision(first)
    other = list(ask(context, request(answerer="vanilla")))[-1]
    assert "rs-demo-replayed" not in other  # another answerer's prompt: a new call


def test_the_answer_model_is_chosen_by_name(context):
    small = with_model(context, ScriptedLLM(respond=replies()), "smollm2-135m")
    final = list(ask(context, request(model="smollm2-135m")))[-1]
    assert decision(final) == "keep" and len(small.seen) == 3
    assert DemoForm(model="configured").request().model is None
    unknown = list(ask(context, request(model="gpt-9")))[-1]
    assert "unknown model &#x27;gpt-9&#x27;; one of qwen-0.5b, qwen-1.5b, smollm2-135m" in unknown
    same = list(ask(context, request(model=LARGER_MODEL, fallback=LARGER)))[-1]
    assert "already answers: answer with a smaller model" in same


def test_the_judge_model_is_chosen_by_name(context):
    # The configured model writes the answer; the larger one reads for the judges.
    writer = with_model(context, ScriptedLLM(respond=replies()))
    reader = with_model(context, ScriptedLLM(respond=replies()), LARGER_MODEL)
    final = list(ask(context, request(judges=("trivial", "p_true"), rule="p_true",
                                      judge_model=LARGER_MODEL)))[-1]
    assert decision(final) == "keep"
    assert len(writer.seen) == 1 and len(reader.seen) == 1  # the answer; p_true's question
    assert "Is the proposed answer" in reader.seen[0][-1]["content"]
    assert DemoForm(judge_model="configured").request().judge_model is None
    unknown = list(ask(context, request(judge_model="gpt-9")))[-1]
    assert "unknown judge model &#x27;gpt-9&#x27;; one of qwen-0.5b" in unknown


def test_the_decision_says_why_its_rule_decides(context):
    with_model(context, ScriptedLLM(respond=replies()))
    chosen = html.unescape(list(ask(context, request()))[-1])
    assert "Why this rule: chosen for this question." in chosen
    # Every judge reads from the answering model here: the default is the judge measured
    # best for that reader, and the page says so.
    default = html.unescape(list(ask(context, request(
        judges=("trivial", "p_true", SELF_READ_RULE), rule=SELF_READ_RULE)))[-1])
    assert f"Why this rule: {DEFAULT_RULE_SELF_READ_REASON[:80]}" in default
    assert rule_reason(rule_of("p_true"), "p_true", Settings(decision_rule="p_true")) == (
        "the rule this server is set up with (RAGSHIELD_DECISION_RULE)")
    assert rule_reason(rule_of("majority"), None, Settings(), "the default rule 'x' is not "
                       "among the chosen judges; deciding by majority").startswith(
                           "the default rule 'x'")


def test_an_example_fills_the_form_with_the_demo_defaults():
    example = DemoExample("Noise flips it", "demo:1", "Who?", noise=2)
    values = example_form(example, Settings(decision_rule="counterfactual"))
    form = DemoForm(*values)
    asked = form.request()
    assert asked.sample_id == "demo:1" and asked.question is None and asked.noise == 2
    assert asked.rule == "counterfactual" and "counterfactual" in asked.judges
    assert asked.model is None and asked.fallback == ABSTAIN
