"""docs/architecture.md stays true to the code: every path it names exists, and every symbol it
names after a module's path is defined there; its stage lists are `promptc.compile.pipeline`'s
tuples and the driver's calls, in order; its layers picture is `tests/test_structure.py`'s table;
and, like the package's comments, it names no pass number, schema version or file outside the
repository. Read with `ast` and regular expressions, and one import of the pipeline and the
driver: no subprocess."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from promptc.compile import pipeline

from .conftest import ROOT

DOC_PATH = ROOT / "docs" / "architecture.md"
DOC = DOC_PATH.read_text(encoding="utf-8")
PACKAGE = ROOT / "compiler"


def _structure_facts() -> dict[str, Any]:
    """`LAYERS`, `TOP` and `_FORBIDDEN` of tests/test_structure.py, without importing it (its
    import reads the whole package)."""
    tree = ast.parse((ROOT / "tests" / "test_structure.py").read_text(encoding="utf-8"))
    wanted = {"LAYERS", "TOP", "_FORBIDDEN"}
    nodes: list[ast.stmt] = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in wanted:
            nodes.append(node)
    namespace: dict[str, Any] = {"re": re}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "test_structure.py", "exec"), namespace)
    assert wanted <= namespace.keys(), f"tests/test_structure.py no longer defines {wanted - namespace.keys()}"
    return namespace


STRUCTURE = _structure_facts()


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DOC, re.M | re.S)
    assert match is not None, f"docs/architecture.md has no section `## {title}`"
    return match.group(1)


def _blocks(section: str) -> list[str]:
    return re.findall(r"^```text\n(.*?)^```", section, re.M | re.S)


def _arrow_lists(block: str) -> dict[str, list[str]]:
    """`NAME  a → b → c` lines (continued on lines that start with `→`) → {NAME: [a, b, c]}."""
    lists: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in block.splitlines():
        head = re.match(r"^(\S+)\s+(.*)$", line)
        if head is not None:
            current = lists[head.group(1)] = []
            rest = head.group(2)
        elif current is not None and line.lstrip().startswith("→"):
            rest = line.lstrip().removeprefix("→")
        else:
            continue
        current += [token.strip() for token in rest.split("→") if token.strip()]
    return lists


# ---------------------------------------------------------------------------------------------
# Paths and symbols


_REPO_PATH = re.compile(r"(?<![\w./-])((?:compiler|tests|runtime-js|editors|bench|grammar|docs)/[\w./<>*-]*)")


def test_every_path_the_doc_names_exists() -> None:
    missing = []
    for path in sorted(set(_REPO_PATH.findall(DOC))):
        path = path.rstrip(".,")
        if "<" in path or "*" in path:  # `compiler/passes/<name>.py`, `tests/vectors/*.json`
            pattern = re.sub(r"<[^>]*>", "*", path)
            if not list(ROOT.glob(pattern)):
                missing.append(path)
        elif not (ROOT / path).exists():
            missing.append(path)
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


@cache
def _defined(path: Path) -> dict[str, set[str]]:
    """A module's top-level names (definitions, assignments, imports), each with the names its
    class body defines (methods, fields)."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            names[node.name] = members
        elif isinstance(node, ast.Assign):
            names.update({t.id: set() for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: set() for a in node.names})
    return names


def _parenthesised(text: str, start: int) -> str:
    """The text inside the parentheses that open at `start`, nested ones included."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index]
    return text[start + 1 :]


def test_every_symbol_named_after_a_module_is_defined_there() -> None:
    """The doc's convention: `` `compiler/x/y.py` (`name`, `Class.member` …) `` lists names that
    module defines."""
    wrong = []
    checked = 0
    for match in re.finditer(r"`(compiler/[\w/]+\.py)` \(", DOC):
        defined = _defined(ROOT / match.group(1))
        inside = _parenthesised(DOC, match.end() - 1)
        for symbol in re.findall(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)(?:\(\))?`", inside):
            name, _, member = symbol.partition(".")
            checked += 1
            if name not in defined or (member and member not in defined[name]):
                wrong.append(f"{match.group(1)}: {symbol}")
    assert checked > 50, "the doc no longer lists symbols after its paths"
    assert wrong == [], f"docs/architecture.md names symbols the module does not define: {wrong}"


def test_every_pipeline_name_the_doc_names_exists() -> None:
    names = set(re.findall(r"(?<![\w/])pipeline\.([A-Za-z_]\w*)", DOC)) - {"py"}
    assert names, "the doc names nothing of the pipeline"
    assert [n for n in sorted(names) if not hasattr(pipeline, n)] == []


# ---------------------------------------------------------------------------------------------
# The stage lists


def _names(stages: tuple[Any, ...]) -> list[str]:
    return [stage.__name__ for stage in stages]


def test_the_compile_stages_are_the_pipelines_in_order() -> None:
    listed = _arrow_lists(_blocks(_section("The stages"))[0])
    actual = {
        "FRONT": _names(pipeline.FRONT),
        "PASSES": _names(pipeline.PASSES),
        "BACK": _names(pipeline.BACK),
        "PARTIAL_STAGES": _names(pipeline.PARTIAL_STAGES),
    }
    assert sorted(listed) == sorted([*actual, "STAGES"]), f"stage lists in the doc: {sorted(listed)}"
    for name, stages in actual.items():
        assert listed[name] == stages, f"{name}: the doc says {listed[name]}, pipeline.py has {stages}"
    # STAGES is listed by the names of the tuples it is made of
    expanded = [stage for token in listed["STAGES"] for stage in actual.get(token, [token])]
    assert expanded == _names(pipeline.STAGES), f"STAGES: the doc says {listed['STAGES']}"


def _resolve(dotted: str) -> Any:
    """`plan.Plan.reusable` → the object: the first part is a module of the driver, of a layer
    (`buildfolder` is `promptc.runtime.buildfolder`) or a subpackage (`bindings`)."""
    head, *rest = dotted.split(".")
    candidates = [f"promptc.driver.{head}", f"promptc.{head}"]
    candidates += [f"promptc.{p.parent.name}.{head}" for p in sorted(PACKAGE.glob(f"*/{head}.py"))]
    module: ModuleType | None = None
    for candidate in candidates:
        try:
            module = importlib.import_module(candidate)
            break
        except ModuleNotFoundError:
            continue
    assert module is not None, f"{dotted}: no module `{head}`"
    value: Any = module
    for part in rest:
        assert hasattr(value, part), f"{dotted}: `{part}` is not defined"
        value = getattr(value, part)
    return value


def _calls_in_order(function: str, functions: dict[str, ast.FunctionDef], seen: frozenset[str]) -> list[str]:
    """The names the function calls, in the order they are written, with each call to another
    function of the module replaced by that function's own calls."""
    calls = sorted(
        (node for node in ast.walk(functions[function]) if isinstance(node, ast.Call)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    out: list[str] = []
    for call in calls:
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if name in functions and name not in seen:
            out += _calls_in_order(name, functions, seen | {name})
        else:
            out.append(name)
    return out


def test_the_build_stages_are_the_drivers_in_order() -> None:
    listed = _arrow_lists(_blocks(_section("The stages"))[1])
    assert list(listed) == ["build"], f"the driver's stage list: {list(listed)}"
    stages = listed["build"]
    assert len(stages) >= 5, stages
    for dotted in stages:
        assert callable(_resolve(dotted)), dotted
    tree = ast.parse((PACKAGE / "driver" / "__init__.py").read_text(encoding="utf-8"))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    calls = iter(_calls_in_order("build", functions, frozenset({"build"})))
    # each stage is called after the one listed before it: a subsequence of build()'s calls
    out_of_order = [dotted for dotted in stages if dotted.rsplit(".", 1)[-1] not in calls]
    assert out_of_order == [], f"not called by driver.build() in the order the doc lists: {out_of_order}"


# ---------------------------------------------------------------------------------------------
# The layers


def _layer_rows() -> list[tuple[int, list[str]]]:
    """The picture's rows: each layer's number and the words after it (its subpackages first)."""
    rows = []
    for line in _blocks(_section("One picture"))[0].splitlines():
        match = re.match(r"^\s*(\d+)\s+(.*)$", line)
        if match is not None:
            rows.append((int(match.group(1)), match.group(2).split()))
    return rows


def _drawn() -> dict[str, list[int]]:
    """Each subpackage the picture draws → the layers it is drawn at."""
    drawn: dict[str, list[int]] = {}
    for layer, words in _layer_rows():
        for word in words:
            if not re.fullmatch(r"[a-z_]+/", word):
                break  # the subpackages come first, then what they hold
            drawn.setdefault(word.removesuffix("/"), []).append(layer)
    return drawn


def test_the_layers_picture_is_the_structure_tests_table() -> None:
    drawn = _drawn()
    expected = {name: [layer] for name, layer in STRUCTURE["LAYERS"].items()}
    assert drawn == expected, "the doc's layers differ from tests/test_structure.py's LAYERS"
    layers = [layer for layer, _ in _layer_rows()]
    assert layers == sorted(layers, reverse=True), "the picture draws the layers top down"
    top = [words for layer, words in _layer_rows() if layer == STRUCTURE["TOP"]]
    assert top and "__init__.py" in top[0], "the package itself is not drawn at the top layer"


def test_every_subpackage_appears_in_the_layers_picture() -> None:
    subpackages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert [name for name in subpackages if name not in _drawn()] == []


# ---------------------------------------------------------------------------------------------
# What the doc must not name


def test_the_doc_names_no_pass_number_schema_version_or_outside_file() -> None:
    for pattern, what in STRUCTURE["_FORBIDDEN"]:
        match = pattern.search(DOC)
        assert match is None, f"docs/architecture.md names {what}: {match.group(0)!r}"
