"""Property tests for input inference.

1. Whatever the template (random programs, random punctuation, unbalanced `{% %}`), `analyse`
   returns: it never raises, and every diagnostic points at a line and column inside the text.
2. Soundness against the real thing: for random *valid* templates, promplate renders them with a
   context holding only the inferred inputs and helpers (as permissive stand-in values), and no
   `NameError` ever names a variable the analysis missed.
"""

from __future__ import annotations

import builtins
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inference_helpers import items_of  # noqa: E402

from compiler.analysis.inference import BUILTIN_NAMES, analyse  # noqa: E402
from compiler.codes import CODES  # noqa: E402

NAMES = ["a", "b", "c", "x", "y", "f", "g", "i", "e", "len", "range", "str", "list"]
BINDERS = ["a", "b", "x", "y", "f", "i", "e"]  # never rebinds the builtins the programs call


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
                st.tuples(names, names).map(lambda t: f'f"{{{t[0]}!r:>{{{t[1]}}}}}!"'),
            )

        self.names = names
        self.binders = binders
        self.expressions = st.recursive(atoms, extend, max_leaves=6)

    def simple_statement(self) -> st.SearchStrategy[str]:
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
            st.sampled_from(["pass", "break", "continue", "return 'r'"]),
            binders.map(lambda n: f"global {n}"),
        ]
        if self.hostile:
            options += [
                binders.map(lambda n: f"import math as {n}"),
                binders.map(lambda n: f"from math import pi as {n}"),
                binders.map(lambda n: f"nonlocal {n}"),
            ]
        return st.one_of(*options)

    def statement(self, depth: int = 0) -> st.SearchStrategy[list[str]]:
        @st.composite
        def build(draw: st.DrawFn) -> list[str]:
            """The lines of one statement, indented four spaces per level."""
            if depth >= 2 or draw(st.integers(0, 3)) == 0:
                return [draw(self.simple_statement())]
            body = st.lists(self.statement(depth + 1), min_size=1, max_size=3).map(
                lambda ls: ["    " + ln for s in ls for ln in s]
            )
            kind = draw(st.sampled_from(["if", "for", "while", "try", "with", "def", "class", "match"]))
            e = draw(self.expressions)
            n = draw(self.binders)
            if kind == "if":
                lines = [f"if {e}:", *draw(body)]
                if draw(st.booleans()):
                    lines += [f"elif {draw(self.expressions)}:", *draw(body)]
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
                lines = [f"def {n}({draw(self.binders)}=None, *args, k={e}, **kw):", *draw(body)]
                if draw(st.booleans()):
                    lines = [f"@{draw(self.names)}", *lines]
            elif kind == "class":
                lines = [f"class {n.upper()}:", *draw(body)]
            else:
                lines = [
                    f"match {e}:",
                    f"    case [{n}, *{draw(self.binders)}]:",
                    *("    " + ln for ln in draw(body)),
                    "    case _:",
                    *("    " + ln for ln in draw(body)),
                ]
            return lines

        return build()

    def exec_block(self) -> st.SearchStrategy[str]:
        @st.composite
        def build(draw: st.DrawFn) -> str:
            lines = [ln for s in draw(st.lists(self.statement(), min_size=1, max_size=3)) for ln in s]
            if len(lines) == 1 and draw(st.booleans()):
                return "{# " + lines[0] + " #}"
            margin = draw(st.sampled_from(["", "    ", "\t"]))
            return "{#\n" + "\n".join(margin + ln for ln in lines) + "\n#}"

        return build()

    def expr_block(self) -> st.SearchStrategy[str]:
        @st.composite
        def build(draw: st.DrawFn) -> str:
            if draw(st.integers(0, 3)) == 0:
                lines = [ln for s in draw(st.lists(self.statement(2), min_size=1, max_size=2)) for ln in s]
                return "{{\n" + "\n".join("  " + ln for ln in [*lines, draw(self.expressions)]) + "\n}}"
            return "{{ " + draw(self.expressions) + " }}"

        return build()

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
                    ["{% if a %}", "{% else %}", "{% endif %}", "{% endfor %}", "{% elif b %}", "{% while %}", "{%- for -%}"]
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
                    lambda t: f"{{% for {t[0]} in {t[1]} %}}x{t[2]}"
                    + (f"{{% else %}}y{t[3]}" if t[4] else "")
                    + "{% endfor %}"
                ),
                st.tuples(expressions, body).map(lambda t: f"{{% while {t[0]} %}}x{t[1]}{{% endwhile %}}"),
            )

        piece = st.recursive(leaf, nest, max_leaves=8)
        return st.lists(piece, min_size=1, max_size=6).map("".join)


def templates(valid_only: bool) -> st.SearchStrategy[str]:
    return Grammar(hostile=not valid_only).templates()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
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

    def __exit__(self, *exc: object) -> bool:
        return bool(self)  # sometimes swallows the exception, as the analysis must allow for

    def __index__(self) -> int:
        return 2

    def __len__(self) -> int:
        return 2

    def __hash__(self) -> int:
        return 1

    def __format__(self, spec: str) -> str:
        return "any"

    def __getitem__(self, key: object) -> Anything:
        return Anything()

    def __setattr__(self, name: str, value: object) -> None:
        pass

    def __contains__(self, item: object) -> bool:
        return bool(self)

    def _op(self, *other: object) -> Anything:
        return Anything()

    __add__ = __radd__ = __mul__ = __rmul__ = __lt__ = __gt__ = __eq__ = __iadd__ = _op


@contextmanager
def time_limit(seconds: int):
    def stop(signum, frame):
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(templates(valid_only=True))
def test_sound_against_promplate(text: str) -> None:
    template_module = pytest.importorskip("promplate.prompt.template")
    result = analyse(items_of(text))
    assume(not any(d.severity == "error" for d in result.diagnostics))
    try:
        core = template_module.TemplateCore(text)
        core.compile()
        code = core._builder.get_render_function().__code__
    except (SyntaxError, ValueError, AssertionError, IndexError):
        assume(False)
        return
    context: dict[str, object] = {name: Anything() for name in result.inputs | result.helpers}
    # The builtins the programs call return stand-ins too, so rendering goes on past them.
    context["__builtins__"] = {**vars(builtins), **{name: Anything() for name in ("len", "range", "str", "list")}}
    try:
        with time_limit(1):
            eval(code, context)()  # noqa: S307 - test-only: renders a generated template
    except UnboundLocalError:
        pass  # a local read before assignment: no input could have helped
    except NameError as error:
        assert error.name in result.inputs | result.helpers, (error.name, result)
    except RecursionError:
        pass
    except Exception:
        pass  # type errors etc. from the stand-in values are irrelevant here
