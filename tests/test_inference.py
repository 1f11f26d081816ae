"""Input inference for template blocks (promptc.analysis.inference).

CASES is module level so bench/inference_vs_promplate.py can run the same table against
promplate-inspect. Each case carries a one-line comment with the Python rule behind its answer.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from promptc.analysis.inference import analyse
from promptc.facts.diagnostics import SourceText
from promptc.syntax.nodes import Block, Placeholder, Spliced, Text
from promptc.syntax.parse import template_items


def items_of(text: str, path: str = "t.prompt") -> list:
    """A template's items, read by the real parser (the inference tests run on what builds see)."""
    return list(template_items(text, path)[0])


def source_of(text: str, path: str = "t.prompt") -> SourceText:
    return SourceText.of(path, text)


class Case(NamedTuple):
    name: str
    template: str
    inputs: frozenset[str]
    helpers: frozenset[str] = frozenset()


def case(name: str, template: str, inputs: str = "", helpers: str = "") -> Case:
    return Case(name, template, frozenset(inputs.split()), frozenset(helpers.split()))


SEED = """{#
    import a as b
    from c import d
#}
{{ e }}
{{ f.strip() }}
{{ list }}
{#
    g += 1
    h = { **h }
#}
{% for i in func() %}
    {{ [ j for j in range(i) ] }}
{% endfor %}
"""

CASES: list[Case] = [
    # promplate-inspect's own example: imports bind, builtins are not inputs, `func` is only called.
    case("seed-example", SEED, "e f g h", "func"),
    # A free name is looked up in the render globals, i.e. the context: an input.
    case("free-name", "{{ x }}", "x"),
    # `${a.b}` reads the input `a` directly, whatever the template assigns.
    case("placeholder-root", "Hi ${user.name}!", "user"),
    # Placeholders never see template locals, so an assigned name is still an input there.
    case("placeholder-ignores-locals", "{# x = 1 #}${x}", "x"),
    # A placeholder is not Python: a builtin's name (`input`) is an ordinary input there.
    case("placeholder-builtin-name", "${input}", "input"),
    # Attribute access loads the root name first (`user.name` → `user`).
    case("attribute-root", "{{ user.name }}", "user"),
    # Names found in the builtins module are resolved there, never from the context.
    case("builtins-excluded", "{{ len(items) }} {{ list }}", "items"),
    # A name only ever called and never assigned is a helper (a callable), not an input.
    case("helper-call", "{{ fmt(x) }}", "x", "fmt"),
    # `func(x)[0]` still calls `func` directly.
    case("helper-call-subscripted-result", "{{ func(x)[0] }}", "x", "func"),
    # A name used as a value as well as called must be provided as a value: an input.
    case("called-and-read", "{{ f(1) }}{{ f }}", "f"),
    # `fs[0]()` calls an element of `fs`; `fs` itself is a value.
    case("call-through-subscript", "{{ fs[0]() }}", "fs"),
    # `s.upper()` calls an attribute: `s` is a value.
    case("method-call-root", "{{ s.upper() }}", "s"),
    # A callee that the template assigns somewhere (here after the call) is not a pure helper.
    case("callee-assigned-later", "{{ f() }}{# f = g #}", "f g"),
    # Assignment binds the name for the reads that follow.
    case("assign-then-read", "{# x = 1 #}{{ x }}", ""),
    # A read before the assignment comes from the context.
    case("read-then-assign", "{{ x }}{# x = 1 #}", "x"),
    # An `if` without `else` may skip its body: the body's assignment is not definite.
    case("if-no-else", "{% if c %}{# x = 1 #}{% endif %}{{ x }}", "c x"),
    # Assigned on both arms of an if/else: definite afterwards.
    case("if-else-both", "{% if c %}{# x = 1 #}{% else %}{# x = 2 #}{% endif %}{{ x }}", "c"),
    # if/elif without else: the all-false path skips both assignments.
    case("if-elif-no-else", "{% if a %}{# x = 1 #}{% elif b %}{# x = 2 #}{% endif %}{{ x }}", "a b x"),
    # if/elif/else covering every path: definite.
    case(
        "if-elif-else-all",
        "{% if a %}{# x = 1 #}{% elif b %}{# x = 2 #}{% else %}{# x = 3 #}{% endif %}{{ x }}",
        "a b",
    ),
    # A walrus in an `if` test always runs, so its target is bound after the whole statement.
    case("walrus-in-if-test", "{% if (m := find()) %}.{% endif %}{{ m }}", "", "find"),
    # A walrus in an earlier test is visible in a later `elif` test.
    case("walrus-visible-in-elif", "{% if (m := find()) %}.{% elif m %}.{% endif %}", "", "find"),
    # The `for` target is bound inside the body.
    case("for-target-in-body", "{% for i in items %}{{ i }}{% endfor %}", "items"),
    # A `for` loop may run zero times: its target is not definite after it.
    case("for-target-after-loop", "{% for i in items %}.{% endfor %}{{ i }}", "items i"),
    # Assignments in a loop body are not definite after the loop (zero iterations).
    case("for-body-assign-after", "{% for i in xs %}{# y = i #}{% endfor %}{{ y }}", "xs y"),
    # Names read inside a loop body are inputs like any other.
    case("read-inside-for-body", "{% for i in xs %}{{ i }}{{ y }}{% endfor %}", "xs y"),
    # …also inside a Python `for` in a `{# #}` block.
    case("read-inside-python-for", "{#\nfor i in xs:\n    out = z\n#}", "xs z"),
    # Tuple targets unpack into several bound names.
    case("for-tuple-target", "{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}", "d"),
    # for … else: the else clause runs unless a `break` left the loop; with no break it always runs.
    case("for-else-no-break", "{% for x in xs %}.{% else %}{# z = 1 #}{% endfor %}{{ z }}", "xs"),
    # With a reachable `break` the else clause may be skipped.
    case(
        "for-else-with-break",
        "{% for x in xs %}{% if x %}{# break #}{% endif %}{% else %}{# z = 1 #}{% endfor %}{{ z }}",
        "xs z",
    ),
    # `while` may run zero times too.
    case("while-body-assign", "{% while n %}{# m = 1 #}{% endwhile %}{{ m }}", "n m"),
    # A `while` test runs at least once, so its walrus target is bound in the body and after the loop.
    case(
        "walrus-in-while-test", "{% while (line := next_line()) %}{{ line }}{% endwhile %}{{ line }}", "", "next_line"
    ),
    # A `del` in a loop body unbinds the name for the next iteration's reads.
    case("del-in-loop", "{# x = 1 #}{% for i in xs %}{{ x }}{# del x #}{% endfor %}", "xs x"),
    # Lambda parameters are local to the lambda; other names in its body are free.
    case("lambda-param", "{{ (lambda a: a + b)(1) }}", "b"),
    # Lambda defaults are evaluated outside the lambda, where it is created.
    case("lambda-default", "{{ (lambda a=d: a)() }}", "d"),
    # Lambda parameters do not leak out of the lambda.
    case("lambda-param-no-leak", "{{ (lambda p: p)(1) }}{{ p }}", "p"),
    # List comprehension: the target is local; the iterable is evaluated outside.
    case("listcomp", "{{ [j for j in range(n)] }}", "n"),
    # Comprehension targets do not leak (Python 3).
    case("comprehension-no-leak", "{{ [j for j in xs] }}{{ j }}", "xs j"),
    # Set comprehension with a condition reading a free name.
    case("setcomp-if", "{{ {k for k in ks if k > lim} }}", "ks lim"),
    # Dict comprehension with a tuple target.
    case("dictcomp", "{{ {k: v for k, v in pairs} }}", "pairs"),
    # Generator expression: same scoping as the other comprehensions.
    case("genexp", "{{ sum(v for v in vals) }}", "vals"),
    # Nested generators: a later iterable may use an earlier target.
    case("nested-generators", "{{ [a for row in rows for a in row] }}", "rows"),
    # A walrus inside a comprehension binds in the enclosing scope, but the loop may run zero times.
    case("walrus-from-comprehension", "{{ [y := v for v in vs] }}{{ y }}", "vs y"),
    # Inside the comprehension the walrus target is bound for the operands after it.
    case("walrus-inside-comprehension", "{{ [(y := v) + y for v in vs] }}", "vs"),
    # A plain walrus binds in the current scope.
    case("walrus", "{{ (n := len(xs)) }}{{ n }}", "xs"),
    # `a or (b := 1)` may skip the walrus: b is not definite after.
    case("walrus-short-circuit", "{{ a or (b := 1) }}{{ b }}", "a b"),
    # A conditional expression runs one arm only.
    case("walrus-ifexp", "{{ (p := 1) if c else (p := 2) }}{{ p }}{{ (q := 1) if c else 0 }}{{ q }}", "c q"),
    # `with … as name` binds name before the body runs.
    case("with-as", "{# with ctx as c:\n    pass #}{{ c }}", "ctx"),
    # A context manager may swallow an exception from its body: body assignments are not definite.
    case("with-body-not-definite", "{#\nwith ctx as c:\n    v = c.x\n#}{{ v }}", "ctx v"),
    # `except E as e` binds e in the handler and deletes it when the handler ends.
    case("except-as-unbound-after", "{#\ntry:\n    r = go()\nexcept E as e:\n    r = e\n#}{{ r }}{{ e }}", "E e", "go"),
    # …even when e was assigned before the try.
    case("except-as-deletes-old-value", "{#\ne = 1\ntry:\n    pass\nexcept E as e:\n    pass\n#}{{ e }}", "E e"),
    # Inside the handler e is bound.
    case("except-as-in-handler", "{#\ntry:\n    pass\nexcept E as e:\n    msg = str(e)\n#}", "E"),
    # A name assigned only in the try body is not definite after: an exception may come first.
    case("try-only-body", "{#\ntry:\n    t = f()\nexcept Exception:\n    pass\n#}{{ t }}", "t", "f"),
    # try/except/else: the else arm and every handler assign u.
    case("try-else", "{#\ntry:\n    pass\nexcept E:\n    u = 1\nelse:\n    u = 2\n#}{{ u }}", "E"),
    # `finally` always runs: its assignments are definite after the statement.
    case("try-finally", "{#\ntry:\n    pass\nfinally:\n    fin = 1\n#}{{ fin }}", ""),
    # match: a capture is bound only in its own case (SPEC), and a wildcard case means no fall-through.
    case(
        "match-capture",
        "{#\nmatch cmd:\n    case [x]:\n        y = x\n    case _:\n        y = 0\n#}{{ y }}{{ x }}",
        "cmd x",
    ),
    # match without a catch-all may match nothing.
    case("match-no-default", "{#\nmatch cmd:\n    case 1:\n        y = 1\n#}{{ y }}", "cmd y"),
    # Value patterns (`Color.RED`) and class patterns (`Point(...)`) read their names.
    case(
        "match-value-and-class-patterns",
        "{#\nmatch p:\n    case Color.RED:\n        pass\n    case Point(x=px):\n        q = px\n#}",
        "p Color Point",
    ),
    # `del x` unbinds x: a later read comes from the context again.
    case("del-unbinds", "{# x = 1\ndel x #}{{ x }}", "x"),
    # Deleting a name that was never assigned reads it (it must exist).
    case("del-unassigned", "{# del x #}", "x"),
    # `import a.b` binds `a`.
    case("import-dotted", "{# import os.path #}{{ os.sep }}", ""),
    # `import a as b` binds only `b`.
    case("import-as", "{# import a as b #}{{ a }}{{ b }}", "a"),
    # `from c import d` binds `d`, not `c`.
    case("from-import", "{# from c import d #}{{ d }}{{ c }}", "c"),
    # `global g` at the top level: g is still read from the context until assigned.
    case("global-top-level", "{# global g\ng = 1 #}{{ g }}{# global k #}{{ k }}", "k"),
    # `global gg` inside a def always reads the module globals, i.e. the context.
    case("global-in-def", "{# def f():\n    global gg\n    return gg #}", "gg"),
    # `nonlocal q` reads the template's q, assigned only after the def: conservatively an input.
    # the template's names are module-level (global), so CPython refuses this `nonlocal` (E601 at build)
    case("nonlocal-in-def", "{# def f():\n    nonlocal q\n    return q\nq = 1 #}{{ f() }}", ""),
    # `nonlocal n` refers to the enclosing def's n, never to an input.
    case(
        "nonlocal-nested-def",
        "{# def outer():\n    n = 0\n    def inner():\n        nonlocal n\n        n += 1\n#}",
        "",
    ),
    # Augmented assignment reads the name before writing it.
    case("augassign-undefined", "{# g += 1 #}", "g"),
    # The right-hand side is evaluated before the name is bound.
    case("self-referencing-assign", "{# h = {**h} #}", "h"),
    # def parameters (all kinds) are local; defaults run at the def, outside the function.
    # defaults run at the def; the body only when called (never, here)
    case("def-params", "{# def f(a, /, b, *rest, k=dflt, **kw):\n    return a + b + k + outer #}", "dflt"),
    case(
        "def-params-called",
        "{# def f(a, /, b, *rest, k=dflt, **kw):\n    return a + b + k + outer #}{{ f(1, 2) }}",
        "dflt outer",
    ),
    # A closure's free name assigned before the def (and never deleted) is available at call time.
    case("def-closure-bound", "{# base = 1\ndef f():\n    return base #}{{ f() }}", ""),
    # Late binding: the body reads `later` when called, and it is bound by then.
    case("def-closure-assigned-later", "{# def f():\n    return later\nlater = 1 #}{{ f() }}", ""),
    # Called before it is bound: an input.
    case("def-closure-called-early", "{# def f():\n    return later #}{{ f() }}{# later = 1 #}", "later"),
    # Recursion: the function's own name is bound when it runs (promplate prints `5! = 120`).
    case("def-recursive", "{#\ndef fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n#}5! = {{ fact(5) }}", ""),
    # A function passed on may run later: what its body reads is resolved where it is passed.
    case("def-passed-on", "{# def f(): return w #}{{ list(map(lambda _: f(), [1])) }}", "w"),
    case("def-calls-def", "{# def g(): return f() #}{# def f(): return z #}{{ g() }}", "z"),
    # A name assigned anywhere in a function is local to it: never read from the context.
    case("def-local-never-input", "{# def f(c):\n    if c:\n        t = 1\n    return t #}", ""),
    # A decorator is evaluated when the def runs, as a value.
    case("decorator", "{# @deco\ndef f():\n    pass #}", "deco"),
    # Class bodies run at once; their own assignments are visible to later class-body lines.
    case("class-body", "{# class K:\n    a = 1\n    b = a + ext #}{{ K.b }}", "ext"),
    # Class scope is not visible from methods: `a` in m() is a global.
    case("class-scope-invisible-to-methods", "{# class K:\n    a = 1\n    def m(self):\n        return a #}", "a"),
    # Nor from comprehensions other than their first iterable.
    case("class-scope-and-comprehension", "{# class K:\n    xs = [1]\n    ys = [x + xs for x in xs] #}", "xs"),
    # Class bases are evaluated outside the class body.
    case("class-bases", "{# class K(Base, metaclass=Meta):\n    pass #}", "Base Meta"),
    # `break` leaves the loop before the else clause; both paths assign `found`.
    case(
        "break-else",
        "{#\nfor i in xs:\n    if i:\n        found = i\n        break\nelse:\n    found = None\n#}{{ found }}",
        "xs",
    ),
    # `continue` skips the rest of the body: `w` may stay unassigned.
    case("continue", "{#\nfor i in xs:\n    if i:\n        continue\n    w = i\n#}{{ w }}", "xs w"),
    # Leaving an `except … as e` handler by `break` deletes e too.
    case(
        "break-from-handler-deletes-name",
        "{#\nfor i in xs:\n    e = 1\n    try:\n        pass\n    except E as e:\n        break\nelse:\n    e = 2\n#}{{ e }}",
        "xs E e",
    ),
    # A `break` inside `finally` leaves before the rest of the finally clause runs.
    case(
        "break-inside-finally",
        "{#\nfor i in xs:\n    try:\n        pass\n    finally:\n        if c:\n            break\n        z = 1\n"
        "else:\n    z = 2\n#}{{ z }}",
        "xs c z",
    ),
    # A `break` inside `try` runs the finally clause on its way out.
    case(
        "break-through-finally",
        "{#\nfor i in xs:\n    try:\n        break\n    finally:\n        z = 1\nelse:\n    z = 2\n#}{{ z }}",
        "xs",
    ),
    # `while True` only exits through `break`, after `got` is assigned.
    case("while-true-break", "{#\nwhile True:\n    got = f()\n    break\n#}{{ got }}", "", "f"),
    # A `break` in a `{# #}` block leaves the enclosing `{% for %}`.
    case("template-break", "{% for x in xs %}{# if x: break #}{# seen = x #}{% endfor %}{{ seen }}", "xs seen"),
    # A branch that returns never reaches the code after the `if`.
    case("return-branch", "{% if c %}{# return '' #}{% else %}{# z = 1 #}{% endif %}{{ z }}", "c"),
    # assert reads its test and message.
    case("assert", "{# assert ok, msg #}", "ok msg"),
    # f-strings read the names in their replacement fields and format specs.
    case("f-string", '{# s = f"{name!r:>{width}}" #}{{ s }}', "name width"),
    # Starred targets bind a list.
    case("starred-target", "{# first, *rest = seq #}{{ rest }}{{ first }}", "seq"),
    # `x.a = 1` reads x and binds nothing.
    case("attribute-target", "{# obj.a = 1 #}{{ obj }}", "obj"),
    # `d[k] = v` reads d, k and v.
    case("subscript-target", "{# d[k] = v #}", "d k v"),
    # `x: int = 1` binds x; in a function the annotation is not evaluated.
    case("annotated-assign", "{# x: Sized = 1 #}{{ x }}", ""),
    # `x: int` alone binds nothing.
    case("bare-annotation", "{# x: int #}{{ x }}", "x"),
    # A multi-line `{{ }}` runs its statements, then outputs its last expression.
    case("multiline-expr-block", "{{\n    t = x * 2\n    t + 1\n}}", "x"),
    # `{% if x %}plain text{% endif %}` (crashes promplate-inspect) just reads x.
    case("if-plain-text", "{% if x %}plain text{% endif %}", "x"),
    # A generator's body runs when consumed: a name deleted in the scope may be gone by then.
    case("genexp-deferred-del", "{# y = 1\ng = (y for _ in xs)\ndel y #}{{ list(g) }}", "xs y"),
    # promplate's render function defines __append__/__parts__ before the template runs.
    case("promplate-locals", "{{ __parts__ }}", ""),
    # Whitespace-control markers are not code.
    case("trim-markers", "{%- for i in items -%}{{- i -}}{%- endfor -%}", "items"),
]


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_cases(c: Case) -> None:
    result = analyse(items_of(c.template))
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert (result.inputs, result.helpers) == (c.inputs, c.helpers)


def test_enough_cases() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


def test_has_template() -> None:
    assert analyse(items_of("just text ${x}")).has_template is False
    assert analyse(items_of("{{ 1 }}")).has_template is True


def test_spliced_partial_is_inline() -> None:
    outer = items_of("{# x = 1 #}")
    partial_text = "{{ x }}{{ y }}"
    partial = Spliced(source_of(partial_text, "p.prompt"), tuple(items_of(partial_text, "p.prompt")), ("p.prompt",))
    inner = Spliced(source_of("${z}", "q.prompt"), tuple(items_of("${z}", "q.prompt")), ("q.prompt",))
    nested = Spliced(source_of("", "r.prompt"), (inner,), ("r.prompt",))
    result = analyse([*outer, partial, nested])
    assert result.inputs == {"y", "z"}


# ---------------------------------------------------------------------------------------------
# Diagnostics and their positions


def only(result, code: str):
    found = [d for d in result.diagnostics if d.code == code]
    assert len(found) == 1, result.diagnostics
    return found[0]


def test_syntax_error_line_and_column() -> None:
    text = "line one\nline two\nline three\nsay {{ a + }} now\n"
    d = only(analyse(items_of(text)), "E601")
    assert (d.line, d.col) == (4, 11)  # Python points just after `+`, where an operand is missing
    assert d.source_line == "say {{ a + }} now"


def test_syntax_error_points_at_bad_token() -> None:
    text = "x\n\n   {{ value $ 2 }}"
    d = only(analyse(items_of(text)), "E601")
    assert (d.line, d.col) == (3, 13)
    assert text.splitlines()[2][d.col - 1] == "$"


def test_syntax_error_in_indented_multiline_exec_block() -> None:
    text = "Intro\n{#\n    total = 0\n    for item in items\n        total += item\n#}\n{{ total }}"
    d = only(analyse(items_of(text)), "E601")
    # `expected ':'` right after `for item in items`, on the file's line 4
    assert d.line == 4
    assert d.col == len("    for item in items") + 1
    assert "expected ':'" in d.message


def test_error_column_with_non_ascii_before_it() -> None:
    text = "é{# s = 'ééé' ; t = s +  #}"
    d = only(analyse(items_of(text)), "E601")
    assert (d.line, d.col) == (1, len("é{# s = 'ééé' ; t = s +") + 1)  # characters, not UTF-8 bytes


def test_syntax_error_in_stmt_header() -> None:
    text = "a\n{% if x === y %}z{% endif %}"
    d = only(analyse(items_of(text)), "E601")
    assert d.line == 2
    assert text.splitlines()[1][d.col - 1] == "="


def test_syntax_error_in_elif_header_is_mapped() -> None:
    text = "{% if a %}1{% elif b c %}2{% endif %}"
    d = only(analyse(items_of(text)), "E601")
    assert d.line == 1
    assert text[d.col - 1] in "bc"


def test_indentation_error_is_reported() -> None:
    text = "{# x = 1\n      y = 2 #}"
    d = only(analyse(items_of(text)), "E601")
    assert d.line == 2


def test_e602_statement_at_end() -> None:
    text = "{{\n    x = 1\n}}"
    d = only(analyse(items_of(text)), "E602")
    assert (d.line, d.col) == (2, 5)


def test_e602_one_line_assignment_and_several_statements() -> None:
    assert only(analyse(items_of("{{ x = 1 }}")), "E602")
    d = only(analyse(items_of("{{ a; b }}")), "E602")
    assert d.col == len("{{ a; ") + 1


def test_e602_empty_block_still_analyses_others() -> None:
    result = analyse(items_of("{{ }}{{ q }}"))
    assert only(result, "E602")
    assert result.inputs == {"q"}


def test_e602_block_statements_still_count() -> None:
    result = analyse(items_of("{{\n    y = x\n}}{{ y }}"))
    assert only(result, "E602")
    assert result.inputs == {"x"}


def test_w603_dynamic_access() -> None:
    for code in ("{{ globals() }}", "{{ locals()['x'] }}", "{{ vars() }}", "{{ eval('x') }}", "{# exec('y = 1') #}"):
        result = analyse(items_of(code))
        assert only(result, "W603").severity == "warning", code
    assert not analyse(items_of("{{ vars(obj) }}")).diagnostics
    assert only(analyse(items_of("{{ sys._getframe().f_locals }}")), "W603")


def test_break_outside_loop_and_import_star() -> None:
    assert only(analyse(items_of("{# break #}")), "E601")
    assert only(analyse(items_of("{# nonlocal z #}")), "E601")
    d = only(analyse(items_of("text\n{# def f():\n    nonlocal z\n    return z #}")), "E601")
    assert "nonlocal 'z'" in d.message and d.line == 2
    assert only(analyse(items_of("{# from m import * #}")), "E601")
    assert not analyse(items_of("{% for i in xs %}{# break #}{% endfor %}")).diagnostics


def test_deep_parentheses_give_e210() -> None:
    text = "line\n{{ " + "(" * 1000 + "x" + ")" * 1000 + " }}"
    d = only(analyse(items_of(text)), "E210")
    assert d.line == 2


def test_deep_expression_does_not_crash() -> None:
    for code in ("-" * 100_000 + "x", "a + " * 100_000 + "a", "not " * 50_000 + "x", "[" * 150 + "]" * 150):
        result = analyse(items_of("{{ " + code + " }}"))
        assert all(d.code in ("E210", "E601") for d in result.diagnostics)


def test_long_but_parseable_chain_is_analysed() -> None:
    # left-deep BinOp 800 levels: Python parses it, our walker is iterative
    result = analyse(items_of("{{ " + " + ".join(f"v{i}" for i in range(800)) + " }}"))
    assert not result.diagnostics
    assert len(result.inputs) == 800


def test_thousand_nested_ifs_give_e210_not_an_exception() -> None:
    depth = 1000
    text = "".join(f"{{% if c{i} %}}" for i in range(depth)) + "{{ x }}" + "{% endif %}" * depth
    result = analyse(items_of(text))
    d = only(result, "E210")
    assert d.line == 1
    assert "x" in result.inputs and "c999" in result.inputs


def test_nesting_within_python_limit_is_fine() -> None:
    depth = 90
    text = "".join(f"{{% if c{i} %}}" for i in range(depth)) + "{{ x }}" + "{% endif %}" * depth
    assert not analyse(items_of(text)).diagnostics


def test_too_many_nested_loops() -> None:
    text = "".join(f"{{% for i{n} in xs %}}" for n in range(21)) + "." + "{% endfor %}" * 21
    assert only(analyse(items_of(text)), "E210")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{% endif %}", "E205"),
        ("{% if a %}", "E204"),
        ("{% for a in b %}{% endif %}", "E206"),
        ("{% else %}", "E209"),
        ("{% for a in b %}{% elif c %}{% endfor %}", "E209"),
        ("{% if a %}A{% else %}B{% else %}C{% endif %}", "E209"),
        ("{% if a %}A{% else %}B{% elif c %}C{% endif %}", "E209"),
        ("{% for x in y %}A{% else %}B{% else %}C{% endfor %}", "E209"),
    ],
)
def test_unbalanced_structure_is_the_parsers_once(text: str, code: str) -> None:
    items, parsed = template_items(text)
    assert [d.code for d in parsed] == [code]
    # the analysis stays sound on a broken structure and does not report it a second time
    assert not [d for d in analyse(items).diagnostics if d.code == code]


def test_malformed_header_shapes() -> None:
    assert only(analyse(items_of("{% if a: pass %}x{% endif %}")), "E601")  # a header is one statement
    assert only(analyse(items_of("{% for x %}y{% endfor %}")), "E601")


def test_block_without_source_does_not_crash() -> None:
    span = SourceText.of("t.prompt", "{{ a + }}").span(0, 9)
    detached = type(span)(span.start, span.end, span.line, span.col)  # src=None
    result = analyse([Block("expr", " a + ", detached, detached), Text("x", detached), Placeholder("p", detached)])
    assert only(result, "E601").line == 1
    assert result.inputs == {"p"}


def test_odd_blocks_never_raise() -> None:
    src = SourceText.of("t.prompt", "x" * 40)
    span = src.span(0, 40)
    odd = [
        Block("stmt", "", span, src.span(2, 2)),
        Block("stmt", " include other ", span, src.span(2, 17), keyword="include"),
        Block("stmt", " endfor ", span, src.span(2, 10), keyword="endfor"),
        Block("expr", "a\x00b", span, src.span(2, 5)),
        Block("exec", "\r\n  x = 1\r\n", span, src.span(2, 13)),
        Block("expr", "", span, src.span(2, 2)),
        Block("stmt", " elif ", span, src.span(2, 8), keyword="elif"),
        Block("stmt", " if ", span, src.span(2, 6), keyword="if"),
    ]
    result = analyse(odd)
    assert result.has_template
    codes = {d.code for d in result.diagnostics}
    assert {"E601", "E602"} <= codes  # tags the parser refuses (E208, E205) are not the analysis's to report
    assert analyse([]) == type(result)(frozenset(), frozenset(), False, ())
