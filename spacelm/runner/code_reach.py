"""Which code a stage runs, read from the source without importing it.

The rule (stated for maintainers in :class:`spacelm.runner.base.Stage` and docs/stages.md): a
stage's code is its own module, all of it, and every function, class and constant of another
spacelm module that the stage reaches by name, followed through what those use in turn:

- a name (``held_out``, ``io.write_json``, a name imported inside a function) reaches its
  definition, through re-exports;
- a class counts by its statements outside its methods (bases, decorators, class attributes) and
  its special methods (``__init__``, ``__post_init__``, …); its other methods and properties count
  when reached code uses their name as an attribute (``x.setup()``, ``getattr(x, "setup")``) and
  their class is in a module the stage reaches (the config's always: every stage is handed it),
  since the object's class is not known from the source;
- the fields of the config's classes (``spacelm.config``) are not code: the stage's config sections
  are hashed as inputs of their own;
- a module's top-level statements that define nothing (a call that registers something) count with
  any definition of that module;
- the stage machinery (:data:`MACHINERY`) is left out: it decides whether a stage builds, not what
  it builds; so are the planner's stand-ins (:data:`STAND_INS`): `spacelm plan` runs a stage's code
  with them in place of models and retrievers, and a real run never calls them.

Comments, docstrings and layout do not count: each definition is hashed by its syntax tree."""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "spacelm"
CONFIG = PACKAGE + ".config"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
ATTRIBUTE_CALLS = ("getattr", "hasattr", "setattr")  # getattr(x, "name") uses `name` as an attribute
PREAMBLE = "<module>"  # the unit of a module's statements that define nothing

# what `spacelm plan` puts in place of a model or a retriever (spacelm.lib.llm.dry_run): a stage
# reaches their methods by name (`llm.chat_many`), but a run never calls them
STAND_INS = frozenset(("spacelm.lib.llm.dry_run", n) for n in ("PlanLLM", "StandInRetriever"))

# the machinery every stage runs through (spacelm.runner.base): whether to build, not what is built
MACHINERY = (
    frozenset(
        ("spacelm.runner.base", n)
        for n in (
            "Stage",
            "execute",
            "freshness",
            "read_stamp",
            "stage_inputs",
            "fingerprint_of",
            "committed_state",
            "Staging",
            "StaleStage",
            "REUSE_ONLY_ENV",
        )
    )
    | STAND_INS
)


@dataclass
class Module:
    """One parsed spacelm module: its top-level definitions and import bindings."""

    name: str
    defs: dict[str, ast.AST] = field(default_factory=dict)  # name -> the statement defining it
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # bound name -> (module, attr)
    preamble: list[ast.AST] = field(default_factory=list)
    methods: dict[str, list[str]] = field(default_factory=dict)  # method name -> ["Class.method", ...]
    units: dict[str, ast.AST] = field(default_factory=dict)  # unit name -> hashed node


def _strip_doc(body: list) -> list:
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """`tree` with the docstring of the module, each class and each function taken out (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            node.body = _strip_doc(node.body) or [ast.Pass()]
    return tree


def node_hash(node: ast.AST) -> str:
    """A definition's hash: its syntax tree (parsed without docstrings; comments and layout never reach it)."""
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class Source:
    """The spacelm package's source under `root` (the installed package by default), parsed lazily."""

    def __init__(self, root: Path = PACKAGE_DIR):
        self.root = Path(root)
        self._modules: dict[str, Module | None] = {}
        self._trees: dict[str, ast.Module] = {}
        self._facts: dict[tuple[str, str | None], tuple] = {}

    # ------------------------------------------------------------------ files and parsing
    def path(self, module: str) -> Path | None:
        if module != PACKAGE and not module.startswith(PACKAGE + "."):
            return None
        rel = Path(*module.split(".")[1:])
        for p in (self.root / rel / "__init__.py", (self.root / rel).with_suffix(".py")):
            if p.is_file():
                return p
        return None

    def tree(self, module: str) -> ast.Module:
        """The module's syntax tree without docstrings, parsed once."""
        if module not in self._trees:
            self._trees[module] = _without_docstrings(ast.parse(self.path(module).read_text(encoding="utf-8")))
        return self._trees[module]

    def facts(self, module: str, unit: str | None) -> tuple[str, list, set[str]]:
        """(hash, references, attribute names) of one unit of `module` (None: the whole module)."""
        key = (module, unit)
        if key not in self._facts:
            node = self.tree(module) if unit is None else self.module(module).units[unit]
            self._facts[key] = (node_hash(node), *_references(self, module, node))
        return self._facts[key]

    def module(self, name: str) -> Module | None:
        if name not in self._modules:
            self._modules[name] = self._parse(name) if self.path(name) else None
        return self._modules[name]

    def _absolute(self, module: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        is_package = self.path(module).name == "__init__.py"
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join(parts + ([node.module] if node.module else []))

    def bindings(self, module: str, nodes) -> dict[str, tuple[str, str | None]]:
        """{bound name: (module, attribute or None)} of the import statements among `nodes`."""
        out = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        out[a.asname] = (a.name, None)
                    else:
                        out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(module, node)
                for a in node.names:
                    if a.name != "*":
                        out[a.asname or a.name] = (base, a.name)
        return out

    def _parse(self, name: str) -> Module:
        m = Module(name)
        is_config = name == PACKAGE + ".config" or name.startswith(PACKAGE + ".config.")
        for stmt in self.tree(name).body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                m.imports.update(self.bindings(name, [stmt]))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                m.defs[stmt.name] = m.units[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                m.defs[stmt.name] = m.units[stmt.name] = self._skeleton(stmt, is_config)
                for f in stmt.body:
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _dunder(f.name):
                        unit = f"{stmt.name}.{f.name}"
                        m.units[unit] = f
                        m.methods.setdefault(f.name, []).append(unit)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            m.defs[n.id] = m.units[n.id] = stmt
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):  # a guarded import or definition
                inner = list(ast.walk(stmt))
                m.imports.update(self.bindings(name, inner))
                for n in inner:
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        m.defs[n.name] = stmt
                    elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        m.defs[n.id] = stmt
                m.preamble.append(stmt)
            else:
                m.preamble.append(stmt)
        if m.preamble:
            m.units[PREAMBLE] = ast.Module(body=m.preamble, type_ignores=[])
        for key, node in m.defs.items():  # a guarded definition is hashed as its whole statement
            m.units.setdefault(key, node)
        return m

    @staticmethod
    def _skeleton(cls: ast.ClassDef, is_config: bool) -> ast.ClassDef:
        """A class without its ordinary methods (each counts when its name is used), and for a config
        class without its fields (their values are the config sections a stage declares)."""
        out = copy.copy(cls)

        def keep(s):
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return _dunder(s.name)
            return not (is_config and isinstance(s, ast.AnnAssign))

        out.body = [s for s in cls.body if keep(s)] or [ast.Pass()]
        return out

    def all_modules(self) -> list[str]:
        out = []
        for p in sorted(self.root.rglob("*.py")):
            rel = p.relative_to(self.root).with_suffix("")
            parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
            out.append(".".join([PACKAGE, *parts]))
        return out

    # ------------------------------------------------------------------ resolution
    def resolve(self, module: str, attr: str | None, seen=()) -> tuple[str, str | None] | None:
        """(module, unit or None for the whole module) that `module.attr` names; None outside spacelm."""
        if attr is None:
            return (module, None) if self.path(module) else None
        if self.path(f"{module}.{attr}"):
            return (f"{module}.{attr}", None)
        m = self.module(module)
        if m is None:
            return None
        if attr in m.defs:
            return (module, attr)
        if attr in m.imports and (module, attr) not in seen:
            return self.resolve(*m.imports[attr], seen=(*seen, (module, attr)))
        return (module, None)  # defined some other way (a star import): the whole module


def _references(src: Source, module: str, node: ast.AST) -> tuple[list[tuple[str, str | None]], set[str]]:
    """What the names in `node` (code of `module`) resolve to: (module, unit), or (module, None)
    for a module used as an object, with an attribute chain on a module (`io.write_json`,
    `a.b.c`) resolved through it; and the names used as attributes (``x.name``,
    ``getattr(x, "name")``)."""
    m = src.module(module)
    imports, attributes, names, attrs = [], [], [], set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.append(n)
        elif isinstance(n, ast.Attribute):
            attributes.append(n)
            attrs.add(n.attr)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            imports.append(n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ATTRIBUTE_CALLS:
            if len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                attrs.add(n.args[1].value)
    local = src.bindings(module, imports)  # imports inside functions come first

    def named(name: str):
        if name in local:
            return src.resolve(*local[name])
        if name in m.defs:
            return (module, name)
        if name in m.imports:
            return src.resolve(*m.imports[name])
        return None

    out, via_module = [], set()
    for n in attributes:
        chain, v = [n.attr], n.value
        while isinstance(v, ast.Attribute):
            chain.append(v.attr)
            v = v.value
        if not isinstance(v, ast.Name):
            continue
        ref = named(v.id)
        for a in reversed(chain):
            if ref is None or ref[1] is not None:
                break
            via_module.add(id(v))
            ref = src.resolve(ref[0], a)
        if ref is not None:
            out.append(ref)
    out += [ref for n in names if id(n) not in via_module and (ref := named(n.id)) is not None]
    return out, attrs


@dataclass
class Reach:
    """What a stage runs: the modules counted whole and, per other module, the units reached."""

    whole: set[str] = field(default_factory=set)
    units: dict[str, set[str]] = field(default_factory=dict)


def reach(src: Source, whole: tuple[str, ...]) -> Reach:
    """The code reached from the modules `whole` (each counted whole), by the rule of this module."""
    out = Reach(whole={m for m in whole if src.path(m)})
    todo: list[tuple[str, str | None]] = [(m, None) for m in sorted(out.whole)]
    attrs: set[str] = set()  # every name used as an attribute by the code reached
    reached: set[str] = set()  # the modules some of whose code is reached: their methods can be called
    walked: set[str] = set()  # the modules counted whole whose source was walked

    def methods(module: str, names) -> list[tuple[str, str]]:
        m = src.module(module)
        found = [(module, u) for a in names for u in (m.methods.get(a, []) if m else [])]
        return [(mod, u) for mod, u in found if (mod, u.split(".")[0]) not in MACHINERY]

    def reaches(module: str) -> None:
        if module not in reached:
            reached.add(module)
            todo.extend(methods(module, attrs))

    for mod in src.all_modules():  # every stage is handed the config: its classes' methods can be called
        if mod == CONFIG or mod.startswith(CONFIG + "."):
            reaches(mod)
    while todo:
        module, unit = todo.pop()
        m = src.module(module)
        if m is None or module == PACKAGE:
            continue
        if unit is None:  # counted whole (or a module used as an object: every definition in it)
            if module in walked:
                continue
            walked.add(module)
            out.whole.add(module)
        else:
            if (module, unit) in MACHINERY or module in out.whole:
                continue
            got = out.units.setdefault(module, set())
            if unit in got:
                continue
            got.add(unit)
            if m.preamble and PREAMBLE not in got:
                todo.append((module, PREAMBLE))
        reaches(module)
        _, refs, names = src.facts(module, unit)
        todo.extend(refs)
        new = names - attrs
        attrs |= new
        for mod in sorted(reached):
            todo.extend(methods(mod, new))
    return out


def units_hash(src: Source, module: str, units: set[str]) -> str:
    """The short hash of `units` of `module` (their names and syntax trees)."""
    h = hashlib.sha256()
    for u in sorted(units):
        h.update(u.encode() + b"\0" + src.facts(module, u)[0].encode() + b"\n")
    return h.hexdigest()[:16]


def module_code_hash(src: Source, module: str) -> str:
    """The short hash of a whole module's syntax tree (docstrings left out)."""
    return src.facts(module, None)[0][:16]


def code_hashes(src: Source, modules: tuple[str, ...]) -> dict[str, str]:
    """{`code:<module>`: hash} of each module counted whole and {`defs:<module>`: hash} of the
    definitions reached in each other module, from `modules` (counted whole)."""
    got = reach(src, modules)
    out = {f"code:{m}": module_code_hash(src, m) for m in got.whole}
    out.update({f"defs:{m}": units_hash(src, m, u) for m, u in got.units.items() if m not in got.whole})
    return out


@functools.cache
def installed() -> Source:
    """The installed package's source, parsed once per process."""
    return Source()
