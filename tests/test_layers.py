"""The package's layers, bottom up: lib (functions of data), config (the run's settings, which
builds lib's parameter objects), stages (the run folder), then pipeline, notebooks and the
command line; a module imports only its own layer or lower ones, and no import cycle anywhere."""

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
    if module.startswith("spacelm.lib"):
        return 0
    if module.startswith("spacelm.config"):
        return 1
    if module.startswith("spacelm.stages"):
        return 2
    return 3  # spacelm, spacelm.cli, spacelm.pipeline, spacelm.notebooks


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


def _against_layers(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, what it imports) for every import of a higher layer (the package itself and a
    package importing its own submodules excepted)."""
    return [
        (m, d)
        for m, deps in graph.items()
        for d in deps
        if _layer(d) > _layer(m) and not (m == "spacelm" or d.startswith(m + "."))
    ]


def test_lower_layers_never_import_higher_ones():
    bad = _against_layers(_imports())
    assert not bad, f"imports against the layers: {bad}"


def test_config_sits_above_lib():
    """The rule itself: config may import lib; lib may import neither config nor stages."""
    assert _against_layers({"spacelm.config.schema": {"spacelm.lib.retrieval.systems"}}) == []
    graph = {
        "spacelm.lib.retrieval.systems": {"spacelm.config", "spacelm.stages.base"},
        "spacelm.config": {"spacelm.cli"},
    }
    assert sorted(_against_layers(graph)) == [
        ("spacelm.config", "spacelm.cli"),
        ("spacelm.lib.retrieval.systems", "spacelm.config"),
        ("spacelm.lib.retrieval.systems", "spacelm.stages.base"),
    ]


def test_the_library_never_imports_the_config():
    """No module under spacelm/lib imports spacelm.config: at the top, under TYPE_CHECKING or
    inside a function (`_imports` reads every import statement in the source)."""
    bad = sorted(
        (m, d)
        for m, deps in _imports().items()
        if m.startswith("spacelm.lib")
        for d in deps
        if d == "spacelm.config" or d.startswith("spacelm.config.")
    )
    assert not bad, f"the library imports the config: {bad}"


def test_the_package_imports():
    import importlib

    for m in _imports():
        importlib.import_module(m)
