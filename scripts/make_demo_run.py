"""Make the demo run that ships with the app (ragshield/assets/demo/run.json.xz) and the
Demo's example questions (ragshield/assets/demo/examples.json).

    python scripts/make_demo_run.py            # about 1.5 h on 2 cores; resumable
    python scripts/make_demo_run.py --limit 5  # a quick look (writes elsewhere with --out)
    python scripts/make_demo_run.py --rejudge self_consistency  # minutes: see below
    python scripts/make_demo_run.py --new-rule  # minutes: the default rule changed
    python scripts/make_demo_run.py --new-readers  # the default judges' readers changed
    python scripts/make_demo_run.py --new-examples  # what the Demo asks changed

Steps, each picking up where an interrupted one stopped (the work database is kept):
1. a run of the demo set with every judge on the embedded model, with the No-RAG answers
   (fallback curve) and the packaged larger model's answers (switch curve);
2. the example questions: a kept answer, a withheld one, and one that noise flips, each
   asked once as the Demo asks it, so their calls are in the cache too;
3. the bundle: the run with every LLM call of the work database, xz-compressed.

Run it again when a prompt changes: tests/test_demo_run.py fails while the shipped file's
calls no longer match what the code asks. When only the way some judges score changed (their
calls did not), `--rejudge JUDGES` starts the work database from the shipped file instead and
judges the run again with those judges: every call they make is a cache hit. When only the
default decision rule changed (Settings.decision_rule), `--new-rule` starts from the shipped
file too, gives the run the new rule and finds the examples again under it. When only what
the Demo asks changed (its answering model, its default judges or rule: the shipped run keeps
the rule and readers it was made with), `--new-examples` starts from the shipped file and finds
the examples again (the Demo's asks call the model). When the default readers of the judges changed
(judges/judge_readers.py), `--new-readers` starts from the shipped file, gives the run the
readers a new run gets, and judges it again with the judges whose reader changed (their
calls are new: 25 minutes for pre_answer and p_true on the 1.5B), then finds the examples
again.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragshield.config import Settings  # noqa: E402
from ragshield.datasets.demo import DEMO_DATASET, DEMO_EXAMPLES, DEMO_RUN  # noqa: E402
from ragshield.judges.registry import judge_names  # noqa: E402
from ragshield.llm.packaged_models import SMALLER_MODEL  # noqa: E402
from ragshield.run_config import RunConfig, with_readers  # noqa: E402
from ragshield.services.data.demo_run import load_demo_run  # noqa: E402
from ragshield.services.questions.demo_examples import find_examples, write_examples  # noqa: E402
from ragshield.services.runs.runs import add_judges, execute, record_run  # noqa: E402
from ragshield.store.database import open_store  # noqa: E402
from ragshield.store.models import Run  # noqa: E402
from ragshield.store.run_bundle import write_bundle  # noqa: E402
from ragshield.store.runs import delete_verdicts, get_run, set_run_config  # noqa: E402
from ragshield.version import code_version  # noqa: E402

RUN_NAME = "demo run (shipped with the app)"


def demo_config(limit: int | None) -> RunConfig:
    """The shipped run: the 0.5B answers, so that its switch curve shows what handing the
    withheld answers to the 1.5B gains (which answers the Demo where nobody names a model)."""
    return RunConfig(dataset=DEMO_DATASET, limit=limit, judges=["all"], fallback=True,
                     switch=True, model=SMALLER_MODEL)


def new_readers(store, settings: Settings, run_id: int) -> list[str]:
    """Give the run the readers a new run gets (run_config.with_readers); the judges whose
    reader changed, to judge again."""
    config = RunConfig.from_dict(get_run(store, run_id).config)
    settled = with_readers(replace(config, judge_model=None, judge_readers=None,
                                   model=config.model or SMALLER_MODEL), settings)
    set_run_config(store, run_id, settled.to_dict())
    return [judge for judge in config.judges
            if settled.readers().reader(judge) != config.readers().reader(judge)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT / "db" / "demo-run.db",
                        help="the work database (kept between attempts)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--out", type=Path, default=DEMO_RUN)
    parser.add_argument("--examples", type=Path, default=DEMO_EXAMPLES)
    parser.add_argument("--rejudge", default=None, metavar="JUDGES",
                        help="judges (separated by commas) to judge the shipped run again "
                             "with, from a new work database holding the shipped file")
    parser.add_argument("--new-rule", action="store_true",
                        help="give the shipped run the current default rule and find the "
                             "examples again, from a new work database holding the shipped file")
    parser.add_argument("--new-examples", action="store_true",
                        help="find the examples again as the Demo asks them now (its model, "
                             "judges or rule changed), from a new work database holding the "
                             "shipped file; the shipped run is left as it was")
    parser.add_argument("--new-readers", action="store_true",
                        help="give the shipped run the judges' current default readers and "
                             "judge it again with the judges whose reader changed, from a new "
                             "work database holding the shipped file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    # The shipped run shows the defaults: no model or judge model from the environment.
    settings = Settings(database_url=f"sqlite:///{args.db}", backend="embedded", model=None,
                        judge_model=None)
    args.db.parent.mkdir(parents=True, exist_ok=True)
    shipped = args.rejudge or args.new_rule or args.new_readers or args.new_examples
    if shipped and args.db.exists():
        sys.exit(f"--rejudge, --new-rule and --new-readers start from the shipped file: remove "
                 f"{args.db} first")
    store = open_store(settings.database_url)
    run_id = load_demo_run(store, args.out) if shipped else None
    if shipped and run_id is None:
        sys.exit(f"--rejudge, --new-rule and --new-readers need the shipped run to start from: "
                 f"{args.out} is missing")
    if args.new_rule:
        config = get_run(store, run_id).config
        set_run_config(store, run_id, {**config, "rule": settings.decision_rule})
    judges = (new_readers(store, settings, run_id) if args.new_readers
              else judge_names(args.rejudge) if args.rejudge else [])
    if judges:
        print(f"deleted {delete_verdicts(store, run_id, judges)} verdicts of {judges}")
        outcome = add_judges(store, settings, run_id, ",".join(judges), progress=True)
        if outcome.failed:
            sys.exit(f"{outcome.failed} verdicts failed; make the run again without --rejudge "
                     f"or --new-readers")
    with store.session() as session:
        run_id = session.query(Run.id).filter(Run.name == RUN_NAME).scalar()
    if run_id is None:
        run_id = record_run(store, settings, demo_config(args.limit), name=RUN_NAME).run_id
    result = execute(store, settings, run_id, progress=True)
    if result.failures:
        sys.exit(f"{len(result.failures)} samples failed; run the script again to retry them: "
                 f"{result.failures}")
    examples = find_examples(store, settings, run_id)
    write_examples(examples, args.examples)
    path = write_bundle(store, run_id, args.out, code_version=code_version(), calls=True)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) and {args.examples}: "
          f"{', '.join(example.title for example in examples)}")


if __name__ == "__main__":
    main()
