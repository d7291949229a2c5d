"""Imports flow one way: every module of ragshield imports only modules of its own layer or
below, per the layer order written once here and in docs/ARCHITECTURE.md. The faces (the CLI,
the web app, the HTTP API) sit on top and do not import each other. Imports inside functions
count too: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path
from tests.code_support import PACKAGE, imports_of


# Lowest first. A name is a top-level module or package of ragshield.
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"types", "config", "home", "names", "errors", "strict_json", "version",
              "construct", "refusal", "html_to_markdown", "holdout", "csv_fields",
              "output_files", "claims", "conversation"}),
    ("metrics", {"metrics"}),
    ("datasets", {"datasets"}),  # files -> Samples; they do not write to the store
    ("store", {"store"}),
    ("llm", {"llm"}),  # the call cache lives in the store
    ("retrieval", {"retrieval"}),
    ("answerers and judges", {"answerers", "judges"}),
    ("engines", {"judging", "decision_rule", "judge_budget", "grading", "run_config", "pipeline",
                 "evaluation", "reports", "label_agreement", "doctor", "verdict_files", "policies",
                 "fitted_readers"}),
    ("services", {"services"}),
    ("web", {"web"}),  # what the two HTTP faces share
    ("faces", {"cli", "ui", "api", "__main__"}),
    ("testing", {"testing"}),  # helpers for the tests and benchmarks: servers, clients
]
FACES = {"cli", "ui", "api"}
# The one module that puts faces together: `ragshield serve` mounts the web app into the API.
COMPOSES_FACES = {"ragshield/cli/serve.py"}
# All that a face may import of ragshield (docs/ARCHITECTURE.md): the services, the types,
# the settings, the errors and the shared HTTP helpers; and the package root (its version).
FACE_ALLOWED = ("ragshield.services", "ragshield.types", "ragshield.config",
                "ragshield.errors", "ragshield.web")
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}


def _part(module: str) -> str:
    """The top-level part of a ragshield module name ("ragshield.store.labels" -> "store")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> list[tuple[Path, str]]:
    return [(path, _part("ragshield." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)))
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_every_top_level_module_has_a_layer():
    unplaced = sorted({part for _, part in _modules() if part != "__init__" and part not in RANK})
    assert not unplaced, f"add these to a layer in LAYERS and docs/ARCHITECTURE.md: {unplaced}"


def test_no_module_imports_a_higher_layer_or_another_face():
    upward = []
    for path, part in _modules():
        if part == "__init__":
            continue
        for line, module in imports_of(path):
            target = _part(module)
            if target == "__init__":
                continue
            crossing = (part in FACES and target in FACES and target != part
                        and str(path.relative_to(PACKAGE.parent)) not in COMPOSES_FACES)
            if RANK.get(target, -1) > RANK[part] or crossing:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({part}) imports "
                              f"{module} ({target})")
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def _face_may_import(module: str, face: str, composes: bool = False) -> bool:
    own = [f"ragshield.{name}" for name in (FACES if composes else {face})]
    return module in ("ragshield", "ragshield.__version__") or any(
        module == allowed or module.startswith(allowed + ".")
        for allowed in (*FACE_ALLOWED, *own))


def test_faces_import_only_services_types_settings_and_errors():
    reaching = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
                for path, part in _modules() if part in FACES
                for line, module in imports_of(path)
                if not _face_may_import(module, part, str(path.relative_to(PACKAGE.parent))
                                        in COMPOSES_FACES)]
    assert not reaching, "faces that bypass ragshield.services:\n" + "\n".join(reaching)


def test_the_face_rule_reads_every_kind_of_import(tmp_path):
    module = tmp_path / "face.py"
    module.write_text("import ragshield.store.database\nfrom ragshield import judging\n"
                      "def f():\n    from ragshield.llm.base import LLM\n"
                      "from ragshield.services.asking import ask\nfrom ragshield.ui import x\n")
    names = sorted(name for _, name in imports_of(module))
    assert names == ["ragshield.judging", "ragshield.llm.base", "ragshield.services.asking",
                     "ragshield.store.database", "ragshield.ui"]
    assert [_face_may_import(name, "api") for name in names] == [False, False, True, False,
                                                                  False]
    assert _face_may_import("ragshield.ui", "ui")


def test_the_architecture_doc_states_the_same_layers():
    doc = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for title, names in LAYERS:
        assert title in doc, f"docs/ARCHITECTURE.md does not name the layer {title!r}"
        for name in names - {"__main__"}:
            assert f"`{name}`" in doc, f"docs/ARCHITECTURE.md does not place `{name}`"


def test_scripts_do_not_import_the_tests():
    scripts = PACKAGE.parent / "scripts"
    offending = [f"{path.name}:{node.lineno}" for path in sorted(scripts.glob("*.py"))
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests")]
    assert not offending, f"scripts import test code: {offending}"
