"""One sample of a run as a case study: everything the answerer and the judges saw and said,
rendered as HTML from ragshield.services.runs.case_studies.CaseStudy. Every piece of dataset and
model text goes through `esc`.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pandas as pd

from ragshield.services.questions.conversation import HISTORY
from ragshield.services.annotation.labelling import LabelRecord
from ragshield.services.questions.claim_marks import ClaimMark
from ragshield.services.rendering import fmt
from ragshield.services.runs.answer_panel import AnswerPanel
from ragshield.services.runs.case_studies import MAIN, CaseStudy, judge_detail_view
from ragshield.types import DetailTable, evidence_labels, keep_word, passage_label
from ragshield.ui.html_render import conversation_html, esc, marked_answer_html, table_html

ROLE_TITLES = {"norag": "No-RAG answer (no passages)", "larger": "Larger model's answer"}


# -- small HTML pieces -------------------------------------------------------------------

def _pre(text: Any) -> str:
    return f'<pre class="rs-cs-pre">{esc(text)}</pre>'


def _json(value: Any) -> str:
    return _pre(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _details(summary: str, body: str, *, open_: bool = False) -> str:
    """`summary` is plain text; `body` is HTML already escaped."""
    return (f'<details class="rs-cs-details"{" open" if open_ else ""}>'
            f"<summary>{esc(summary)}</summary>{body}</details>")


def _section(title: str, body: str) -> str:
    return f'<section class="rs-cs-section"><h4>{esc(title)}</h4>{body}</section>'


def _yes_no(value: Any) -> str:
    """yes / no, or "-" for an unknown (None or a missing value in a frame)."""
    return "-" if value is None or pd.isna(value) else "yes" if value else "no"


def _mapping(value: Any) -> dict[Any, Any]:
    """`value` when it is a dict, else empty: a run bundle from elsewhere may hold anything."""
    return value if isinstance(value, dict) else {}


def messages_html(messages: Sequence[dict[str, Any]]) -> str:
    return "".join(f'<div class="rs-cs-msg"><b>{esc(m.get("role"))}</b>{_pre(m.get("content"))}'
                   f"</div>" for m in messages)


def call_html(call: dict[str, Any]) -> str:
    """One model call of a trace: its prompt, raw output, parsed value, tokens and time."""
    cost = (f"{call.get('prompt_tokens', 0)} prompt + {call.get('completion_tokens', 0)} "
            f"completion tokens ({call.get('cached_prompt_tokens', 0)} cached), "
            f"{fmt(call.get('seconds') or 0, 2)} s"
            f"{', from the call cache' if call.get('cache_hit') else ''}")
    by = f" by {call['model']}" if call.get("model") else ""
    parts = [f"<p>{esc(call.get('kind', 'chat'))} call{esc(by)}; {esc(cost)}</p>",
             _details("Messages", messages_html(call.get("messages") or [])),
             "<b>Raw output</b>", _pre(call.get("output")),
             "<b>Parsed</b>", _json(call.get("parsed"))]
    if call.get("parse_error"):
        parts.append(f'<p class="rs-cs-flag">parse error: {esc(call["parse_error"])}</p>')
    if call.get("logprobs"):
        rows = [[t.get("token"), fmt(t.get("logprob")),
                 ", ".join(f"{k!r}: {fmt(v, 2)}" for k, v in _mapping(t.get("top")).items())]
                for t in call["logprobs"] if isinstance(t, dict)]
        parts.append(_details(f"Token log-probs ({len(rows)})",
                              table_html(["token", "log-prob", "top alternatives"], rows)))
    return _details(f"{call.get('purpose', 'call')}", "".join(parts))


def trace_html(trace: Sequence[dict[str, Any]]) -> str:
    if not trace:
        return "<p>No model call.</p>"
    return "".join(call_html(call) for call in trace)


# -- the sections ------------------------------------------------------------------------

def _sample_section(study: CaseStudy) -> str:
    case, decision = study.case, study.decision
    sample = case.sample
    refs = [str(r) for r in sample.get("reference_answers") or []]
    rows = [["sample", sample["external_id"]], ["dataset", case.run.dataset],
            ["run", case.run.id], ["reference answers", " | ".join(refs) or "-"],
            ["dataset says answerable", _yes_no(sample.get("answerable"))]]
    if decision is not None:
        rows.append([f"decision ({decision.rule})",
                     f"{keep_word(decision.keep)}: {decision.reason}"])
    meta = sample.get("meta") or {}
    rows += [[key, value] for key, value in meta.items() if key != HISTORY]
    return _section("Question", conversation_html(meta) + _pre(sample["question"])
                    + table_html(["field", "value"], rows))


def passages_html(passages: Sequence[dict[str, Any]], cited: Sequence[Any]) -> str:
    if not passages:
        return "<p>No passages.</p>"
    blocks = []
    for index, passage in enumerate(passages):
        label = passage_label(index)
        facts = [label, *(["cited by the answer"] if index in cited else []),
                 *([f"title: {passage['title']}"] if passage.get("title") else []),
                 *([f"doc: {passage['doc_id']}"] if passage.get("doc_id") else []),
                 *([f"score: {fmt(passage['score'])}"] if passage.get("score") is not None
                   else [])]
        css = "rs-cs-passage rs-cs-cited" if index in cited else "rs-cs-passage"
        blocks.append(f'<div class="{css}"><b>{esc(" · ".join(facts))}</b>'
                      f"{_pre(passage.get('text'))}</div>")
    return "".join(blocks)


def answer_html(answer: dict[str, Any], marks: Sequence[ClaimMark] = ()) -> str:
    """An answer row: its text (its unsupported sentences marked, when the support judge
    checked it), evidence, flags, raw reply, prompt and calls."""
    marked = (f'<div class="rs-cs-answer">{marked_answer_html(answer.get("text") or "", marks)}'
              f"</div>" if marks else "")
    rows = [["answer", answer.get("text") or ""],
            ["evidence", evidence_labels(answer.get("evidence"))],
            ["cites internal knowledge", _yes_no(answer.get("cites_internal_knowledge"))],
            ["refusal", _yes_no(answer.get("refusal"))],
            ["answerer", answer.get("answerer")], ["model", answer.get("model") or "-"],
            ["tokens", f"{answer.get('prompt_tokens', 0)} prompt + "
                       f"{answer.get('completion_tokens', 0)} completion"],
            ["seconds", f"{float(answer.get('seconds') or 0):.2f}"]]
    for field in ("parse_error", "error"):
        if answer.get(field):
            rows.append([field.replace("_", " "), answer[field]])
    return (marked + table_html(["field", "value"], rows) + "<b>Raw reply</b>"
            + _pre(answer.get("raw"))
            + _details("Prompt messages", messages_html(answer.get("messages") or []))
            + _details(f"Calls ({len(answer.get('trace') or [])})",
                       trace_html(answer.get("trace") or [])))


def _verdict_summary(verdicts: Sequence[dict[str, Any]], folds: dict[str, str]) -> str:
    rows = [[v["judge"], keep_word(v["keep"]),
             "-" if v["score"] is None else f"{v['score']:.3f}", folds.get(v["judge"], "-"),
             "yes" if v["available"] else "no", v["error"] or "", v["parse_error"] or "",
             v["rationale"] or "", v["calls"],
             f"{v['prompt_tokens']} + {v['completion_tokens']} "
             f"({v['cached_prompt_tokens']} cached)",
             f"{float(v['seconds'] or 0):.2f}"]
            for v in verdicts]
    return table_html(["judge", "keep", "score", "fold", "available", "error", "parse error",
                       "rationale", "calls", "tokens", "seconds"], rows)


def _cell(value: Any) -> Any:
    return _yes_no(value) if value is None or isinstance(value, bool) else value


def detail_html(tables: Sequence[DetailTable]) -> str:
    """A judge's own view of its details (Judge.detail_view), every value escaped."""
    return "".join(
        f'<div class="rs-cs-detail"><b>{esc(table.title)}</b>'
        + table_html(table.columns, [[_cell(v) for v in row] for row in table.rows])
        + (_details("Texts", "".join(f"<b>{esc(caption)}</b>{_pre(text)}"
                                      for caption, text in table.texts))
           if table.texts else "")
        + "</div>" for table in tables)


def verdict_html(verdict: dict[str, Any]) -> str:
    """One judge's verdict in full: its own view of the details, then every call."""
    details, trace = verdict.get("details") or {}, verdict.get("trace") or []
    view = judge_detail_view(verdict["judge"], details, trace)
    if view:
        own = detail_html(view)
    else:
        own = "<b>Details</b>" + _json(details) if details else ""
    summary = (f"{verdict['judge']}: {keep_word(verdict['keep'])}"
               + ("" if verdict["score"] is None else f" (score {verdict['score']:.3f})"))
    body = (f"<p>{esc(verdict.get('rationale') or '')}</p>" + own
            + _details(f"Trace ({len(trace)} calls)", trace_html(trace)))
    return _details(summary, body, open_=bool(view))


def labels_html(history: Sequence[LabelRecord]) -> str:
    if not history:
        return "<p>No human label yet.</p>"
    rows = [[record.created_at.strftime("%Y-%m-%d %H:%M:%S"), record.annotator,
             "(retracted)" if record.retracted else record.label,
             _yes_no(record.answer_correct), record.note or ""] for record in history]
    return table_html(["time", "annotator", "label", "answer correct", "note"], rows)


def _truth_html(truth: str, frame_row: pd.Series | None, sample_row: pd.Series | None) -> str:
    """The labels the folds rest on: the sample's row of the run tables under `truth`."""
    rows: list[list[Any]] = [["truth", truth]]
    if sample_row is not None:
        label = sample_row["human_label"]
        rows += [["answer correct (answerable, for the folds)",
                  _yes_no(sample_row["answer_correct"])],
                 ["passages support an answer", _yes_no(sample_row["passages_support"])],
                 ["automatic: answer correct", _yes_no(sample_row["auto_correct"])],
                 ["human label (majority)", label if isinstance(label, str) else "-"],
                 ["annotators", sample_row["annotators"]]]
    if frame_row is not None:
        rows += [["human label differs from automatic", _yes_no(frame_row["human_differs"])],
                 ["judges disagree", _yes_no(frame_row["disagree"])]]
    return table_html(["field", "value"], rows)


def _highlighted(text: str, spans: Sequence[tuple[int, int]]) -> str:
    parts, position = [], 0
    for start, end in spans:
        parts += [esc(text[position:start]), f"<mark>{esc(text[start:end])}</mark>"]
        position = end
    return "".join(parts) + esc(text[position:])


def panel_html(panel: AnswerPanel) -> str:
    """The answer as a person shows it on a screen: question, marked answer, the outcome and
    its one reason, the passages with their supporting sentences highlighted."""
    passages = "".join(
        f'<div class="rs-panel-passage"><b>{esc(passage_label(index))}'
        f'{esc(" · " + passage.title) if passage.title else ""}</b>'
        f"<div>{_highlighted(passage.text, passage.highlights)}</div></div>"
        for index, passage in enumerate(panel.passages))
    return (f'<div class="rs-panel" data-outcome="{esc(panel.outcome)}">'
            f'<div class="rs-panel-question">{esc(panel.question)}</div>'
            f'<div class="rs-panel-answer">{marked_answer_html(panel.answer, panel.marks)}</div>'
            f'<div class="rs-panel-outcome">{esc(panel.reason)}</div>'
            f'<details class="rs-panel-passages" open><summary>Passages (the sentences that '
            f"support the answer highlighted)</summary>{passages or esc('No passages.')}"
            "</details></div>")


def case_study_html(study: CaseStudy) -> str:
    """The whole case study: each judge's fold comes from the sample's row of the Browse
    frame, the labels behind the folds from its row of the run tables under the truth."""
    case = study.case
    main = case.answers[MAIN]
    others = "".join(_section(ROLE_TITLES.get(role, f"{role} answer"), answer_html(answer))
                     for role, answer in case.answers.items() if role != MAIN)
    panel = ("" if study.panel is None else
             _section("For a screen: the answer at a glance", panel_html(study.panel)))
    return ('<div class="rs-case">'
            + panel
            + _sample_section(study)
            + _section("Passages shown to the answerer",
                       passages_html(main.get("passages") or [], main.get("evidence") or []))
            + _section("Answer", answer_html(main, study.panel.marks if study.panel else ()))
            + _section("Ground truth", _truth_html(study.truth, study.frame_row,
                                                   study.sample_row))
            + _section("Verdicts", _verdict_summary(case.verdicts, study.folds)
                       + "".join(verdict_html(v) for v in case.verdicts))
            + others
            + _section("Human labels (history, oldest first)", labels_html(study.history))
            + "</div>")
