"""Helpers of the tests that read our own code and docs: the package's imports, the
README's Python example."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragshield"


def imports_of(path: Path, prefix: str = "ragshield") -> list[tuple[int, str]]:
    """(line, module) of every import in the file of a module starting with `prefix`; a name
    imported from a package that is a module of its own is that module
    (`from ragshield.store import runs` -> ragshield.store.runs)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = dict.fromkeys(_module_of(node.module, alias.name) for alias in node.names)
            found += [(node.lineno, name) for name in names if name.startswith(prefix)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names
                      if alias.name.startswith(prefix)]
    return found


def _module_of(module: str, name: str) -> str:
    """`module.name` where that is a module file or a package of ragshield, else `module`."""
    path = PACKAGE.parent.joinpath(*module.split("."), name)
    is_module = path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    return f"{module}.{name}" if is_module else module


README = Path(__file__).resolve().parents[1] / "README.md"


def python_example() -> str:
    """The code block of README's "Use from Python" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use from Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)
