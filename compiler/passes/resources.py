"""Pass 4 — tools and the output schema (`/// tools:`, `/// output:`; SPEC §10).

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

import posixpath
from dataclasses import dataclass, replace
from typing import Any

from .. import codes
from ..context import Context
from ..diagnostics import Diagnostic, SourceText, Span, make
from ..jsonfile import locate, token_length
from ..language import RESOURCE_SUFFIX, TOOL_NAME
from ..nodes import Document, Item, ResourceRef
from ..suggest import did_you_mean

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


def schema_problem(schema: Any, object_root: bool = True) -> tuple[tuple[str | int, ...], str] | None:
    """Why `schema` is not a usable object schema: (path inside it, message), or None. An input's
    schema (`object_root=False`) may type any value."""
    if not isinstance(schema, dict):
        return (), "a JSON Schema here is an object"
    import warnings

    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]

    declared = schema.get("$schema")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown $schema is reported below, not warned about
        cls = validator_for(schema, default=Draft202012Validator)
    if isinstance(declared, str) and declared.rstrip("#") != str(cls.META_SCHEMA.get("$schema", "")).rstrip("#"):
        if declared.rstrip("#") != str(cls.META_SCHEMA.get("$id", "")).rstrip("#"):
            return ("$schema",), f"unknown `$schema` {declared!r}"
    try:
        error = best_match(cls(cls.META_SCHEMA).iter_errors(schema))
    except RecursionError:  # bounded by the JSON depth limit; kept as a diagnostic all the same
        return (), "schema nests too deeply to check"
    if error is not None:
        return tuple(error.absolute_path), error.message
    if object_root and schema.get("type") != "object":
        where: tuple[str | int, ...] = ("type",) if "type" in schema else ()
        return where, 'the schema\'s root must be `"type": "object"` (providers require an object here)'
    return None


class _FileChecker:
    def __init__(self, src: SourceText) -> None:
        self.src = src
        self.diagnostics: list[Diagnostic] = []

    def span(self, path: tuple[str | int, ...]) -> Span:
        offset = locate(self.src.text, path)
        return self.src.span(offset, offset + token_length(self.src.text, offset))

    def report(self, code: codes.Code, message: str, path: tuple[str | int, ...], hint: str | None) -> None:
        self.diagnostics.append(make(code, message, self.span(path), hint, source=self.src))

    def schema(self, schema: Any, at: tuple[str | int, ...], what: str, object_root: bool = True) -> bool:
        problem = schema_problem(schema, object_root)
        if problem is None:
            return True
        inner, message = problem
        where = "/".join(map(str, inner))
        self.report(
            codes.INVALID_SCHEMA,
            f"{what}: {message}" + (f" (at `{where}`)" if where else ""),
            (*at, *inner),
            "see https://json-schema.org/understanding-json-schema/ ; the root is an object schema",
        )
        return False

    def tool(self, value: Any, at: tuple[str | int, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.report(
                codes.INVALID_TOOL,
                "a tool is an object `{name, description, input_schema}`",
                at,
                "a tool file holds one tool object or a list of them",
            )
            return None
        ok = True
        for key in value:
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
        if "input_schema" not in value:
            self.report(
                codes.INVALID_TOOL,
                f"{label} has no `input_schema`",
                at,
                'add `"input_schema": {"type": "object", "properties": {…}}`',
            )
            ok = False
        elif not self.schema(value["input_schema"], (*at, "input_schema"), f"{label}: input_schema"):
            ok = False
        if not ok:
            return None
        return {"name": name, "description": description, "input_schema": value["input_schema"]}


def _checked_file(ctx: Context, kind: str, key: str, check) -> _Checked:
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
    from ..inputtypes import normalize

    normalized = normalize(value)
    for problem in normalized.problems:
        checker.report(
            code or codes.CODES[problem.code],
            f"{what}: {problem.message}",
            problem.path,
            _CONTRACT_HINTS[problem.code] if code is None else _OUTPUT_HINT,
        )
    return None if normalized.problems else normalized.schema


_CONTRACT_HINTS = {
    "E825": "a schema that types an input is checked by both runtimes, keyword by keyword; see `promptc explain E825` "
    "for the keywords they check, and check the rest in your application before rendering",
    "E826": "write the schema without the recursion (a fixed depth), or type the input `dict[str, T]`",
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
                if problem and "not found" in problem:
                    known = [p for p in ctx.tree.files if p.endswith(RESOURCE_SUFFIX)]
                    close = did_you_mean(path, known, limit=3)
                    if close:
                        hint = f"did you mean `{close}`?"
                ctx.report(codes.RESOURCE_NOT_FOUND, problem or "", span, hint)
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
        header = replace(header, input_types=tuple({**declared_types, **schema_types}.items()))
    return replace(
        doc,
        items=tuple(items),
        header=header,
        tools=tuple(tools),
        output_schema=output,
        output_contract=output_contract,
        resources=tuple(sorted(resources)),
    )
