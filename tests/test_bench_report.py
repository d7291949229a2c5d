"""The index at the top of docs/BENCHMARKS.md and QUALITY.md (scripts/bench_report.py): the
newest section of each benchmark, linked by the anchor GitHub gives its heading, written in
place of the old index and never twice."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_report  # noqa: E402  (the scripts import their neighbours by name)

PAGE = """# Benchmarks

Intro.

## UI (2026-11-30 10:00 UTC)

old

## Guard, judge (2026-12-02 21:00 UTC)

x

## UI (2026-12-03 12:48 UTC)

new

## Speed, by hand (2026-12-01, issue 58)

z
"""


def test_the_index_links_the_newest_section_of_each_benchmark():
    once = bench_report.with_index(PAGE)
    assert once.index(bench_report.INDEX_START) < once.index("## UI (2026-11-30")
    table = once.split(bench_report.INDEX_START, 1)[1].split(bench_report.INDEX_END, 1)[0]
    assert table.count("| [") == 3
    assert "| [Speed, by hand](#speed-by-hand-2026-12-01-issue-58) | 2026-12-01, issue 58 |" \
        in table
    assert "| [UI](#ui-2026-12-03-1248-utc) | 2026-12-03 12:48 UTC |" in table
    assert "| [Guard, judge](#guard-judge-2026-12-02-2100-utc) |" in table
    assert table.index("[UI]") < table.index("[Guard, judge]")  # newest first
    again = bench_report.with_index(once + "\n## Idle (2026-12-04 09:00 UTC)\n\ny\n")
    assert again.count(bench_report.INDEX_START) == 1
    assert "[Idle](#idle-2026-12-04-0900-utc)" in again


def test_the_shipped_pages_carry_their_index_up_to_date():
    for page in (bench_report.BENCHMARKS_MD, bench_report.QUALITY_MD):
        text = page.read_text(encoding="utf-8")
        assert bench_report.with_index(text, bench_report.current_for(page)) == text, (
            f"{page.name}: python scripts/bench_report.py --index")


def test_todays_figures_read_every_shipped_record_and_say_what_is_missing(tmp_path):
    import current_figures

    for rows in (current_figures.QUALITY, current_figures.BENCHMARKS):
        table = current_figures.current_table(rows)
        assert table.count("\n| ") == len(rows) + 1  # the header and one row a record
        assert "cannot read" not in table and "no result yet" not in table
    (tmp_path / "ui.json").write_text('{"date": "2026-12-03", "rows": [{"what": "x"}]}')
    missing, broken = current_figures.current_table(
        [("tests.json", "Tests", current_figures.test_lanes),
         ("ui.json", "App views", current_figures.interface)], tmp_path).splitlines()[-2:]
    assert "| Tests | no result yet | - |" in missing
    assert "| App views | cannot read its result (KeyError: 'p95_ms') | - |" in broken
