"""The resources pass: tools and the output schema (`/// tools:`, `/// output:`; docs/language.md, "Tools and output schema").

The directive pass left each `/// tools:` and `/// output:` where it stood, and the include pass
spliced a partial's in with the partial's path as their base, so the references arrive in the order
they are written across the whole expanded prompt. This pass resolves each path like an include
(relative to the file that holds the directive, inside the source folder, symlinks checked), reads
the JSON through the build's loader, checks it, and records on the document:

- `tools`: every tool as `{"name", "description", "input_schema"}`, first-seen order; a name seen
  twice is E824;
- `output_schema`: `{"name", "schema"}` (the name is the schema's `title`, else the file's stem);
- `resources`: the files read, for the incremental build's dependencies;
- the header's `input_types` gain the schema of every `/// input: name: @schema.json`.

A file is checked once per build (the result is kept on the loader), whichever prompts name it.
Problems point into the JSON file at the offending value. The build never fetches anything: a
schema's `$ref` to a remote URL is not followed (only the meta-schema check runs, offline).
"""

from __future__ import annotations

import json
import posixpath
import warnings
from collections.abc import Callable
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, Fix, SourceText, Span, make, replace_word
from ..facts.language import RESOURCE_SUFFIX, TOOL_NAME
from ..facts.lazy import lazy_import
from ..facts.records import dataclass
from ..facts.suggest import did_you_mean
from ..runtime.inputtypes import normalize
from ..syntax.jsonfile import locate, token_length
from ..syntax.nodes import Document, Item, ResourceRef, evolve
from .context import Context

#: importing jsonschema takes a tenth of a second: only a prompt with tools or a schema needs it
jsonschema = lazy_import("jsonschema")

TOOL_KEYS = ("name", "description", "input_schema")

#: keys that people bring from another format, and what to write instead
_FOREIGN_KEYS = {
    "parameters": "promptc's tool files use `input_schema` (Anthropic's name); the openai and gemini shapes send it as "
    "`parameters`",
    "type": "write the tool itself, `{name, description, input_schema}`; the openai shape adds the "
    '`{"type": "function"}` wrapper',
    "function": "write the inner object, `{name, description, input_schema}`; the openai shape adds the wrapper",
    "cache_control": "promptc places cache breakpoints itself, after the tools when they end the stable prefix",
}


@dataclass(frozen=True, slots=True)
class _Checked:
    """One tool or schema file, checked: its tools (or schema) and where each name is written."""

    tools: tuple[dict[str, Any], ...] = ()
    name_spans: tuple[Span, ...] = ()
    schema: dict[str, Any] | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    #: an output schema as a contract (`inputtypes.normalize`), when both runtimes check all of it
    contract: Any = None


def resolve(ctx: Context, base: str, target: str) -> tuple[str | None, str | None]:
    """(source-relative path, problem). Paths resolve relative to `base`, like includes."""
    if target.startswith(("/", "\\")) or (len(target) > 1 and target[1] == ":"):
        return None, f"path `{target}` is absolute; paths are relative to the file that names them"
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target.replace("\\", "/")))
    if joined == ".." or joined.startswith("../"):
        return None, f"`{target}` leaves the source folder"
    if joined in ctx.tree.outside or any(
        folder.endswith("/") and joined.startswith(folder) for folder in ctx.tree.outside
    ):
        return None, f"`{target}` is a symlink that points outside the source folder"
    if not joined.endswith(RESOURCE_SUFFIX):
        return None, f"`{target}` is not a JSON file: tool definitions and schemas are `{RESOURCE_SUFFIX}` files"
    if joined not in ctx.tree.files:
        return None, f"`{target}` not found (looked for {joined})"
    return joined, None


#: JSON Schema's types, for "did you mean" on `"type": "strin"`
SCHEMA_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
#: the keywords of JSON Schema (drafts 4 to 2020-12), for "did you mean" on a misspelt one
SCHEMA_KEYWORDS = frozenset(
    "$anchor $comment $defs $dynamicAnchor $dynamicRef $id $recursiveAnchor $recursiveRef $ref $schema "
    "$vocabulary additionalItems additionalProperties allOf anyOf const contains contentEncoding "
    "contentMediaType contentSchema default definitions dependencies dependentRequired dependentSchemas "
    "deprecated description else enum examples exclusiveMaximum exclusiveMinimum format id if items "
    "maxContains maxItems maxLength maxProperties maximum minContains minItems minLength minProperties "
    "minimum multipleOf not oneOf pattern patternProperties prefixItems properties propertyNames readOnly "
    "required then title type unevaluatedItems unevaluatedProperties uniqueItems writeOnly".split()
)
#: keywords whose value is a schema, a list of schemas, or a map of names to schemas
_ONE_SCHEMA = frozenset(
    "additionalItems additionalProperties contains contentSchema else if items not propertyNames then "
    "unevaluatedItems unevaluatedProperties".split()
)
_SCHEMA_LISTS = frozenset("allOf anyOf oneOf prefixItems items".split())
_SCHEMA_MAPS = frozenset("$defs definitions dependentSchemas patternProperties properties".split())
#: at most this many problems are reported for one schema (the rest are counted)
MAX_SCHEMA_PROBLEMS = 20

JsonPath = tuple[str | int, ...]
Problem = tuple[JsonPath, str, str | None]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _expected(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    article = {"array": "an array", "object": "an object (a schema)", "integer": "an integer", "string": "a string"}
    return " or ".join(article.get(str(n), f"a {n}") for n in names)


def _type_problem(value: Any) -> tuple[str, str]:
    """`"type": "strin"` in promptc's words, with "did you mean"."""
    bad = [v for v in (value if isinstance(value, list) else [value]) if v not in SCHEMA_TYPES]
    if not bad or not all(isinstance(v, str) for v in bad):
        return "`type` is a type name or a list of them", "types: " + ", ".join(SCHEMA_TYPES)
    word = bad[0]
    close = did_you_mean(word, SCHEMA_TYPES) or next((t for t in SCHEMA_TYPES if t.startswith(word.lower())), None)
    message = f"`type` is `{word}`, which is not a JSON Schema type"
    return message, (f"did you mean `{close}`?" if close else "types: " + ", ".join(SCHEMA_TYPES))


def _explain(error: Any) -> Problem:
    """A meta-schema error of jsonschema's as promptc says it: where (the keyword's value), what,
    and a hint of its own."""
    path: JsonPath = tuple(error.absolute_path)
    keyword = next((p for p in reversed(path) if isinstance(p, str)), None)
    instance = error.instance
    if path and path[-1] == "type" and not (len(path) > 1 and path[-2] in _SCHEMA_MAPS):
        return (path, *_type_problem(instance))
    validator = error.validator
    label = f"`{keyword}`" if keyword else "the schema"
    if validator == "type":
        message = f"{label} must be {_expected(error.validator_value)}, not {_kind(instance)}"
        hint = None
        if keyword == "required" and isinstance(instance, str):
            hint = f'list the names: `"required": ["{instance}"]`'
        elif keyword in ("properties", "$defs", "definitions", "patternProperties"):
            hint = f'`{keyword}` maps names to schemas: `{{"name": {{"type": "string"}}}}`'
        return path, message, hint
    if validator == "enum":
        options = [str(v) for v in error.validator_value]
        close = did_you_mean(str(instance), options) if isinstance(instance, str) else None
        return (
            path,
            f"{label} is {instance!r}; it must be one of {', '.join(options)}",
            (f"did you mean `{close}`?" if close else None),
        )
    if validator == "uniqueItems":
        return path, f"{label} lists the same item twice", "remove the repeat"
    if validator in ("minimum", "exclusiveMinimum"):
        return path, f"{label} must be at least {error.validator_value}, not {instance!r}", None
    if validator in ("anyOf", "oneOf") and error.context:
        inner = jsonschema.exceptions.best_match(error.context)
        if inner is not None and tuple(inner.absolute_path) != path:
            return _explain(inner)
        kinds = sorted({_expected(e.validator_value) for e in error.context if e.validator == "type"})
        if kinds:
            return path, f"{label} must be {' or '.join(kinds)}, not {_kind(instance)}", None
    return path, f"{label}: {error.message}", None


def _misspelt_keywords(schema: Any) -> list[Problem]:
    """Keys of schema objects that are no JSON Schema keyword but one edit or two away from one
    (`"requird"`, `"propertys"`): JSON Schema ignores unknown keys, so the typo would silently turn
    a check off. Names under `properties` are names, not keywords. Iterative, bounded by the JSON."""
    found: list[Problem] = []
    stack: list[tuple[JsonPath, Any]] = [((), schema)]
    while stack and len(found) < MAX_SCHEMA_PROBLEMS:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend(((*path, key, name), sub) for name, sub in value.items())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend(((*path, key, i), sub) for i, sub in enumerate(value))
            elif key in _ONE_SCHEMA or key in _SCHEMA_LISTS:
                stack.append(((*path, key), value))
            elif key not in SCHEMA_KEYWORDS and len(key) >= 4:
                close = did_you_mean(key, SCHEMA_KEYWORDS)
                if close is not None:
                    found.append(
                        (
                            (*path, key),
                            f"`{key}` {_NOT_A_KEYWORD}, so it checks nothing",
                            f"did you mean `{close}`?",
                        )
                    )
    return sorted(found, key=lambda problem: [str(part) for part in problem[0]])


_NOT_A_KEYWORD = "is not a JSON Schema keyword"


def misspelt_keys(problems: list[Problem]) -> list[tuple[JsonPath, str]]:
    """The problems that are a misspelt keyword (they point at the key, not its value)."""
    return [(path, message) for path, message, _ in problems if _NOT_A_KEYWORD in message]


def schema_problems(schema: Any, object_root: bool = True) -> list[Problem]:
    """Every reason `schema` is not a usable object schema, each at the keyword that fails (its path
    inside the schema), in promptc's words with a hint of its own: the meta-schema's errors, a
    misspelt keyword, and a root that is not an object schema (`object_root`; an input's schema may
    type any value). At most MAX_SCHEMA_PROBLEMS, the last one counting the rest."""
    if not isinstance(schema, dict):
        return [((), "a JSON Schema here is an object", None)]
    Draft202012Validator = jsonschema.Draft202012Validator
    relevance = jsonschema.exceptions.relevance
    validator_for = jsonschema.validators.validator_for

    declared = schema.get("$schema")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown $schema is reported below, not warned about
        cls = validator_for(schema, default=Draft202012Validator)
    if isinstance(declared, str) and declared.rstrip("#") != str(cls.META_SCHEMA.get("$schema", "")).rstrip("#"):
        if declared.rstrip("#") != str(cls.META_SCHEMA.get("$id", "")).rstrip("#"):
            return [(("$schema",), f"unknown `$schema` {declared!r}", "leave it out, or name a JSON Schema draft")]
    problems: list[Problem] = []
    try:
        errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=relevance)
    except RecursionError:  # bounded by the JSON depth limit; kept as a diagnostic all the same
        return [((), "schema nests too deeply to check", None)]
    seen: set[JsonPath] = set()
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        problem = _explain(error)
        if problem[0] not in seen:
            seen.add(problem[0])
            problems.append(problem)
    problems += [p for p in _misspelt_keywords(schema) if p[0] not in seen]
    if object_root and schema.get("type") != "object" and () not in seen and ("type",) not in seen:
        where: JsonPath = ("type",) if "type" in schema else ()
        problems.append(
            (where, 'the schema\'s root must be `"type": "object"` (providers require an object here)', None)
        )
    if len(problems) > MAX_SCHEMA_PROBLEMS:
        more = len(problems) - MAX_SCHEMA_PROBLEMS + 1
        problems = [*problems[: MAX_SCHEMA_PROBLEMS - 1], ((), f"and {more} more problems in this schema", None)]
    return problems


def schema_problem(schema: Any, object_root: bool = True) -> tuple[JsonPath, str] | None:
    """The first of `schema_problems` as (path, message), or None."""
    problems = schema_problems(schema, object_root)
    return (problems[0][0], problems[0][1]) if problems else None


class _FileChecker:
    def __init__(self, src: SourceText) -> None:
        self.src = src
        self.diagnostics: list[Diagnostic] = []

    def span(self, path: tuple[str | int, ...], on_key: bool = False) -> Span:
        """The value at `path` in the file (`on_key`: the key that names it, for a misspelt key)."""
        text = self.src.text
        offset = locate(text, path)
        if on_key and path and isinstance(path[-1], str):
            quoted = json.dumps(path[-1])
            key = text.rfind(quoted, 0, offset)
            if key != -1 and not text[key + len(quoted) : offset].strip(" \t\r\n:"):
                return self.src.span(key, key + len(quoted))
        return self.src.span(offset, offset + token_length(text, offset))

    def report(
        self, code: codes.Code, message: str, path: tuple[str | int, ...], hint: str | None, on_key: bool = False
    ) -> None:
        self.diagnostics.append(make(code, message, self.span(path, on_key), hint, source=self.src))

    def schema(self, schema: Any, at: tuple[str | int, ...], what: str, object_root: bool = True) -> bool:
        """Report every problem of a schema, each at its keyword; False when there was one."""
        problems = schema_problems(schema, object_root)
        keys = {path for path, _ in misspelt_keys(problems)}
        for inner, message, hint in problems:
            where = "/".join(map(str, inner))
            self.report(
                codes.INVALID_SCHEMA,
                f"{what}: {message}" + (f" (at `{where}`)" if where else ""),
                (*at, *inner),
                hint or "see https://json-schema.org/understanding-json-schema/",
                on_key=inner in keys,
            )
        return not problems

    def tool(self, value: Any, at: tuple[str | int, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.report(
                codes.INVALID_TOOL,
                "a tool is an object `{name, description, input_schema}`",
                at,
                "a tool file holds one tool object or a list of them",
            )
            return None
        if value.get("type") == "function" and isinstance(value.get("function"), dict):
            # OpenAI's wrapper: one mistake, one error; the inner object is checked for the others
            self.report(
                codes.INVALID_TOOL,
                'this is an OpenAI tool (`{"type": "function", "function": {…}}`); a promptc tool file holds '
                "the tool itself, `{name, description, input_schema}`",
                (*at, "type"),
                "unwrap it: write the `function` object, with `parameters` renamed `input_schema`; the openai "
                "shapes add the wrapper back when they send it",
            )
            self._body(value["function"], (*at, "function"), openai=True)
            return None
        return self._body(value, at)

    def _body(self, value: dict[str, Any], at: tuple[str | int, ...], openai: bool = False) -> dict[str, Any] | None:
        """A tool object's own checks (`openai`: the inside of OpenAI's wrapper, already reported,
        whose `parameters` and `strict` are OpenAI's names, not separate mistakes)."""
        ok = True
        schema_key = "input_schema"
        if "input_schema" not in value and isinstance(value.get("parameters"), dict):
            schema_key = "parameters"
            if not openai:
                self.report(
                    codes.INVALID_TOOL,
                    "`parameters` is OpenAI's name for a tool's input schema; promptc's tool files call it "
                    "`input_schema` (Anthropic's name)",
                    (*at, "parameters"),
                    "rename the key `input_schema`; the openai and gemini shapes send it as `parameters`",
                )
            ok = False
        for key in value:
            if key == schema_key or (openai and key == "strict"):
                continue
            if key not in TOOL_KEYS:
                close = did_you_mean(key, TOOL_KEYS)
                hint = _FOREIGN_KEYS.get(key) or (f"did you mean `{close}`?" if close else None)
                self.report(
                    codes.INVALID_TOOL,
                    f"unknown key `{key}` in a tool",
                    (*at, key),
                    hint or "keys: " + ", ".join(TOOL_KEYS),
                )
                ok = False
        name = value.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            shown = "no name" if name is None else f"name {name!r}"
            self.report(
                codes.INVALID_TOOL,
                f"tool has {shown}: a name matches ^[a-zA-Z0-9_-]{{1,64}}$",
                (*at, "name") if "name" in value else at,
                "use letters, digits, `_` and `-` (providers refuse anything else)",
            )
            ok = False
        label = f"tool `{name}`" if isinstance(name, str) else "tool"
        description = value.get("description")
        if not isinstance(description, str):
            self.report(
                codes.INVALID_TOOL,
                f"{label} has no description" if description is None else f"{label}: `description` is not a string",
                (*at, "description") if "description" in value else at,
                "describe what the tool does and when to call it: the model reads this",
            )
            ok = False
        if schema_key not in value:
            self.report(
                codes.INVALID_TOOL,
                f"{label} has no `input_schema`",
                at,
                'add `"input_schema": {"type": "object", "properties": {…}}`',
            )
            ok = False
        elif not self.schema(value[schema_key], (*at, schema_key), f"{label}: {schema_key}"):
            ok = False
        if not ok:
            return None
        return {"name": name, "description": description, "input_schema": value["input_schema"]}


def _checked_file(
    ctx: Context, kind: str, key: str, check: Callable[[_FileChecker, Any, tuple[Diagnostic, ...]], _Checked]
) -> _Checked:
    """File `key` read and checked once per build (the result is kept on the loader, by kind):
    `check(checker, value, read_diagnostics)` runs only when the file reads as JSON."""
    cached = ctx.partials.resources.get((kind, key))
    if isinstance(cached, _Checked):
        return cached
    src, value, read_diagnostics = ctx.partials.read_json(key)
    result = _Checked(diagnostics=read_diagnostics)
    if src is not None and not any(d.severity == "error" for d in read_diagnostics):
        result = check(_FileChecker(src), value, read_diagnostics)
    ctx.partials.resources[(kind, key)] = result
    return result


def _check_tools(ctx: Context, key: str) -> _Checked:
    def check(checker: _FileChecker, value: Any, read_diagnostics: tuple[Diagnostic, ...]) -> _Checked:
        entries = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        if isinstance(value, list) and not value:
            checker.report(codes.INVALID_TOOL, "the tool list is empty", (), "remove the file from `/// tools:`")
        tools: list[dict[str, Any]] = []
        spans: list[Span] = []
        for index, entry in entries:
            at: tuple[str | int, ...] = () if index is None else (index,)
            tool = checker.tool(entry, at)
            if tool is not None:
                tools.append(tool)
                spans.append(checker.span((*at, "name")))
        return _Checked(tuple(tools), tuple(spans), None, (*read_diagnostics, *checker.diagnostics))

    return _checked_file(ctx, "tools", key, check)


def output_name(key: str, schema: dict[str, Any]) -> str:
    title = schema.get("title")
    return title if isinstance(title, str) else posixpath.basename(key).removesuffix(RESOURCE_SUFFIX)


def _check_schema(ctx: Context, key: str) -> _Checked:
    def check(checker: _FileChecker, value: Any, read_diagnostics: tuple[Diagnostic, ...]) -> _Checked:
        if not (checker.schema(value, (), "output schema") and isinstance(value, dict)):
            return _Checked(diagnostics=(*read_diagnostics, *checker.diagnostics))
        name = output_name(key, value)
        if TOOL_NAME.match(name):
            contract = _contract_problems(checker, value, "output schema", codes.OUTPUT_NOT_CHECKABLE)
            return _Checked(
                schema={"name": name, "schema": value},
                diagnostics=(*read_diagnostics, *checker.diagnostics),
                contract=contract,
            )
        titled = isinstance(value.get("title"), str)
        checker.report(
            codes.INVALID_SCHEMA,
            f"the output is named {name!r} (its {'title' if titled else 'file name'}), "
            "which providers refuse: a name matches ^[a-zA-Z0-9_-]{1,64}$",
            ("title",) if titled else (),
            "write the title as `snake_case`, or remove it to name the output after the file"
            if titled
            else "rename the file",
        )
        return _Checked(diagnostics=(*read_diagnostics, *checker.diagnostics))

    return _checked_file(ctx, "output", key, check)


def _contract_problems(checker: _FileChecker, value: Any, what: str, code: codes.Code | None = None) -> Any:
    """The schema as a contract (`inputtypes.normalize`: references resolved, one dialect), each
    problem reported at its place in the file (E825, E826; `code` instead when given); None when
    there are problems."""
    normalized = normalize(value)
    for problem in normalized.problems:
        checker.report(
            code or codes.CODES[problem.code],
            f"{what}: {problem.message}",
            problem.path,
            _CONTRACT_HINTS[problem.code] if code is None else _OUTPUT_HINT,
        )
    return None if normalized.problems else normalized.schema


_CONTRACT_HINTS: dict[str, str] = {
    codes.UNCHECKED_SCHEMA_KEYWORD: "a schema that types an input is checked by both runtimes, keyword by keyword; see `promptc explain E825` "
    "for the keywords they check, and check the rest in your application before rendering",
    codes.UNRESOLVABLE_REF: "write the schema without the recursion (a fixed depth), or type the input `dict[str, T]`",
}
_OUTPUT_HINT = (
    "the schema is still sent to the provider; the bindings' `parse` helper validates only outputs whose every "
    "keyword both runtimes check (see `promptc explain W827`)"
)


def _check_input_schema(ctx: Context, key: str) -> _Checked:
    """An input's type from a schema file: a valid JSON Schema, resolved into a contract that both
    runtimes check keyword by keyword (E825 at a keyword they would skip, E826 at a `$ref` that
    cannot be resolved)."""

    def check(checker: _FileChecker, value: Any, read_diagnostics: tuple[Diagnostic, ...]) -> _Checked:
        if not (checker.schema(value, (), "input schema", object_root=False) and isinstance(value, dict)):
            return _Checked(diagnostics=(*read_diagnostics, *checker.diagnostics))
        contract = _contract_problems(checker, value, "input schema")
        if checker.diagnostics or contract is None:
            return _Checked(diagnostics=(*read_diagnostics, *checker.diagnostics))
        return _Checked(schema=contract, diagnostics=read_diagnostics)

    return _checked_file(ctx, "input", key, check)


def load_resources(doc: Document, ctx: Context) -> Document:
    rel = ctx.tree.rel_of(doc.name)
    items: list[Item] = []
    tools: list[dict[str, Any]] = []
    first: dict[str, tuple[str, Span]] = {}  # tool name → (file, where its name is written)
    resources: set[str] = set()
    output: dict[str, Any] | None = None
    output_contract: Any = None
    output_at: Span | None = None
    declared_types = dict(doc.header.input_types)
    schema_types: dict[str, dict[str, Any]] = {}
    for item in doc.items:
        if not isinstance(item, ResourceRef):
            items.append(item)
            continue
        if item.kind == "output":
            if output_at is not None:
                ctx.report(
                    codes.DIRECTIVE_TWICE,
                    f"`output` given twice (first at line {output_at.line})",
                    item.span,
                    "a prompt has one structured-output schema; remove one of them",
                )
                continue
            output_at = item.span
        for path, span in item.paths:
            key, problem = resolve(ctx, item.base or rel, path)
            if key is None:
                hint = "tool and schema paths are relative to the file that names them, inside the source folder"
                fixes: list[Fix | None] = []
                if problem and "not found" in problem:
                    known = [p for p in ctx.tree.files if p.endswith(RESOURCE_SUFFIX)]
                    close = did_you_mean(path, known, limit=3)
                    if close:
                        hint = f"did you mean `{close}`?"
                        if resolve(ctx, item.base or rel, close)[0] == close:  # as written here, it is that file
                            fixes.append(replace_word(ctx.source_of(span), span, path, close))
                ctx.report(codes.RESOURCE_NOT_FOUND, problem or "", span, hint, fixes)
                continue
            resources.add(key)
            if item.kind == "input":
                checked = _check_input_schema(ctx, key)
                ctx.extend(checked.diagnostics)
                # the prompt's own `name: TYPE` wins over a partial's, and the first schema over later ones
                if checked.schema is not None and item.input_name not in declared_types:
                    schema_types.setdefault(item.input_name, checked.schema)
                continue
            if item.kind == "output":
                checked = _check_schema(ctx, key)
                ctx.extend(checked.diagnostics)
                output = checked.schema
                output_contract = checked.contract
                continue
            checked = _check_tools(ctx, key)
            ctx.extend(checked.diagnostics)
            for tool, name_span in zip(checked.tools, checked.name_spans, strict=True):
                seen = first.get(tool["name"])
                if seen is not None:
                    if seen[0] == key and seen[1] == name_span:
                        continue  # the same file named twice: its tools are already in
                    ctx.diagnostics.append(
                        make(
                            codes.DUPLICATE_TOOL,
                            f"tool `{tool['name']}` is defined twice (first in {ctx.tree.display(seen[0])}, "
                            f"line {seen[1].line})",
                            name_span,
                            "rename one of them, or name the file once",
                        )
                    )
                    continue
                first[tool["name"]] = (key, name_span)
                tools.append(tool)
    header = doc.header
    if schema_types:
        header = evolve(header, input_types=tuple({**declared_types, **schema_types}.items()))
    return evolve(
        doc,
        items=tuple(items),
        header=header,
        tools=tuple(tools),
        output_schema=output,
        output_contract=output_contract,
        resources=tuple(sorted(resources)),
    )
