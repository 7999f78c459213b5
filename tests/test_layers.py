"""The package's layers, bottom up: lib (functions of data), config (the run's settings, which
builds lib's parameter objects), stages (the run folder), then pipeline, notebooks and the
command line; a module imports only its own layer or lower ones, and no import cycle anywhere.

An import is an `import` or `from ... import` statement anywhere in the source (top level, under
TYPE_CHECKING, inside a function) or a dynamic one: a call of `importlib.import_module`,
`import_module` or `__import__` with a string naming a spacelm module. In spacelm/lib, any call
with a string argument naming a module of a higher layer counts too (`getattr(importlib, ...)(
"spacelm.config")`, `find_spec("spacelm.stages")`), since such a string is only ever there to load it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "spacelm"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


DYNAMIC_IMPORTS = {"import_module", "__import__"}
MODULE_STRING = re.compile(r"spacelm(\.\w+)*")


def _called_name(call: ast.Call) -> str:
    """The name a call is made through: `f(...)` and `a.b.f(...)` give "f"."""
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _string_args(call: ast.Call) -> list[str]:
    return [
        a.value
        for a in [*call.args, *(k.value for k in call.keywords)]
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]


def _deps(source: str, name: str, is_pkg: bool, modules) -> set[str]:
    """The spacelm modules (of `modules`) that the source of module `name` imports: statements,
    relative ones resolved, and dynamic imports (`import_module` / `__import__` of a string)."""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    deps = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = base[: len(base) - node.level + 1]
                target = ".".join(pkg + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            cands = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            cands = [a.name for a in node.names]
        elif isinstance(node, ast.Call) and _called_name(node) in DYNAMIC_IMPORTS and _string_args(node):
            target = _string_args(node)[0]
            if target.startswith("."):  # import_module(".x", package): relative to this package
                dots = len(target) - len(target.lstrip("."))
                target = ".".join(base[: len(base) - dots + 1] + [target.lstrip(".")])
            cands = [target]
        else:
            continue
        for c in cands:
            if c.startswith("spacelm") and c in modules and c != name:
                deps.add(c)
    return deps


def _imports() -> dict[str, set[str]]:
    """{module: spacelm modules it imports}, relative imports resolved, from the source."""
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    return {name: _deps(path.read_text(), name, path.name == "__init__.py", modules) for name, path in modules.items()}


def _named_higher_modules(source: str, module: str) -> list[str]:
    """Strings passed to any call in `source` that name a spacelm module (or package) of a layer
    above `module`'s: a library module has no other reason to spell "spacelm.config"."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            out += [
                s
                for s in _string_args(node)
                if MODULE_STRING.fullmatch(s) and _layer(s) > _layer(module) and s != "spacelm"
            ]
    return out


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


def test_the_library_names_no_higher_module_in_a_call():
    """No call in spacelm/lib passes a string naming spacelm.config, spacelm.stages or the layers
    above them (the dynamic imports `_imports` does not see by name)."""
    bad = {
        str(p.relative_to(PKG.parent)): found
        for p in sorted((PKG / "lib").rglob("*.py"))
        if (found := _named_higher_modules(p.read_text(), _module_name(p)))
    }
    assert not bad, f"the library names higher layers: {bad}"


def test_dynamic_imports_are_imports():
    """The scan itself, on sources written here: each way of loading spacelm.config from the
    library at run time is found; a string that names no module, or a lower one, is not."""
    modules = {
        "spacelm.config",
        "spacelm.config.schema",
        "spacelm.lib.io",
        "spacelm.lib.judge",
        "spacelm.lib.judge.ppi",
    }
    name = "spacelm.lib.judge.ppi"
    for src in (
        'import importlib\ndef f():\n    return importlib.import_module("spacelm.config")\n',
        'from importlib import import_module\nimport_module("spacelm.config.schema")\n',
        'cfg = __import__("spacelm.config", fromlist=["x"])\n',
        'import importlib\nimportlib.import_module("..io", package="spacelm.lib.judge")\n',
    ):
        deps = _deps(src, name, False, modules)
        assert deps & {"spacelm.config", "spacelm.config.schema", "spacelm.lib.io"}, src
        if "config" in src:
            assert _against_layers({name: deps}), src
    assert _deps('import importlib\nimportlib.import_module("..io", package="x")\n', name, False, modules) == {
        "spacelm.lib.io"
    }
    assert _deps('print("spacelm.config")\nRUN_LOG = "spacelm.log"\n', name, False, modules) == set()
    hidden = 'import importlib\nload = getattr(importlib, "import_" + "module")\nload("spacelm.config")\n'
    assert _named_higher_modules(hidden, name) == ["spacelm.config"]
    assert _named_higher_modules('f("spacelm.lib.io")\nwarn("see spacelm.config docs")\n', name) == []


def test_the_package_imports():
    import importlib

    for m in _imports():
        importlib.import_module(m)
