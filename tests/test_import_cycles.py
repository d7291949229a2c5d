"""No modules of ragshield import each other, directly or around a longer loop. Every import
counts, lazy ones inside functions too (a lazy import is still a dependency), so a cycle is
broken by moving the piece both sides need to where it belongs, not by hiding an import."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from tests.code_support import PACKAGE, imports_of


def _module(path: Path) -> str:
    """The module a file of ragshield is; a package's __init__ is the package itself."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of ragshield -> the modules of ragshield it imports."""
    files = {_module(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    return {module: {target for _, target in imports_of(path) if target in files} - {module}
            for module, path in files.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph`, each sorted (Tarjan's algorithm, with
    a stack of its own instead of recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    work: list[tuple[str, Iterator[str]]] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(sorted(graph.get(node, ())))))

    for root in sorted(graph):
        if root not in index:
            visit(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    visit(target)
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while node not in component:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
    return components


def test_no_modules_import_each_other():
    cycles = [component for component in strongly_connected(import_graph())
              if len(component) > 1]
    assert not cycles, ("modules that import each other (move what they share to where it "
                        "belongs):\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles))


def test_the_cycle_finder_finds_each_loop_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d", "f"},
             "f": {"e"}, "g": {"a"}}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d"], ["e", "f"], ["g"]]


def test_the_graph_reads_lazy_imports_and_modules_imported_from_a_package():
    graph = import_graph()
    assert "ragshield.services.shield" in graph["ragshield"]  # under TYPE_CHECKING
    assert "ragshield.strict_json" in graph["ragshield.store.runs"]  # from ragshield import
    assert "ragshield.llm.transformers_backend" in graph["ragshield.judges.nli"]  # lazy
