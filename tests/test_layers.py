"""The package's layers: config and lib (functions of data) below stages (the run folder)
below pipeline, notebooks and the command line; and no import cycle anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "spacelm"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """{module: spacelm modules it imports}, relative imports resolved, from the source."""
    graph: dict[str, set[str]] = {}
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = base[: len(base) - node.level + 1]
                    target = ".".join(pkg + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                cands = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            else:
                continue
            for c in cands:
                if c.startswith("spacelm") and c in modules and c != name:
                    deps.add(c)
        graph[name] = deps
    return graph


def _layer(module: str) -> int:
    if module.startswith(("spacelm.lib", "spacelm.config")):
        return 0
    if module.startswith("spacelm.stages"):
        return 1
    return 2  # spacelm, spacelm.cli, spacelm.pipeline, spacelm.notebooks


def test_no_import_cycles():
    graph = _imports()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph[n]):
            if d.startswith(n + "."):
                continue  # a package re-exporting its own submodules is not a cycle
            if state.get(d) == 1:
                cycle = stack[stack.index(d) :] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_lower_layers_never_import_higher_ones():
    bad = [
        (m, d)
        for m, deps in _imports().items()
        for d in deps
        if _layer(d) > _layer(m) and not (m == "spacelm" or d.startswith(m + "."))
    ]
    assert not bad, f"imports against the layers: {bad}"


def test_the_package_imports():
    import importlib

    for m in _imports():
        importlib.import_module(m)
