"""What every importer shares: the converted file, its header directives, typed inputs, the marker
line that says promptc import wrote a file, and the mapping of model parameters."""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import field
from typing import Any

from ...facts import codes
from ...facts.codes import Code
from ...facts.diagnostics import Diagnostic, SourceText, make
from ...facts.language import IDENTIFIER
from ...facts.records import dataclass
from ..fmt import layout
from .ir import Refusal
from .yamlheader import YamlError, parse

#: the first line of every `.prompt` file promptc import writes: `promptc import` rewrites a file
#: only when this line is there and the sha256 in it is the one of the rest of the file
MARKER_PREFIX = "/// promptc import "
_MARKER = re.compile(r"/// promptc import \(([a-z]+) (.+)\) sha256 ([0-9a-f]{16})\b")

#: camelCase parameter names of Dotprompt's `config` and Prompty's `options` → promptc's names
PARAM_NAMES = {
    "temperature": "temperature",
    "maxOutputTokens": "max_tokens",
    "maxTokens": "max_tokens",
    "max_tokens": "max_tokens",
    "topP": "top_p",
    "top_p": "top_p",
    "topK": "top_k",
    "top_k": "top_k",
    "stopSequences": "stop",
    "stop": "stop",
    "seed": "seed",
    "frequencyPenalty": "frequency_penalty",
    "frequency_penalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
    "presence_penalty": "presence_penalty",
    "allowMultipleToolCalls": "parallel_tool_calls",
    "candidateCount": "candidate_count",
}


@dataclass(slots=True)
class Converted:
    """One foreign prompt, converted: the `.prompt` text and its side files (JSON schemas, tools),
    or the refusal that stopped it."""

    source: str  # foreign path under the imported folder
    target: str  # `.prompt` path under the output folder
    text: str = ""
    #: other files it needs (path under the output folder → text)
    extra: dict[str, str] = field(default_factory=dict)
    #: sample input sets from the source (defaults, examples)
    samples: list[dict[str, Any]] = field(default_factory=list)
    #: how the template uses each input, as a JSON Schema: what --check draws its samples from
    #: where the declared type says less (a Prompty `object` whose properties the body reads)
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Prompty's `sample: ${file:…}`: (the file's path under the imported folder, the line and
    #: column of the reference), read for --check by `folder.read_samples`
    sample_file: tuple[str, int, int] | None = None
    #: where the source writes each input's sample value: (line, column) in the foreign file
    sample_origin: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: where the header declares each input: (line, column) in the foreign file
    input_origin: dict[str, tuple[int, int]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: bool = False
    #: the foreign text, normalised (for --check and diagnostics)
    foreign: SourceText | None = None
    #: inputs promptc's artifact will take, in order
    inputs: list[str] = field(default_factory=list)
    partial: bool = False
    #: (line, column) in the `.prompt` text → (line, column) in the foreign file, or None
    origin: Any = None
    #: promptc param name → (line, column) of the header field it came from, in the foreign file
    param_origin: dict[str, tuple[int, int]] = field(default_factory=dict)


#: `where(*path)`: the (line, column) in the foreign file of a header value, by its path of keys
Where = Callable[..., tuple[int, int]]


def front_matter(header_text: str | None, header_line: int) -> tuple[dict[str, Any], Where]:
    """The mapping a file's YAML front matter holds (empty without one) and where each of its
    values stands in the file (`header_line` is the header's first line). A header that is not
    YAML, or not a mapping, refuses the file (E960) at the place the YAML reader names."""
    if header_text is None:
        return {}, lambda *path: (header_line, 1)
    try:
        header = parse(header_text)
    except YamlError as exc:
        raise Refusal(codes.IMPORT_BAD_HEADER, exc.message, header_line + exc.line - 1, exc.column, exc.hint) from None
    if not isinstance(header.data, dict):
        raise Refusal(codes.IMPORT_BAD_HEADER, "the front matter is not a YAML mapping", header_line, 1)

    def where(*path: str | int) -> tuple[int, int]:
        line, column = header.where(*path)
        return header_line + line - 1, column

    return header.data, where


def refusal_diagnostic(refusal: Refusal, src: SourceText) -> Diagnostic:
    line = max(1, min(refusal.line, len(src.line_starts)))
    offset = src.line_starts[line - 1] + max(0, refusal.column - 1)
    end = src.text.find("\n", src.line_starts[line - 1])
    offset = min(offset, end if end != -1 else len(src.text))
    return make(refusal.code, refusal.message, src.span(offset, offset + 1), refusal.hint, source=src)


#: the hint of a header field an importer leaves out (W972), unless it has a better one
DROPPED_HINT = "nothing promptc sends depends on it: keep it for the original runtime, or remove it from the source"


def warning(code: Code, message: str, src: SourceText, line: int, column: int, hint: str | None = None) -> Diagnostic:
    return refusal_diagnostic(Refusal(code, message, line, column, hint), src)


def marker(kind: str, source: str, body: str) -> str:
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    return f"{MARKER_PREFIX}({kind} {source}) sha256 {digest}: edit the source and import again, or delete this line to keep your edits\n"


def owned(text: str) -> bool:
    """True when `text` is a file promptc import wrote and nobody edited since."""
    first, _, rest = text.partition("\n")
    m = _MARKER.match(first)
    return m is not None and hashlib.sha256(rest.encode("utf-8")).hexdigest()[:16] == m.group(3)


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def literal(value: Any) -> str:
    """A `/// param:` value: JSON, which promptc reads back as the same typed value."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def param_lines(params: dict[str, Any]) -> list[str]:
    lines = []
    for key, value in params.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"the parameter name `{key}` cannot be a promptc param")
        lines.append(f"/// param: {key}={literal(value)}")
    return lines


def snake(name: str) -> str:
    return PARAM_NAMES.get(name) or re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def type_of(schema: dict[str, Any]) -> str | None:
    """promptc's spelling of a JSON Schema in `/// input:` (`str`, `list[int]`, `float | None` …),
    or None when it needs an `@schema` file."""
    if set(schema) - {"type", "items"}:
        return None
    kind = schema.get("type")
    nullable = False
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        nullable = len(rest) != len(kind)
        if len(rest) != 1:
            return None
        kind = rest[0]
    simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}.get(kind)  # type: ignore[arg-type]
    if simple is None and kind == "array" and isinstance(schema.get("items"), dict):
        inner = type_of(schema["items"])
        if inner is None or "|" in inner:
            return None
        simple = f"list[{inner}]"
    elif "items" in schema:
        return None
    if simple is None:
        return None
    return f"{simple} | None" if nullable else simple


def input_decl(name: str, schema: dict[str, Any] | None, stem: str, extra: dict[str, str], folder: str) -> str:
    """One entry of `/// input:`; writes an `@schema` file into `extra` when the type needs one."""
    if not IDENTIFIER.fullmatch(name):
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            f"the input name {name!r} is not an identifier; promptc's inputs are `${{name}}` names",
            hint="rename the input (letters, digits and `_`)",
        )
    if schema is None or schema == {}:
        return name
    spelled = type_of(schema)
    if spelled is not None:
        return f"{name}: {spelled}"
    file = f"{stem}.{name}.schema.json"
    extra[f"{folder}{file}"] = json_text(schema)
    return f"{name}: @{file}"


def metadata_line(key: str, value: Any) -> str | None:
    """A generic `/// key: value` line for a string metadata field (one line, or None)."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value) if isinstance(value, (str, int, float)) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    if not text or "///" in text or not text.isprintable():
        return None
    return f"/// {key}: {text}"


def assemble(
    kind: str,
    source: str,
    header: list[str],
    body: str,
    *,
    partial: bool = False,
    marks: list[tuple[int, int, int]] | None = None,
    into: Converted | None = None,
) -> str:
    """The whole `.prompt` file: the marker, the header directives, a blank line, the body, in
    `promptc fmt`'s layout (so `fmt --check` passes on what import writes). With `marks` (from
    `ir.emit_marked`), sets `into.origin`: a position in the file → the foreign file's."""
    text = "\n".join(header) + ("\n\n" if header else "") + body
    laid = layout(text, partial=partial)
    if marks is not None and into is not None:
        inverse = {new: old for old, new in enumerate(laid.line_map) if new is not None}
        first_body_line = len(header) + 1 if header else 0
        starts = [0] + [i + 1 for i, ch in enumerate(body) if ch == "\n"]
        offsets = [m[0] for m in marks]

        def origin(line: int, column: int) -> tuple[int, int] | None:
            old = inverse.get(line - 1)  # line 1 is the marker
            if old is None or old < first_body_line or old - first_body_line >= len(starts):
                return None
            at = starts[old - first_body_line] + column - 1
            k = bisect.bisect_right(offsets, at) - 1
            if k < 0:
                return None
            start, fline, fcol = marks[k]
            between = body[start:at]
            if "\n" not in between:
                return fline, fcol + len(between)
            return fline + between.count("\n"), len(between) - between.rfind("\n")

        into.origin = origin
    return marker(kind, source, laid.text) + laid.text


def model_and_provider(model: str) -> tuple[str, str | None]:
    """A foreign model id → (promptc model, the plugin prefix dropped, if any): Genkit's
    `googleai/gemini-2.0-flash` names the model `gemini-2.0-flash` of the `googleai` plugin."""
    if "/" in model:
        plugin, _, rest = model.partition("/")
        if plugin in ("googleai", "vertexai", "openai", "anthropic", "ollama", "azure", "azureai") and rest:
            return rest, plugin
    return model, None
