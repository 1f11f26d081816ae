"""Property tests for input inference.

1. Whatever the template (random programs, random punctuation, unbalanced `{% %}`), `analyse`
   returns: it never raises, and every diagnostic points at a line and column inside the text.
2. Soundness against the real thing: for random *valid* templates, promplate renders them with a
   context holding only the inferred inputs and helpers (as permissive stand-in values), and no
   `NameError` ever names a variable the analysis missed.
"""

from __future__ import annotations

import builtins
import sys
import textwrap
from contextlib import contextmanager
from types import CodeType

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from promptc.analysis import inference
from promptc.analysis.inference import BUILTIN_NAMES, Analysis, analyse
from promptc.facts.codes import CODES
from promptc.runtime.template import unwrap as _unwrap
from promptc.syntax.parse import template_items

from .conftest import examples

NAMES = ["a", "b", "c", "x", "y", "f", "g", "i", "e", "len", "range", "str", "list"]
BINDERS = ["a", "b", "x", "y", "f", "i", "e"]  # never rebinds the builtins the programs call


def items_of(text: str, path: str = "t.prompt") -> list:
    """A template's items, read by the real parser (the inference tests run on what builds see)."""
    return list(template_items(text, path)[0])


class Grammar:
    """Strategies for random template programs. `hostile` adds literals, imports and garbage
    (unbalanced tags, random punctuation); without it the programs are valid and every value
    can stand in for any other, which keeps rendering going for the soundness check."""

    def __init__(self, hostile: bool) -> None:
        self.hostile = hostile
        names = st.sampled_from(NAMES)
        binders = st.sampled_from(BINDERS)
        atoms = names
        if hostile:
            atoms = st.one_of(names, st.sampled_from(["0", "1", "'s'", "None", "True"]))

        def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
            return st.one_of(
                st.tuples(inner, st.sampled_from(["+", "*", "<", "==", "and", "or", "in"]), inner).map(
                    lambda t: f"({t[0]} {t[1]} {t[2]})"
                ),
                st.tuples(inner, st.sampled_from(["up", "v"])).map(lambda t: f"({t[0]}).{t[1]}"),
                st.tuples(names, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
                st.tuples(binders, inner).map(lambda t: f"(lambda {t[0]}: {t[1]})"),
                st.tuples(binders, inner, inner).map(lambda t: f"(lambda {t[0]}={t[1]}: {t[2]})"),
                st.tuples(inner, binders, inner, inner).map(lambda t: f"[{t[0]} for {t[1]} in {t[2]} if {t[3]}]"),
                st.tuples(inner, binders, inner).map(lambda t: f"list({t[0]} for {t[1]} in {t[2]})"),
                st.tuples(binders, inner).map(lambda t: f"({t[0]} := {t[1]})"),
                st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
                inner.map(lambda e: f"[{e}][0]"),
                # no `}}` inside: it would end a `{{ }}` block early
                st.tuples(names, names).map(
                    (lambda t: f'f"{{{t[0]}!r:{{{t[1]}}}>3}}!"')
                    if hostile  # never executed: `!r` of a deeply nested list could exhaust memory
                    else (lambda t: f'f"{{{t[0]}:>3}}{{{t[1]}:^2}}"')
                ),
            )

        self.names = names
        self.binders = binders
        self.expressions = st.recursive(atoms, extend, max_leaves=5)

    def simple_statement(self, in_loop: bool, in_def: bool) -> st.SearchStrategy[str]:
        binders, expressions = self.binders, self.expressions
        options = [
            st.tuples(binders, expressions).map(lambda t: f"{t[0]} = {t[1]}"),
            st.tuples(binders, expressions).map(lambda t: f"{t[0]} += {t[1]}"),
            st.tuples(binders, binders, expressions).map(lambda t: f"{t[0]}, *{t[1]} = {t[2]}"),
            st.tuples(binders, expressions).map(lambda t: f"{t[0]}.v = {t[1]}"),
            st.tuples(binders, expressions).map(lambda t: f"{t[0]}: int = {t[1]}"),
            binders.map(lambda n: f"{n}: int"),
            binders.map(lambda n: f"del {n}"),
            expressions,
            expressions.map(lambda e: f"assert {e}"),
            st.just("pass"),
        ]
        if self.hostile or in_def:
            options.append(st.just("return 'r'"))
        if self.hostile or in_loop:
            options.append(st.sampled_from(["break", "continue"]))
        if self.hostile:
            options += [
                binders.map(lambda n: f"global {n}"),
                binders.map(lambda n: f"import math as {n}"),
                binders.map(lambda n: f"from math import pi as {n}"),
                binders.map(lambda n: f"nonlocal {n}"),
            ]
        return st.one_of(*options)

    def statement(self, depth: int = 0, in_loop: bool = False, in_def: bool = False) -> st.SearchStrategy[list[str]]:
        return _statement(self, depth, in_loop, in_def)

    def exec_block(self) -> st.SearchStrategy[str]:
        return _exec_block(self)

    def expr_block(self) -> st.SearchStrategy[str]:
        return _expr_block(self)

    def templates(self) -> st.SearchStrategy[str]:
        expressions, binders = self.expressions, self.binders
        leaf = st.one_of(
            st.sampled_from(["text ", "\n", " more\n  "]),
            self.expr_block(),
            self.exec_block(),
            st.tuples(self.names, st.sampled_from(["", ".up"])).map(lambda t: "${" + t[0] + t[1] + "}"),
        )
        if self.hostile:
            leaf = st.one_of(
                leaf,
                st.text(alphabet="(){}[]:;,.=+-*/%#'\"\\ \n\tabxy$", max_size=12),
                st.sampled_from(
                    [
                        "{% if a %}",
                        "{% else %}",
                        "{% endif %}",
                        "{% endfor %}",
                        "{% elif b %}",
                        "{% while %}",
                        "{%- for -%}",
                    ]
                ),
                st.tuples(
                    st.sampled_from(["{{", "{#", "{%"]), st.text(max_size=15), st.sampled_from(["}}", "#}", "%}"])
                ).map("".join),
            )

        def nest(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
            body = st.lists(inner, max_size=3).map("".join)
            return st.one_of(
                st.tuples(expressions, body, body, st.booleans()).map(
                    lambda t: f"{{% if {t[0]} %}}x{t[1]}" + (f"{{% else %}}y{t[2]}" if t[3] else "") + "{% endif %}"
                ),
                st.tuples(expressions, body, expressions, body).map(
                    lambda t: f"{{% if {t[0]} %}}x{t[1]}{{% elif {t[2]} %}}y{t[3]}{{% endif %}}"
                ),
                st.tuples(binders, expressions, body, body, st.booleans()).map(
                    lambda t: (
                        f"{{% for {t[0]} in {t[1]} %}}x{t[2]}"
                        + (f"{{% else %}}y{t[3]}" if t[4] else "")
                        + "{% endfor %}"
                    )
                ),
                st.tuples(expressions, body).map(lambda t: f"{{% while {t[0]} %}}x{t[1]}{{% endwhile %}}"),
            )

        piece = st.recursive(leaf, nest, max_leaves=5)
        return st.lists(piece, min_size=1, max_size=4).map("".join)


@st.composite
def _statement(draw: st.DrawFn, g: Grammar, depth: int, in_loop: bool, in_def: bool) -> list[str]:
    """The lines of one statement, indented four spaces per level."""
    if depth >= 2 or draw(st.integers(0, 3)) == 0:
        return [draw(g.simple_statement(in_loop, in_def))]
    kind = draw(st.sampled_from(["if", "for", "while", "try", "with", "def", "class", "match"]))
    inner_loop = kind in ("for", "while") or (in_loop and kind not in ("def", "class"))
    inner_def = kind == "def" or (in_def and kind != "class")
    body = st.lists(g.statement(depth + 1, inner_loop, inner_def), min_size=1, max_size=3).map(
        lambda ls: ["    " + ln for s in ls for ln in s]
    )
    e = draw(g.expressions)
    n = draw(g.binders)
    if kind == "if":
        lines = [f"if {e}:", *draw(body)]
        if draw(st.booleans()):
            lines += [f"elif {draw(g.expressions)}:", *draw(body)]
        if draw(st.booleans()):
            lines += ["else:", *draw(body)]
    elif kind == "for":
        lines = [f"for {n} in {e}:", *draw(body)]
        if draw(st.booleans()):
            lines += ["else:", *draw(body)]
    elif kind == "while":
        lines = [f"while {e}:", *draw(body)]
    elif kind == "try":
        lines = ["try:", *draw(body), f"except Exception as {n}:", *draw(body)]
        if draw(st.booleans()):
            lines += ["else:", *draw(body)]
        if draw(st.booleans()):
            lines += ["finally:", *draw(body)]
    elif kind == "with":
        lines = [f"with {e} as {n}:", *draw(body)]
    elif kind == "def":
        # *args/**kw: every call of the generated function is a valid call
        lines = [f"def {n}({draw(g.binders)}=None, *args, k={e}, **kw):", *draw(body)]
        if draw(st.booleans()):
            lines = [f"@{draw(g.names)}", *lines]
    elif kind == "class":
        lines = [f"class {n.upper()}:", *draw(body)]
    else:
        lines = [
            f"match {e}:",
            f"    case [{n}, *{draw(g.binders)}]:",
            *("    " + ln for ln in draw(body)),
            "    case _:",
            *("    " + ln for ln in draw(body)),
        ]
    return lines


@st.composite
def _exec_block(draw: st.DrawFn, g: Grammar) -> str:
    lines = [ln for s in draw(st.lists(g.statement(), min_size=1, max_size=3)) for ln in s]
    if len(lines) == 1 and draw(st.booleans()):
        return "{# " + lines[0] + " #}"
    margin = draw(st.sampled_from(["", "    ", "\t"]))
    return "{#\n" + "\n".join(margin + ln for ln in lines) + "\n#}"


@st.composite
def _expr_block(draw: st.DrawFn, g: Grammar) -> str:
    if draw(st.integers(0, 3)) == 0:
        lines = [ln for s in draw(st.lists(g.statement(2), min_size=1, max_size=2)) for ln in s]
        return "{{\n" + "\n".join("  " + ln for ln in [*lines, draw(g.expressions)]) + "\n}}"
    return "{{ " + draw(g.expressions) + " }}"


def templates(valid_only: bool) -> st.SearchStrategy[str]:
    return Grammar(hostile=not valid_only).templates()


@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(templates(valid_only=False))
def test_never_raises_and_positions_are_inside_the_text(text: str) -> None:
    result = analyse(items_of(text))
    lines = text.split("\n")
    for d in result.diagnostics:
        assert d.code in CODES
        assert 1 <= d.line <= len(lines), d
        assert 1 <= d.col <= len(lines[d.line - 1]) + 1, d
    assert not (result.inputs & result.helpers)
    assert not (result.helpers & BUILTIN_NAMES)


_TAGS = [
    "{% if a %}",
    "{% elif (b := a) %}",
    "{% else %}",
    "{% endif %}",
    "{% for x in a %}",
    "{% endfor %}",
    "{% while b %}",
    "{% endwhile %}",
    "{# break #}",
    "{# x = 1 #}",
    "{# del x #}",
    "{{ x }}",
    "t",
]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from(_TAGS), min_size=50, max_size=400))
def test_random_tag_sequences_never_raise(tags: list[str]) -> None:
    # long, deep and unbalanced `{% %}` sequences: the structure walk uses an explicit stack
    text = "\n".join(tags)
    result = analyse(items_of(text))
    lines = text.split("\n")
    for d in result.diagnostics:
        assert 1 <= d.line <= len(lines) and 1 <= d.col <= len(lines[d.line - 1]) + 1


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=" \t\nab#(", max_size=40), st.integers(0, 50))
def test_unwrap_mirrors_promplate_and_keeps_positions(code: str, base: int) -> None:
    # promplate parses `dedent(inner).strip()`; error positions need each character's origin
    text, positions = _unwrap(code, base)
    assert text == textwrap.dedent(code).strip()
    assert len(positions) == len(text) + 1
    for index, char in enumerate(text):
        assert code[positions[index] - base] == char


# ---------------------------------------------------------------------------------------------
# Soundness against promplate itself

_TICKS = [0]


class Anything:
    """A value every operation accepts, so rendering gets as far as the names allow. Truth values
    follow a fixed cycle so `while` loops always end."""

    def __getattr__(self, name: str) -> Anything:
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything()

    def __call__(self, *args: object, **kwargs: object) -> Anything:
        return Anything()

    def __iter__(self):
        return iter((Anything(), Anything()))

    def __bool__(self) -> bool:
        _TICKS[0] += 1
        return _TICKS[0] % 3 != 0

    def __enter__(self) -> Anything:
        return Anything()

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        # sometimes swallows an exception, as the analysis must allow for (never OutOfSteps)
        return kind is not None and issubclass(kind, Exception) and bool(self)

    def __len__(self) -> int:
        return 2

    def __hash__(self) -> int:
        return 1

    def __format__(self, spec: str) -> str:
        return "2"  # usable as a fill character or a width in a nested format spec

    def __getitem__(self, key: object) -> Anything:
        return Anything()

    def __setattr__(self, name: str, value: object) -> None:
        pass

    def __contains__(self, item: object) -> bool:
        return bool(self)

    def _op(self, *other: object) -> Anything:
        return Anything()

    __add__ = __radd__ = __mul__ = __rmul__ = __lt__ = __gt__ = __eq__ = __iadd__ = _op


class OutOfSteps(BaseException):
    """Not an `Exception`, so generated `except Exception:` blocks cannot swallow it."""


_MAX_STEPS = 5_000
_MAX_SIZE = 1_000


@contextmanager
def step_budget(steps: int = _MAX_STEPS):
    """Stop a render after `steps` trace events, or as soon as a variable holds a big container.
    Generated loops need not terminate (`while f:` with `f` a function is always true) and may
    grow values without bound (`for v in x: x += x`); a timer could be swallowed by generated
    code, and a memory blow-up would take the whole test run down with it."""
    count = [0]

    def tracer(frame, event, arg):
        count[0] += 1
        if count[0] > steps:
            raise OutOfSteps
        for value in frame.f_locals.values():
            if isinstance(value, (str, list, tuple, dict, set)) and len(value) > _MAX_SIZE:
                raise OutOfSteps
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def _render(code: CodeType, result: Analysis) -> None:
    """Render in a child process with a memory and a time ceiling: generated code may allocate
    without bound or loop inside C code, where no step budget can stop it. Only a missed input
    (an AssertionError in the child) fails the test."""
    import os
    import resource
    import signal

    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 0
        try:
            resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
            signal.alarm(2)
            _render_here(code, result)
        except AssertionError as error:
            sys.stderr.write(f"the analysis missed an input: {error}\n")
            status = 1
        except BaseException:  # noqa: BLE001 - out of memory or time is not a finding
            status = 0
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1), "the analysis missed an input (see stderr)"


def _render_here(code: CodeType, result: Analysis) -> None:
    """Run compiled template code with only the inferred names in its globals; a `NameError` for
    any other name is a variable the analysis missed."""
    context: dict[str, object] = {name: Anything() for name in result.inputs | result.helpers}
    # The builtins the programs call return stand-ins too, so rendering goes on past them.
    context["__builtins__"] = {
        **vars(builtins),
        **{name: Anything() for name in ("len", "range", "list")},
        # converting a generated value to text could take exponential memory (a list nested in
        # itself k times has a repr of 2**k characters); the rendered text does not matter here
        "str": lambda *args, **kwargs: "s",
    }
    try:
        with step_budget():
            eval(code, context)  # noqa: S307 - test only: runs a generated template
    except UnboundLocalError:
        pass  # a local read before assignment: no input could have supplied it
    except NameError as error:
        if not str(error).startswith("cannot access free variable"):  # a closure cell, not a global
            assert error.name in result.inputs | result.helpers, (error.name, result)
    except (Exception, OutOfSteps):
        pass  # type errors etc. from the stand-in values are irrelevant here


def _module_code(script: str) -> CodeType | None:
    """promplate's render function turned inside out: the body as module code. There a name read
    before assignment falls back to the globals, which is exactly the model the analysis uses,
    so renders get much further than inside the function (where it is an UnboundLocalError)."""
    lines = script.split("\n")[1:]  # drop `def render():`
    body = [line[4:] if line.startswith("    ") else line for line in lines if not line.startswith("    return ''")]
    try:
        return compile("\n".join(body), "<template>", "exec")
    except SyntaxError:
        return None


@settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(templates(valid_only=True))
def test_sound_against_promplate(text: str) -> None:
    template_module = pytest.importorskip("promplate.prompt.template")
    result = analyse(items_of(text))
    assume(not any(d.severity == "error" for d in result.diagnostics))
    try:
        core = template_module.TemplateCore(text)
        script = core.get_script(indent_str="    ")
        function_code = core._builder.get_render_function().__code__
    except (SyntaxError, ValueError, AssertionError, IndexError):
        assume(False)
        return
    _render(function_code, result)  # exactly as promplate renders
    module_code = _module_code(script)
    if module_code is not None:
        _render(module_code, result)


def _table_cases():
    from .test_inference import CASES

    return CASES


@pytest.mark.parametrize("case", _table_cases(), ids=lambda c: c.name)
def test_table_cases_render_with_only_their_inputs(case) -> None:
    # The expected answers of the table, checked against Python itself rather than by eye.
    template_module = pytest.importorskip("promplate.prompt.template")
    core = template_module.TemplateCore(case.template)
    script = core.get_script(indent_str="    ")
    result = analyse(items_of(case.template))
    _render(core._builder.get_render_function().__code__, result)
    module_code = _module_code(script)
    if module_code is not None:
        _render(module_code, result)


# ---------------------------------------------------------------------------------------------
# 3. Optional inputs: no input inference leaves optional makes a render fail when it is left out

#: each name has one role, so that a value for it can always be made: flags are tested and printed,
#: lists iterated and measured, objects read by key, strings called methods on
_ROLES = {"flag": ["f", "g"], "list": ["items", "tags"], "object": ["user", "order"], "text": ["s", "t"]}
_VALUES = {"flag": True, "list": [1, 2], "object": {"name": "n", "id": 1}, "text": "s"}


@st.composite
def guarded_templates(draw: st.DrawFn) -> str:
    names = st.sampled_from([n for group in _ROLES.values() for n in group])

    def cond(depth: int) -> str:
        kind = draw(st.integers(0, 5 if depth < 2 else 3))
        name = draw(names)
        if kind == 0:
            return name
        if kind == 1:
            return f"not {name}"
        if kind == 2:
            return f"{name} is None"
        if kind == 3:
            return f"{name} is not None"
        return f"({cond(depth + 1)} {draw(st.sampled_from(['and', 'or']))} {cond(depth + 1)})"

    def uses() -> str:
        flag, lst = draw(st.sampled_from(_ROLES["flag"])), draw(st.sampled_from(_ROLES["list"]))
        obj, txt = draw(st.sampled_from(_ROLES["object"])), draw(st.sampled_from(_ROLES["text"]))
        return draw(
            st.sampled_from(
                [
                    f"{{{{ {flag} }}}}",
                    f"{{% for v in {lst} %}}{{{{ v }}}}{{% endfor %}}",
                    f"{{{{ len({lst}) }}}}",
                    f"${{{obj}.name}}",
                    f'{{{{ {obj}["id"] }}}}',
                    f"{{{{ {txt}.upper() }}}}",
                    f"{{{{ {txt}.upper() if {txt} else '' }}}}",
                    f"{{{{ {txt} and {txt}.upper() }}}}",
                    f"{{{{ {flag} or 'none' }}}}",
                    "text",
                ]
            )
        )

    def body(depth: int) -> str:
        parts = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 3 and draw(st.booleans()):
                text = f"{{% if {cond(0)} %}}{body(depth + 1)}"
                if draw(st.booleans()):
                    text += f"{{% elif {cond(0)} %}}{body(depth + 1)}"
                if draw(st.booleans()):
                    text += f"{{% else %}}{body(depth + 1)}"
                parts.append(text + "{% endif %}")
            elif depth < 3 and draw(st.integers(0, 4)) == 0:
                parts.append(f"{{% for w in {draw(st.sampled_from(_ROLES['list']))} %}}{body(depth + 1)}{{% endfor %}}")
            else:
                parts.append(uses())
        return " ".join(parts)

    return body(0) + "\n"


@settings(max_examples=examples(120), deadline=None)
@given(guarded_templates(), st.data())
def test_no_input_inference_leaves_optional_fails_the_render_when_left_out(text: str, data: st.DataObject) -> None:
    from promptc.compile import compile_text
    from promptc.facts.config import Config
    from promptc.runtime import render_artifact

    compiled = compile_text(text, name="p", config=Config(tokenizer="approx-bytes/4"))
    assert compiled.artifact is not None, compiled.diagnostics
    artifact = compiled.artifact
    required = set(artifact.input_schema["required"])
    role = {name: kind for kind, group in _ROLES.items() for name in group}
    values = {}
    for name in required:
        values[name] = _VALUES[role[name]] if role[name] != "flag" else data.draw(st.booleans())
    # every optional input left out: each renders as None, and nothing fails
    render_artifact(artifact, values)


def _facts(result: Analysis) -> tuple:
    """Everything an analysis says, without the trees it hands over."""
    return (
        result.inputs,
        result.helpers,
        result.has_template,
        [(d.code, d.message, d.line, d.col, d.hint) for d in result.diagnostics],
        [(n, s.start, s.end) for n, s in result.first_uses],
        [(n, s.start, s.end) for n, s in result.all_uses],
        [(u.name, u.kind, u.attrs, u.span and (u.span.start, u.span.end), u.guarded) for u in result.shape_uses],
        result.optional,
        result.surely_compiles,
    )


@settings(max_examples=examples(150), deadline=None)
@given(st.one_of(guarded_templates(), templates(valid_only=False)), guarded_templates())
def test_blocks_parsed_once_and_shared_analyse_as_when_parsed_alone(text: str, other: str) -> None:
    """The inference keeps the trees of the blocks it parsed (`_TREES`) and shares them with every
    block written the same way: a section analysed with every tree shared (after `other` and the
    section itself were analysed) says exactly what it says with none kept."""
    inference._TREES.clear()
    alone = _facts(analyse(items_of(text)))
    analyse(items_of(other))
    analyse(items_of(text))
    shared = analyse(items_of(text))
    assert _facts(shared) == alone
    doubled = text + text  # the same blocks twice in one section: each occurrence on its own
    inference._TREES.clear()
    alone = _facts(analyse(items_of(doubled)))
    analyse(items_of(doubled))
    assert _facts(analyse(items_of(doubled))) == alone


def test_a_block_written_twice_in_a_section_keeps_its_own_guard() -> None:
    """`id`s tell the analysis's nodes apart: the second `{{ user.name }}` below is not guarded,
    even when the trees of the first were kept."""
    text = "{% if user %}{{ user.name }}{% endif %}{{ user.name }}\n"
    inference._TREES.clear()
    for _ in range(3):
        result = analyse(items_of(text))
        assert [u.guarded for u in result.shape_uses if u.kind == "attr"] == [True, False]
        assert "user" not in result.optional


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.sampled_from(["text ", "${a}", "${b.c}", "${a.b.c}", "${user.name}", "\n", "\\${x}", "${ bad }", "${}"]),
        max_size=12,
    ).map("".join)
)
def test_a_section_without_blocks_analyses_as_the_general_path_does(text: str) -> None:
    events = items_of(text)
    assert _facts(inference._placeholders_only(events)) == _facts(inference._analyse_template(events))
    assert inference._placeholders_only(events) == inference._analyse_template(events)


def _placed(result: Analysis) -> tuple:
    """`_facts` with every span's line and column too."""

    def at(span):
        return None if span is None else (span.start, span.end, span.line, span.col)

    return (
        _facts(result),
        [(n, at(s)) for n, s in result.first_uses],
        [(n, at(s)) for n, s in result.all_uses],
        [at(u.span) for u in result.shape_uses],
    )


@settings(max_examples=examples(150), deadline=None)
@given(
    st.one_of(guarded_templates(), templates(valid_only=True)),
    st.sampled_from(["", "Some words\n", "x ", "line one\n  line two ", "é\n\n\t"]),
    st.sampled_from(["", "Some words\n", "x ", "line one\n  line two ", "é\n\n\t"]),
)
def test_a_section_written_again_elsewhere_analyses_as_when_analysed_alone(text: str, before: str, again: str) -> None:
    """The inference keeps a section's analysis (`_SECTIONS`) for the sections written the same way:
    the kept one, its spans moved to where the section now stands, says exactly what a fresh
    analysis of it says, positions included."""
    inference._SECTIONS.clear()
    inference._TREES.clear()
    fresh = _placed(analyse(items_of(again + text)))
    inference._SECTIONS.clear()
    analyse(items_of(before + text))  # kept, at other positions
    assert _placed(analyse(items_of(again + text))) == fresh


def test_the_kept_trees_stay_within_their_bounds(monkeypatch) -> None:
    """`_TREES` forgets the trees used longest ago past its number of blocks or of nodes."""
    monkeypatch.setattr(inference, "_TREES_NODES", 100)
    monkeypatch.setattr(inference, "_TREES_MAX", 30)
    inference._TREES.clear()
    for round_ in range(3):
        analyse(items_of("".join(f"{{{{ item{round_}_{i}.name.upper() }}}}\n" for i in range(60))))
        kept = list(inference._TREES.values())
        assert 0 < len(kept) <= 30
        assert sum(len(trees.nodes) + 1 for trees in kept) <= 100
        assert inference._kept_nodes == sum(len(trees.nodes) + 1 for trees in kept)
