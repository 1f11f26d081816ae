"""The inference pass: variable inference (docs/language.md, "Inputs") and the `/// input:` contract check.

Each section is analysed on its own (sections render independently, so a name assigned in one
section is not visible in another). The analysis itself lives in `promptc.analysis.inference`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ..analysis.inference import ShapeUse, analyse
from ..facts import codes
from ..facts.codes import CODES
from ..facts.diagnostics import Fix, SourceText, Span, insert, replace_word
from ..facts.language import IDENTIFIER
from ..facts.suggest import did_you_mean
from ..runtime import template
from ..runtime.inputtypes import describe, optional
from ..syntax.nodes import Block, Document, Message, Placeholder, Section, evolve, section_text
from . import jinja_habits
from .context import Context

#: what compiling a section can find that the analysis did not (structure is the parser's)
_COMPILE_CODES = frozenset({codes.PYTHON_SYNTAX, codes.EXPR_BLOCK_NOT_EXPRESSION})


_IDENTIFIER = IDENTIFIER


def _code_names(section: Section) -> set[str]:
    """Every identifier written in a section's template blocks (loop variables, assignments…):
    the names a misspelt one was most likely meant to be."""
    return {m.group() for item in section.items if isinstance(item, Block) for m in _IDENTIFIER.finditer(item.code)}


def first_uses(section: Section) -> dict[str, Span | None]:
    """Each name the analysis saw the section use → where it first did: built once for a section
    whose names are all looked up (a scan of `section.uses` per name was quadratic in them)."""
    found: dict[str, Span | None] = {}
    for used, span in section.uses:
        found.setdefault(used, span)
    return found


def first_use(section: Section, name: str, uses: dict[str, Span | None] | None = None) -> Span | None:
    """Where a section first uses an input: the placeholder or the name node the analysis saw
    first; else (a section the analysis did not see) the first textual occurrence. `uses` is the
    section's `first_uses`, when the caller looks up many names."""
    if uses is None:
        uses = first_uses(section)
    if name in uses:
        return uses[name]
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    for item in section.items:
        if isinstance(item, Placeholder) and item.root == name:
            return item.span
        if isinstance(item, Block):
            match = pattern.search(item.code)
            if match and item.code_span.src is not None:
                start = item.code_span.start + match.start()
                return item.code_span.src.span(start, start + len(name))
    return section.span


def _check_compiles(section: Section, ctx: Context, blocks: Sequence[template.Parsed] = ()) -> None:
    """Hand CPython's compiler exactly the program the runtime will run for this section (the same
    code generator on the same artifact text), so what cannot render is a build error: CPython's
    own checks (`def f(a, a)`, a walrus in a comprehension's iterable, `await`, `nonlocal` with
    nothing to bind) and the template's (`return` with a value, `yield`). The error is located in
    the `.prompt` file through the block it came from. Nothing is executed. `blocks` are the
    section's blocks as the analysis parsed them (the k-th block item is the k-th block token of
    the section's text), so the compile parses none of them again. Not called for a section the
    analysis found `surely_compiles` (nothing in it can fail only at compile time)."""
    text, _ = section_text(section)
    try:
        template.check_section(text, blocks or None)
    except template.TemplateSyntaxError as error:
        if error.code not in _COMPILE_CODES:
            return  # a structure problem: the parser has reported it at the tag
        ctx.report(CODES[error.code], error.message, _locate(section, text, error), error.hint)


def _locate(section: Section, text: str, error: template.TemplateSyntaxError) -> Span | None:
    """The `.prompt` span of an error the compiler found in the section's artifact text: the k-th
    placeholder or block token of the text is the k-th placeholder or block item of the section."""
    tokens = template.scan(text)
    if error.token is None or not 0 <= error.token < len(tokens):
        return section.span
    k = sum(1 for token in tokens[: error.token] if token.kind != "lit")
    items = [item for item in section.items if isinstance(item, (Placeholder, Block))]
    if k >= len(items) or items[k].span.src is None:
        return section.span
    item, token = items[k], tokens[error.token]
    start = item.span.start + max(0, min((error.offset or token.pos) - token.pos, item.span.end - item.span.start - 1))
    end = start + 1
    if error.end_offset is not None:
        end = min(max(start + 1, item.span.start + error.end_offset - token.pos), item.span.end)
    return (item.span.src or section.source).span(start, end)


def infer_inputs(doc: Document, ctx: Context) -> Document:
    messages = []
    all_inputs: set[str] = set()
    all_helpers: set[str] = set()
    required: set[str] = set()  # inputs some section uses where a None would fail
    shape_uses: list[ShapeUse] = []
    habits: list[jinja_habits.Habit] = []
    for message in doc.messages:
        sections = []
        for section in message.sections:
            analysis = analyse(section.items)
            # Nesting too deep for Python may already be the parser's E210; say it once.
            skip = {codes.TOO_DEEP} if any(d.code == codes.TOO_DEEP for d in ctx.diagnostics) else set()
            ctx.extend(d for d in analysis.diagnostics if d.code not in skip)
            ambiguous = any(
                d.code == codes.AMBIGUOUS_ADJACENCY for d in ctx.diagnostics
            )  # its text is not the source's
            if (
                analysis.has_template
                and not analysis.surely_compiles
                and not ambiguous
                and not any(d.severity == "error" for d in analysis.diagnostics)
            ):
                _check_compiles(section, ctx, analysis.blocks)
            inputs = tuple(sorted(set(section.inputs) | analysis.inputs))
            habits += jinja_habits.check(section, set(inputs), ctx, set(analysis.helpers) - set(inputs))
            helpers = tuple(sorted(analysis.helpers - set(inputs)))
            all_inputs.update(inputs)
            all_helpers.update(helpers)
            required.update(set(inputs) - analysis.optional)
            shape_uses += analysis.shape_uses
            sections.append(
                evolve(
                    section,
                    inputs=inputs,
                    helpers=helpers,
                    has_template=analysis.has_template,
                    uses=analysis.first_uses,
                    references=analysis.all_uses,
                )
            )
        messages.append(Message(message.role, message.span, tuple(sections)))
    inputs = tuple(sorted(all_inputs))
    doc = evolve(
        doc,
        messages=tuple(messages),
        inputs=inputs,
        helpers=tuple(sorted(all_helpers - all_inputs)),
        optional_inputs=tuple(n for n in inputs if n not in required),
    )
    said = _check_declared(doc, ctx, {h.name: h for h in habits})
    for habit in habits:
        if habit.name not in said:
            ctx.report(codes.JINJA_HABIT, habit.message, habit.span, habit.hint)
    inputs_set = frozenset(doc.inputs)  # membership by hash: `in` on the tuple was quadratic in the inputs
    return evolve(doc, inferred_types=_types_from_uses(doc, [u for u in shape_uses if u.name in inputs_set], ctx))


# ---------------------------------------------------------------------------------------------
# Types from uses

_NOT_ITERABLE = frozenset({"integer", "number", "boolean", "null"})
#: what a `{% for %}` can walk, among JSON's values (a mapping walks its keys)
_ITERABLE: dict[str, Any] = {"type": ["array", "object", "string"]}


def _kinds(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema admits, or None when it does not say (any value)."""
    if not isinstance(schema, dict):
        return None
    if "anyOf" in schema:
        found: set[str] = set()
        for option in schema["anyOf"]:
            kinds = _kinds(option)
            if kinds is None:
                return None
            found |= kinds
        return found
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
        return {names.get(type(v), "array" if isinstance(v, list) else "object") for v in values}
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind, "number"} if kind == "integer" else {kind}
    if isinstance(kind, list):
        return set(kind)
    return None


def _member_schema(schema: dict[str, Any], attr: str) -> tuple[Any, str | None]:
    """(the schema of `value.attr`, None) or (None, why the declared type has no such member)."""
    options = [o for o in schema.get("anyOf", [schema]) if isinstance(o, dict) and _kinds(o) != {"null"}]
    for option in options:
        kinds = _kinds(option)
        if kinds is not None and "object" not in kinds:
            continue
        properties = option.get("properties", {})
        if attr in properties:
            return properties[attr], None
        extra = option.get("additionalProperties")
        if isinstance(extra, dict):
            return extra, None
        if extra is not False:
            return {}, None
    kinds = _kinds(schema) or set()
    if "object" in kinds:
        names = sorted({n for o in options for n in o.get("properties", {})})
        close = did_you_mean(attr, names, limit=1)
        listed = ", ".join(f"`{n}`" for n in names) or "none"
        return None, f"has no property `{attr}` (its schema lists {listed})" + (f"\0{close}" if close else "")

    return None, f"is {describe(schema)}, which has no keys or attributes"


def _types_from_uses(doc: Document, uses: list[ShapeUse], ctx: Context) -> tuple[tuple[str, dict[str, Any]], ...]:
    """Check uses against declared types (E505 at the use), and infer a type for each input that
    has none: `${user.name}` → an object with a required `name`; a `{% for %}` over it → a list,
    a mapping or a string. Uses only inside `{% if %}`/loop bodies also admit None."""
    declared = dict(doc.header.input_types)
    spans = dict(doc.header.declared_input_spans)
    inferred: dict[str, dict[str, Any]] = {}
    # each inferred object's `required` as a set, for `in` (on the list, N attributes of one input cost
    # N²); keyed by identity: an object node is never replaced, so its id stays its own
    required_of: dict[int, set[str]] = {}
    for use in uses:
        schema = declared.get(use.name)
        if schema is not None:
            _check_use(use, schema, spans.get(use.name), ctx)
            continue
        if use.kind == "attr":
            continue  # Python attributes say nothing JSON Schema can: any object may have them
        if use.kind == "iter":
            inferred.setdefault(use.name, dict(_ITERABLE))
            continue
        if not use.attrs:
            continue
        node = inferred.get(use.name)
        if node is None or node.get("type") != "object":
            node = inferred[use.name] = {"type": "object", "properties": {}, "required": []}
        for depth, attr in enumerate(use.attrs):
            properties = node["properties"]
            required = required_of.get(id(node))
            if required is None:
                required = required_of[id(node)] = set(node["required"])
            if attr not in required:
                required.add(attr)
                node["required"].append(attr)
            last = depth == len(use.attrs) - 1
            child = properties.get(attr)
            if child is None or (not last and child.get("type") != "object"):
                child = properties[attr] = {} if last else {"type": "object", "properties": {}, "required": []}
            node = child
    out: list[tuple[str, dict[str, Any]]] = []
    optional_inputs = frozenset(doc.optional_inputs)
    for name in sorted(inferred):
        schema = _sorted_schema(inferred[name])
        if name in optional_inputs:  # every use is guarded: None may be passed, or nothing
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            schema = {**schema, "type": [*kinds, "null"]}
        out.append((name, schema))
    return tuple(out)


def _sorted_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Properties and required names in sorted order: the artifact does not depend on use order."""
    if "properties" not in schema:
        return schema
    properties = {k: _sorted_schema(v) for k, v in sorted(schema["properties"].items())}
    return {"type": schema["type"], "properties": properties, "required": sorted(schema["required"])}


def _described(schema: Any) -> str:
    return describe(schema)


def _present(schema: dict[str, Any], attr: str, member: Any) -> bool:
    """Whether every value `schema` admits has `attr`, or `attr` renders its `default` when absent:
    a property the schema names (in some object option) is present when each object option
    requires it. A key only a map type (`additionalProperties`) admits is the caller's promise."""
    if isinstance(member, dict) and "default" in member:
        return True
    options = [o for o in schema.get("anyOf", [schema]) if isinstance(o, dict) and _kinds(o) != {"null"}]
    named = [o for o in options if attr in (o.get("properties") or {})]
    if not named:
        return True
    return all(attr in (o.get("required") or ()) for o in options if "object" in (_kinds(o) or {"object"}))


def _check_use(use: ShapeUse, schema: dict[str, Any], declared_at: Span | None, ctx: Context) -> None:
    where = f" (declared at line {declared_at.line})" if declared_at is not None else ""
    if use.kind == "iter":
        kinds = _kinds(schema)
        if kinds is not None and kinds <= _NOT_ITERABLE:
            ctx.report(
                codes.TYPE_CONTRADICTED,
                f"`{{% for %}}` over `{use.name}`, which is declared {describe(schema)}{where}: it cannot be iterated",
                use.span,
                f"declare `{use.name}` as a list (`list[str]`), or loop over something else",
            )
        elif not use.guarded:
            if optional(schema):
                ctx.report(
                    codes.TYPE_CONTRADICTED,
                    f"`{{% for %}}` over `{use.name}`, which may be None (declared {_described(schema)}){where}: "
                    "left out, it cannot be iterated",
                    use.span,
                    f"guard the loop (`{{% if {use.name} %}}…{{% endif %}}`), or declare `{use.name}` without `| None`",
                )
        return
    if use.kind == "attr":
        kinds = _kinds(schema)
        attr = use.attrs[0]
        if kinds is not None and kinds - {"null"} == {"object"} and not hasattr(dict, attr):
            ctx.report(
                codes.TYPE_CONTRADICTED,
                f"`{use.name}.{attr}`: `{use.name}` is declared a JSON object{where}, which template code "
                "receives as a dict: a dict has no attribute `{attr}`".replace("{attr}", attr),
                use.span,
                f'read the key: `{use.name}["{attr}"]` (placeholders `${{{use.name}.{attr}}}` read keys themselves)',
            )
        return
    path = f"`${{{use.name}.{'.'.join(use.attrs)}}}`"
    if use.attrs and optional(schema) and not use.guarded:
        ctx.report(
            codes.TYPE_CONTRADICTED,
            f"{path}: `{use.name}` may be None (its declared type admits null){where}, and None has no keys",
            use.span,
            f"guard the use (`{{% if {use.name} %}}…{{% endif %}}`), or declare `{use.name}` without `| None`",
        )
        return
    node: Any = schema
    walked = use.name
    for depth, attr in enumerate(use.attrs):
        if not isinstance(node, dict):
            return
        member, problem = _member_schema(node, attr)
        if problem is None and member is False:
            problem = f"cannot have `{attr}` (its schema admits no value there)"
        if problem is None and not _present(node, attr, member):
            ctx.report(
                codes.TYPE_CONTRADICTED,
                f"{path}: `{attr}` is not required by the schema of `{walked}`{where}, so a value without it "
                "would have nothing to render here",
                use.span,
                f"add `{attr}` to `required`, or give it a `default` (what renders when it is absent)",
            )
            return
        if problem is None and depth < len(use.attrs) - 1 and optional(member):
            ctx.report(
                codes.TYPE_CONTRADICTED,
                f"{path}: `{walked}.{attr}` may be null (its schema admits null){where}, and null has no keys",
                use.span,
                f"take `null` out of the schema of `{attr}`, or read `${{{walked}.{attr}}}` only",
            )
            return
        if problem is not None:
            problem, _, close = problem.partition("\0")
            ctx.report(
                codes.TYPE_CONTRADICTED,
                f"`${{{use.name}.{'.'.join(use.attrs)}}}`: `{walked}` {problem}{where}",
                use.span,
                f"did you mean `{close}`?"
                if close
                else f"change the declared type of `{use.name}`, or the placeholder",
                [replace_word(ctx.source_of(use.span), use.span, attr, close)] if close and use.span else (),
            )
            return
        node = member
        walked += "." + attr
        if not node:
            return


def _declare(doc: Document, src: SourceText, name: str, written: dict[int, bool]) -> Fix | None:
    """The fix adding `name` to the prompt's `/// input:` (in the file that uses it, when that
    file declares the inputs). `written` keeps, per file, whether the line names anything yet: it
    is read once, not once per name (a long line and many undeclared names multiplied)."""
    where = doc.header.declared_inputs_span
    if where is None or (where.src is not None and where.src is not src):
        return None
    if id(src) not in written:
        written[id(src)] = bool(src.text[where.start : where.end].strip())
    return insert(src, where.end, f", {name}" if written[id(src)] else f" {name}", f"Add `{name}` to `/// input:`")


#: How many candidate names the "did you mean" hints for one prompt's undeclared inputs compare in
#: all. Each is an edit distance, and N misspelt names against N declared ones would be N² of them
#: (2,000 and 2,000 took 43 s); a prompt with typos by the dozen stays far below. Past the budget a
#: name's hint says how to declare it, without a suggestion.
_SUGGESTION_COMPARISONS = 50_000


#: How many declared names a hint lists: each undeclared name's hint lists them, so all of them
#: would make N undeclared names print N times the declaration.
_LISTED_AT_MOST = 20


def _listed(names: Sequence[str]) -> str:
    """`a, b, c`, or the first `_LISTED_AT_MOST` and how many more; `none` for no name."""
    if len(names) <= _LISTED_AT_MOST:
        return ", ".join(names) or "none"
    return f"{', '.join(names[:_LISTED_AT_MOST])} and {len(names) - _LISTED_AT_MOST:,} more"


#: a directive line whose key is close to `input` (`/// inputs: a`, `/// Input: a`)
_INPUT_LIKE = re.compile(r"^[ \t]*///[ \t]*([A-Za-z][A-Za-z0-9_.\-]*)[ \t]*:([^\n]*)$", re.M)


def _meant_input_line(ctx: Context) -> tuple[Span, str, str] | None:
    """The directive that was meant to be `/// input:` (its key misspelt), with its key and value."""
    text = ctx.source.text
    for match in _INPUT_LIKE.finditer(text):
        key = match.group(1)
        if key != "input" and did_you_mean(key.lower(), ["input"]) == "input":
            return ctx.source.span(match.start(1), match.end(1)), key, match.group(2).strip()
    return None


def _check_declared(doc: Document, ctx: Context, habits: dict[str, jinja_habits.Habit] | None = None) -> set[str]:
    """E501, E503 and W502. Returns the names an error was reported for (a Jinja habit's name
    among them carries the habit's hint, so its W605 is not said twice)."""
    habits = habits or {}
    said: set[str] = set()
    declared = doc.header.declared_inputs
    if declared is None:
        if ctx.config.require_declared_inputs and doc.inputs:
            plain = [n for n in doc.inputs if n not in habits]
            jinja = [n for n in doc.inputs if n in habits]
            said.update(plain)  # the Jinja habits keep their W605, which says what to write
            meant = _meant_input_line(ctx)
            span: Span | None
            if meant is not None:
                span, key, value = meant
                message = (
                    f"no `/// input:` declaration: `/// {key}:` (line {meant[0].line}) is not the `input` directive "
                    f"(inputs used: {', '.join(doc.inputs)})"
                )
                hints = [f"write `/// input: {value or ', '.join(plain)}`"]
            else:
                message = f"no `/// input:` declaration (inputs used: {', '.join(doc.inputs)})"
                span = ctx.source.span(0)
                hints = [f"add `/// input: {', '.join(plain)}`"] if plain else []
            if jinja:
                names = ", ".join(f"`{n}`" for n in jinja)
                one = len(jinja) == 1
                hints.append(
                    f"{names} {'comes' if one else 'come'} from Jinja syntax, not meant as "
                    f"{'an input' if one else 'inputs'} (W605 says what to write)"
                )
            ctx.report(codes.NO_INPUT_DECLARATION, message, span, "; ".join(hints))
        return said
    # Every lookup below is by hash, and what serves every undeclared name is built once: the
    # section that first uses each input, each section's first uses and code names. Membership in
    # tuples and a scan of every section per name made N undeclared names cost N² (issue 33).
    declared_set = set(declared)
    spans = dict(doc.header.declared_input_spans)
    used = set(doc.inputs) | set(doc.helpers)  # a declared helper is used
    unused = [n for n in declared if n not in used]
    unused_set = set(unused)
    first_section: dict[str, Section] = {}
    for m in doc.messages:
        for s in m.sections:
            for name in s.inputs:
                first_section.setdefault(name, s)
    uses_of: dict[int, dict[str, Span | None]] = {}
    names_of: dict[int, set[str]] = {}
    written: dict[int, bool] = {}  # whether `/// input:` names anything, per file
    compared = 0  # candidates the "did you mean" hints compared so far (_SUGGESTION_COMPARISONS)
    listed = _listed(declared)
    for name in doc.inputs:
        if name in declared_set:
            continue
        section = first_section.get(name)
        span = None
        if section is not None:
            if id(section) not in uses_of:
                uses_of[id(section)] = first_uses(section)
            span = first_use(section, name, uses_of[id(section)])
        src = span.src if span is not None and span.src is not None else ctx.source
        placeholder = span is not None and src.text.startswith("${", span.start)
        close = None
        if compared < _SUGGESTION_COMPARISONS:
            if section is not None and id(section) not in names_of:
                names_of[id(section)] = _code_names(section)
            code_names = names_of[id(section)] if section is not None else set()
            others = sorted((declared_set | code_names) - {name})
            compared += len(unused) + len(others)
            close = did_you_mean(name, unused, limit=2) or did_you_mean(name, others, limit=2)
        if name in habits:
            habit = habits[name]
            ctx.report(codes.UNDECLARED_INPUT, f"{habit.message}, and it is not declared", habit.span, habit.hint)
            said.add(name)
            continue
        fixes: list[Fix | None] = []
        if close in unused_set:
            # either the use or the declaration holds the typo: the hint must not pick one
            line = spans[close].line if close in spans else "?"
            hint = f"`/// input:` declares `{close}` (line {line}), which nothing uses: fix whichever is misspelt"
        elif close:
            hint = f"did you mean `{close}`?"
        else:
            hint = f"add it to `/// input:` (declared: {listed})"
        if close and span is not None:
            fix = replace_word(src, span, name, close)
            # when the declaration may hold the typo instead, renaming the use is one way, not the way
            fixes.append(dataclasses.replace(fix, preferred=False) if fix and close in unused_set else fix)
        fixes.append(_declare(doc, src, name, written))
        message = (
            f"unbound placeholder ${{{name}}}: `{name}` is not a declared input"
            if placeholder
            else f"name `{name}` is neither a declared input nor defined by the template"
        )
        ctx.report(codes.UNDECLARED_INPUT, message, span, hint, fixes)
        said.add(name)
    defines = ctx.config.defines_map
    for name in unused:
        if name in defines:
            ctx.report(
                codes.UNUSED_INPUT,
                f"declared input `{name}` is bound at build time by a define (`-D {name}=…` or [tool.promptc.defines]),"
                " so it is not a runtime input",
                spans.get(name, doc.header.declared_inputs_span),
                "remove it from `/// input:`, or drop the define to keep it an input",
            )
            continue
        ctx.report(
            codes.UNUSED_INPUT,
            f"declared input `{name}` is never used",
            spans.get(name, doc.header.declared_inputs_span),
            "remove it from `/// input:`",
        )
    return said
