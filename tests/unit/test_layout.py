"""The package layout (docs/architecture.md#layout): no import cycles, between modules or
between packages, counting imports inside functions too; and nothing in the wheel
imports the tests' support code."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "scholarflow"


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import a run can execute: TYPE_CHECKING blocks are left out."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            edges[name] |= {t for t in targets if t in modules and t != name}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _package(module: str) -> str:
    """`scholarflow.retrieval.index.bm25` -> `scholarflow.retrieval`; top-level modules
    stand for themselves."""
    return ".".join(module.split(".")[:2])


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert _cycles(_graph()) == []


def test_packages_depend_on_each_other_one_way() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        packages.setdefault(_package(module), set()).update(
            _package(t) for t in targets if _package(t) != _package(module))
    assert _cycles(packages) == []


def test_the_wheel_does_not_import_the_tests() -> None:
    offenders = [name for name, path in _modules().items()
                 for node in _imports(ast.parse(path.read_text(encoding="utf-8")))
                 if any(n.split(".")[0] == "tests" for n in (
                     [a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""]))]
    assert offenders == []
