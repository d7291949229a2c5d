"""Today's figures, read from the newest result of each benchmark (docs/bench/*.json): the table
that opens docs/QUALITY.md and docs/BENCHMARKS.md (bench_report.py writes it with the index).
Each row names what was measured, the figure with its spread or interval, and when; a result
that is missing or lacks a field shows as such rather than stopping the page."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parents[1] / "docs" / "bench"

Figure = Callable[[dict[str, Any]], str]


def _spread(values: list[float], percent: bool = False) -> str:
    shown = (lambda v: f"{v:.0%}") if percent else (lambda v: f"{v:.2f}")
    return (f"{shown(statistics.median(values))} [{shown(min(values))}, "
            f"{shown(max(values))}]")


def default_rule(data: dict[str, Any]) -> str:
    fitted = data["summary"]["fitted: pre_answer + support"]
    return (f"wrong among shown {_spread(fitted['times'])} x showing all; right answers shown "
            f"{_spread(fitted['right_shown'], True)} (median set [lowest, highest], "
            f"{len(fitted['right_shown'])} sets)")


def short_answers(data: dict[str, Any]) -> str:
    pooled = data["pooled"]
    kept = [group["distractors kept"] for group in data["groups"].values()]
    return (f"gold answers kept {pooled['gold kept']}, distractors kept "
            f"{pooled['distractors kept']} (pooled [95%]); distractors kept by group "
            f"{_spread(kept, True)}")


def support_judge(data: dict[str, Any]) -> str:
    by_source = list(data["attributionbench"]["support"]["balanced_accuracy"].values())
    sentence = data["lfqa"]["support per sentence"]
    low, high = sentence["interval"]
    return (f"AttributionBench balanced accuracy {_spread(by_source)} (median source "
            f"[lowest, highest]); LFQA per sentence AUROC {sentence['auroc']:.2f} "
            f"[{low:.2f}, {high:.2f}]")


def sentence_labels(data: dict[str, Any]) -> str:
    aurocs = [setting["judge"]["auroc"] for setting in data["settings"].values()]
    return f"support's AUROC against people's majority {_spread(aurocs)} by setting"


def verifier(data: dict[str, Any]) -> str:
    bench = data["figures"]["attributionbench"]
    return (f"AttributionBench balanced accuracy {bench['median_group_ba']:.2f} "
            f"[{bench['lowest']:.2f}, {bench['highest']:.2f}] by source: below support, "
            "not shipped")


def answer_alignment(data: dict[str, Any]) -> str:
    squad = [g["auroc"] for name, g in data["groups"].items() if name.startswith("SQuAD")]
    halueval = next(g["auroc"] for name, g in data["groups"].items()
                    if name.startswith("HaluEval"))
    return (f"gold against same-passage distractors, AUROC by SQuAD article {_spread(squad)}; "
            f"HaluEval {halueval:.2f}")


def support_probe(data: dict[str, Any]) -> str:
    probe, support = data["aurocs"]["probe"], data["aurocs"]["support"]
    shown = "; ".join(f"{name} {probe[name]:.2f} vs {support[name]:.2f}"
                      for name in ("attributionbench", "lfqa_verification") if name in probe)
    better = sum(probe[name] > support[name] for name in probe)
    return (f"AUROC probe vs support: {shown}; above support on {better} of {len(probe)} "
            f"sets ({data['training_claims']} training claims): not shipped")


def policy_promise(data: dict[str, Any]) -> str:
    rows = [row for row in data["rows"] if row.get("fitted")]
    held = sum(bool(row["held"]) for row in rows)
    return (f"the promise held in {held} of the {len(rows)} settings (judge, alpha, starts) "
            f"where a policy was fitted, each over {data['splits']} splits")


def guard_judge(data: dict[str, Any]) -> str:
    """By answer length (`bench_guard.py --judge`): each call over one read of its prompt and
    answer."""
    return "; ".join(f"{length} {statistics.median(part['ratios']):.2f}x" for length, part
                     in data["judge_lengths"].items()) + " the time to read prompt and answer once"


def demo_latency(data: dict[str, Any]) -> str:
    decision = (f", the decision {data['decision_ratio']:.2f}x the prompt read"
                if "decision_ratio" in data else "")
    return (f"first token {data['first_token_ratio']:.2f}x the prompt read, judges "
            f"{data['judges_ratio']:.2f}x the base answer{decision}")


def interface(data: dict[str, Any]) -> str:
    return "; ".join(f"{row['what']} {row['p95_ms'] / 1000:.2f} s" for row in data["rows"])


def test_lanes(data: dict[str, Any]) -> str:
    return f"fast lane {statistics.median(data['fast_s']):.0f} s (median of {len(data['fast_s'])})"


def support_cost(data: dict[str, Any]) -> str:
    return (f"support {data['support_s']:.1f} s for an answer of {data['claims']:.0f} claims, "
            f"pre_answer {data['pre_answer_s']:.1f} s")


# (result file, what it measures, how its figure reads), in the order the pages show them.
QUALITY: list[tuple[str, str, Figure]] = [
    ("default_rule.json", "Default rule, each labelled set held out", default_rule),
    ("short_answers.json", "Short answers against same-passage distractors, articles held out",
     short_answers),
    ("support_quality.json", "Support judge, each source held out", support_judge),
    ("sentence_labels.json", "Support judge against people's sentence labels", sentence_labels),
    ("answer_alignment.json", "Where a short answer sits (trained on NQ), SQuAD held out",
     answer_alignment),
    ("verifier.json", "Trained MiniLM claim verifier, sets held out", verifier),
    ("support_probe.json", "Probe on the 1.5B's hidden state, sets held out", support_probe),
    ("policy_promise.json", "Policy promise on labels it never saw (demo run)", policy_promise),
]
BENCHMARKS: list[tuple[str, str, Figure]] = [
    ("guard-judge.json", "Guard: one /v1/judge call with the default judges, by answer length",
     guard_judge),
    ("demo_latency.json", "Demo: time to the first token and to the verdicts", demo_latency),
    ("support_cost.json", "Support judge's cost", support_cost),
    ("ui.json", "App views, p95", interface),
    ("tests.json", "Tests", test_lanes),
]


def figure_row(name: str, what: str, figure: Figure, folder: Path = BENCH) -> str:
    path = folder / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        shown, when = figure(data), data.get("date", "undated")
    except FileNotFoundError:
        shown, when = "no result yet", "-"
    except (KeyError, TypeError, ValueError, statistics.StatisticsError) as problem:
        shown, when = f"cannot read its result ({type(problem).__name__}: {problem})", "-"
    return f"| {what} | {shown} | {when} | `docs/bench/{name}` |"


def current_table(rows: list[tuple[str, str, Figure]], folder: Path = BENCH) -> str:
    return "\n".join(["Where we stand: the newest result of each benchmark, read from its "
                      "JSON record (`python scripts/bench_report.py --index` writes this "
                      "again).", "", "| measured | figure | when | record |",
                      "|---|---|---|---|",
                      *(figure_row(name, what, figure, folder) for name, what, figure in rows)])
