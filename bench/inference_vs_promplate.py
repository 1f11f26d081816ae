"""Run the inference table (tests/test_inference.py CASES) through promplate-inspect and show where
it disagrees with `promptc.analysis.inference`. Not part of the test suite.

    PYTHONPATH=. python bench/inference_vs_promplate.py            # markdown table on stdout
    PYTHONPATH=. python bench/inference_vs_promplate.py --all      # every case, not only differences

Needs the `bench` extra (promplate, promplate-inspect). promplate-inspect reports only inputs (it
drops every name it sees called), so it is compared with our `inputs`; `${}` placeholders are
promptc syntax, invisible to promplate.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from promplate_inspect import find_input_variables_in_template  # noqa: E402
from test_inference import CASES  # noqa: E402

from promptc.analysis.inference import analyse  # noqa: E402
from promptc.syntax.parse import template_items  # noqa: E402

#: Why promplate-inspect differs, per case (see docs/inference-vs-promplate-inspect.md). Its visitor
#: has a handful of root causes, named here: LOOP = `visit_For` visits only the target and the
#: iterable, never the body or `else`; FLOW = a name stored anywhere earlier is never an input again
#: (no definite-assignment analysis); SCOPE = no scopes (parameters, comprehension targets other
#: than in list comprehensions, captures, handler names look like free names); CALL = any name ever
#: called, even through a subscript, is dropped; IMPORT = imports bind nothing; TEXT = text between
#: tags is dropped before compiling, so a body of only text is an empty block (IndentationError).
EXPLAIN: dict[str, str] = {
    "placeholder-root": "`${}` is promptc syntax, not promplate's: invisible to it",
    "placeholder-ignores-locals": "`${}` is promptc syntax, not promplate's: invisible to it",
    "placeholder-builtin-name": "`${}` is promptc syntax, not promplate's: invisible to it",
    "called-and-read": "CALL: `f` is also output as a value, so the caller must pass it",
    "call-through-subscript": "CALL: it strips subscripts from the callee, so `fs` (a value) is dropped",
    "callee-assigned-later": "CALL: `f` is read before `f = g` assigns it, so it must come from the context",
    "if-no-else": "FLOW: the assignment in the `if` body does not happen when `c` is false",
    "if-elif-no-else": "FLOW: with no `else`, the all-false path assigns nothing",
    "walrus-in-if-test": "TEXT: the `{% if %}` body is only text",
    "walrus-visible-in-elif": "TEXT: the `{% if %}` body is only text",
    "for-target-after-loop": "TEXT: the `{% for %}` body is only text",
    "read-inside-for-body": "LOOP: `y` is read in the loop body, which it never visits",
    "read-inside-python-for": "LOOP: same for a Python `for` inside `{# #}`",
    "for-else-no-break": "TEXT: the `{% for %}` body is only text",
    "while-body-assign": "FLOW: a `while` body may run zero times",
    "del-in-loop": "LOOP + FLOW: the body is not visited, and `del` is not understood",
    "lambda-param": "SCOPE: the lambda parameter `a` is taken for a free name",
    "lambda-default": "SCOPE: the lambda parameter `a` is taken for a free name",
    "comprehension-no-leak": "FLOW/SCOPE: the comprehension target `j` is treated as assigned for the rest of the template",
    "setcomp-if": "SCOPE: only list comprehensions are visited target-first; in a set comprehension `k` looks free",
    "dictcomp": "SCOPE: as above, for a dict comprehension",
    "genexp": "SCOPE: as above, for a generator expression",
    "walrus-from-comprehension": "FLOW: the comprehension may run zero times, so `y` may be unassigned",
    "walrus-short-circuit": "FLOW: `a or (b := 1)` skips the walrus when `a` is true",
    "walrus-ifexp": "FLOW: only one arm of a conditional expression runs",
    "with-body-not-definite": "FLOW: a context manager may swallow an exception before `v` is assigned",
    "except-as-deletes-old-value": "FLOW: Python deletes `e` when the handler ends",
    "except-as-in-handler": "SCOPE: the handler name `e` is not a Name node, so its use looks free",
    "try-only-body": "FLOW: an exception may come before `t = f()` completes",
    "match-no-default": "FLOW: when no case matches nothing is assigned",
    "match-value-and-class-patterns": "SCOPE: the capture `px` looks free",
    "del-unbinds": "FLOW: `del x` unbinds x; the later read needs the input",
    "del-unassigned": "FLOW: deleting a name that was never assigned needs it to exist",
    "import-dotted": "IMPORT: `import os.path` binds `os`",
    "import-as": "IMPORT: `import a as b` binds `b`",
    "from-import": "IMPORT: `from c import d` binds `d`",
    "def-params": "SCOPE: parameters `a`, `b`, `k` look free",
    "def-local-never-input": "SCOPE: the parameter `c` looks free",
    "class-body": "SCOPE: a class statement binds its name (`K`), which is not a Name node",
    "class-scope-invisible-to-methods": "SCOPE: a method cannot see class attributes, so `a` is a global read",
    "class-scope-and-comprehension": "SCOPE: a comprehension in a class body cannot see class attributes after its first iterable",
    "break-else": "LOOP: neither the body nor the `else` are visited, so `found` looks unassigned",
    "break-from-handler-deletes-name": "LOOP: the handler type `E` is inside the loop body",
    "break-inside-finally": "LOOP: `c` is read inside the loop body",
    "break-through-finally": "LOOP: the `finally` that assigns `z` runs on `break`, but is inside the body",
    "annotated-assign": "annotations of locals are never evaluated in a function (promplate renders in one)",
    "bare-annotation": "FLOW: `x: int` alone declares x but does not assign it",
    "if-plain-text": "TEXT: the `{% if %}` body is only text",
    "genexp-deferred-del": "FLOW: the generator runs after `del y`, so `y` must come from the context",
    "trim-markers": "it strips only a trailing `-`: `{%- for … -%}` is not recognised as a loop",
}


def items_of(text: str, path: str = "t.prompt") -> list:
    """A template's items, read by the real parser (the inference tests run on what builds see)."""
    return list(template_items(text, path)[0])


def _names(names: set[str] | frozenset[str]) -> str:
    return "{" + ", ".join(sorted(names)) + "}" if names else "∅"


def _cell(text: str, limit: int = 70) -> str:
    text = text.replace("\n", "⏎")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    rows: list[str] = []
    same = differ = crashed = 0
    for case in CASES:
        ours = analyse(items_of(case.template))
        assert ours.inputs == case.inputs, (case.name, ours.inputs, case.inputs)  # the table is our spec
        try:
            theirs: set[str] | None = set(find_input_variables_in_template(case.template))
            error = ""
        except Exception as exc:  # promplate-inspect raises on some valid templates
            theirs, error = None, f"{type(exc).__name__}: {str(exc)[:40] or '(no message)'}"
        if theirs is None:
            crashed += 1
            verdict = "crash"
            shown = f"**{error}**"
        elif theirs == set(ours.inputs):
            same += 1
            verdict = "same"
            shown = _names(theirs)
        else:
            differ += 1
            missing = set(ours.inputs) - theirs
            extra = theirs - set(ours.inputs)
            parts = []
            if missing:
                parts.append("misses " + _names(missing))
            if extra:
                parts.append("extra " + _names(extra))
            verdict = "; ".join(parts)
            shown = _names(theirs)
        if show_all or verdict != "same":
            helpers = f" + helpers {_names(ours.helpers)}" if ours.helpers else ""
            rows.append(
                f"| {case.name} | {_cell(case.template, 60)} | {_names(ours.inputs)}{helpers} | {shown} | {verdict} "
                f"| {EXPLAIN.get(case.name, '') if verdict != 'same' else ''} |"
            )
    print("| case | template | promptc inputs | promplate-inspect | difference | why |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print()
    print(f"{len(CASES)} cases: {same} agree, {differ} differ, {crashed} crash promplate-inspect")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
