"""The package's layers, bottom up: lib (functions of data), config (the run's settings, which
builds lib's parameter objects), runner (the stage machinery: declaration, staleness, manifest,
lock), stages (the run folder), then pipeline, notebooks and the command line; a module imports
only its own layer or lower ones, and no import cycle anywhere.

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
    if module.startswith("spacelm.runner"):
        return 2
    if module.startswith("spacelm.stages"):
        return 3
    return 4  # spacelm, spacelm.cli, spacelm.pipeline, spacelm.notebooks


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
        "spacelm.lib.retrieval.systems": {"spacelm.config", "spacelm.runner.base"},
        "spacelm.config": {"spacelm.cli"},
    }
    assert sorted(_against_layers(graph)) == [
        ("spacelm.config", "spacelm.cli"),
        ("spacelm.lib.retrieval.systems", "spacelm.config"),
        ("spacelm.lib.retrieval.systems", "spacelm.runner.base"),
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


# spacelm/lib's own floors, bottom up: a unit (a module or a sub-package of lib) imports only
# units of floors below its own. A new unit of lib takes its place here.
LIB_FLOORS = (
    ("deps", "names", "progress", "redact", "sample", "stats", "tables", "team"),  # helpers of one concern
    ("io", "machine_paths"),  # files, and this machine's paths out of what is written
    ("llm",),  # language models: backends, cache, prompts, reading a judge's reply
    ("ingest", "retrieval"),  # documents into chunks; retrievers, rerankers and IR measures
    ("datasets", "records", "synth"),  # external sets, typed rows, written questions
    ("answer",),  # answers and the measures on them
    ("judge",),  # judges, and how far to trust them (answer judges included)
    ("instruments", "report"),  # what a run found, from the judges' and the labels' readings
    ("labels",),  # the assessor's label store, read against all of the above
)


def _lib_unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["spacelm", "lib"] else None


def _lib_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str, str, str]]:
    """(module, imported module, its unit, the imported unit) for each import between two units of lib."""
    return [
        (m, d, _lib_unit(m), _lib_unit(d))
        for m, deps in graph.items()
        for d in deps
        if _lib_unit(m) and _lib_unit(d) and _lib_unit(m) != _lib_unit(d)
    ]


def _against_floors(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    floor = {u: i for i, units in enumerate(LIB_FLOORS) for u in units}
    return sorted((m, d) for m, d, a, b in _lib_arrows(graph) if floor.get(b, len(LIB_FLOORS)) >= floor.get(a, -1))


def test_every_unit_of_the_library_has_a_floor():
    units = {_lib_unit(m) for m in _imports()} - {None}
    placed = [u for floor in LIB_FLOORS for u in floor]
    assert len(placed) == len(set(placed)), "a unit on two floors"
    assert units == set(placed), f"not placed: {sorted(units - set(placed))}; gone: {sorted(set(placed) - units)}"


def test_inside_the_library_no_unit_imports_its_own_floor_or_one_above():
    """No arrow runs back up inside spacelm/lib, so its units hold no cycle either (judge and
    answer, judge and report, llm and ingest each imported the other)."""
    bad = _against_floors(_imports())
    assert not bad, f"imports against lib's floors (see LIB_FLOORS): {bad}"


def test_the_floor_rule_itself():
    graph = {
        "spacelm.lib.judge.validity": {"spacelm.lib.answer.claims", "spacelm.lib.judge.scores"},
        "spacelm.lib.answer.claims": {"spacelm.lib.judge.scores", "spacelm.lib.stats"},
        "spacelm.lib.ingest.chunking": {"spacelm.lib.retrieval.systems"},
        "spacelm.lib.newcomer": {"spacelm.lib.io"},
    }
    assert _against_floors(graph) == [
        ("spacelm.lib.answer.claims", "spacelm.lib.judge.scores"),
        ("spacelm.lib.ingest.chunking", "spacelm.lib.retrieval.systems"),
        ("spacelm.lib.newcomer", "spacelm.lib.io"),
    ]


def test_the_package_imports():
    import importlib

    for m in _imports():
        importlib.import_module(m)
