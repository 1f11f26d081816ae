"""The facts of the promptc source language and of artifact template text, in one place (docs/language.md).

Everything that reads or writes prompt text — the parser (`syntax/parse.py`), the passes, the inference
(`analysis/inference.py`), emit (`backend/emit.py`), the template reader and code generator (`runtime/template.py`)
and the runtime (`runtime/render.py`) — takes its delimiters, names and limits from here, so that the
language is defined once. This module holds data and a few one-line helpers, nothing else; it
imports only the standard library because the runtime that applications ship imports it.

Two kinds of text carry the template syntax:

* **source text** (`*.prompt`): comments, directives, role separators, placeholders, blocks;
* **artifact template text** (the `content`/`text` fields of an artifact, what the runtime renders):
  literal text in which `${path}` placeholders and promplate blocks stand for runtime values, and
  a backslash before `${`, `{{`, `{#` or `{%` marks a literal opener. Comments, directives and
  separators are gone by then, so `///` is plain text there and a backslash never escapes it.

Comments (source text only). `///` starts a comment that runs to the end of the line when it
stands at the start of a line (after optional spaces/tabs) or right after a space or tab;
elsewhere (`file:///x`, `a///b`) it is text. A full-line comment removes its line, newline
included; an inline comment removes itself and the spaces/tabs before it. Comments are recognised
in text only, never inside a placeholder or a block.

Trim dashes (whitespace control), on the three block kinds only, never on `${…}`:

* reading: a `-` right after the opener (`{{-`, `{#-`, `{%-`) is a *left trim*; a `-` right before
  the closer (`-}}`, `-#}`, `-%}`) is a *right trim*, unless that dash is the left-trim dash itself
  (`{{-}}` is a left trim around empty code). At most one dash per side is read: `{{-- x --}}`
  trims once each side and its code is `- x -`. The dashes are not part of the block's code.
* effect at render time: a left trim removes exactly one whitespace character (`str.isspace`) at
  the end of the literal text right before the block, a right trim one at the start of the literal
  text right after it. Only literal text of the same section is touched — never a placeholder, the
  output of another block, or a joiner between sections. Trims apply left to right on the
  section's tokens, so `a -}} {{- b` removes its single space once (promplate's `\\s{{-` / `-}}\\s`).
"""

from __future__ import annotations

import re
from typing import Literal, get_args

__all__ = [
    "ARTIFACT_SCHEMA",
    "MANIFEST_SCHEMA",
    "FAIL_KINDS",
    "DELIMITERS",
    "BLOCK_OPENERS",
    "BLOCK_KINDS",
    "PLACEHOLDER_OPEN",
    "MULTILINE_OPENERS",
    "COMMENT",
    "ESCAPE",
    "TEMPLATE_ESCAPES",
    "SOURCE_ESCAPES",
    "TRIM",
    "OPENER",
    "ESCAPED_OPENER",
    "escape_literal",
    "unescape",
    "JOINER",
    "ROLES",
    "Role",
    "Boundary",
    "Target",
    "Shape",
    "Ttl",
    "SYSTEM_ROLES",
    "SEPARATOR",
    "SECTION_DIRECTIVE",
    "ALLOW_COMMENT",
    "DIRECTIVE",
    "IDENTIFIER_PATTERN",
    "IDENTIFIER",
    "PLACEHOLDER_PATH",
    "UNSAFE_PREFIX",
    "UNSAFE_NAMES",
    "unsafe_name",
    "unsafe_segment",
    "MAX_PATH_SEGMENTS",
    "OPENERS",
    "CONTINUERS",
    "CLOSERS",
    "STMT_KEYWORDS",
    "MAX_NESTING",
    "SHAPES",
    "MANIFEST",
    "OFFLINE_TOKENIZERS",
    "APPROX_TOKENIZER",
    "SOURCE_SUFFIX",
    "RESOURCE_SUFFIX",
    "TOOL_NAME",
    "CACHE_TTLS",
    "BUDGET_LIMITS",
    "PARTIAL_PREFIX",
    "CACHE_DIR",
    "STD_PREFIX",
    "IMPLICIT_SECTION",
    "BOUNDARIES",
    "TARGETS",
    "JINJA_TAGS",
]

# ---------------------------------------------------------------------------------------------
# Delimiters

#: Every opener and its closer. `${…}` and `{% %}` stay on one line; `{{ }}` and `{# #}` may span lines.
DELIMITERS: dict[str, str] = {"${": "}", "{{": "}}", "{#": "#}", "{%": "%}"}
#: The openers of promplate blocks, i.e. every opener but the placeholder's.
BLOCK_OPENERS: tuple[str, ...] = ("{{", "{#", "{%")
#: Block opener → block kind: `{{ expr }}` outputs a value, `{# code #}` runs statements,
#: `{% tag %}` is a structure tag (if / elif / else / for / while and their end tags).
BLOCK_KINDS: dict[str, str] = {"{{": "expr", "{#": "exec", "{%": "stmt"}
PLACEHOLDER_OPEN = "${"
#: Openers whose construct may span lines (the others end at the end of their line).
MULTILINE_OPENERS: tuple[str, ...] = ("{{", "{#")

#: The comment marker of source text (see the module docstring for where it starts a comment).
COMMENT = "///"
ESCAPE = "\\"
#: What a backslash escapes in artifact template text: the four openers.
TEMPLATE_ESCAPES: tuple[str, ...] = ("${", "{{", "{#", "{%")
#: What a backslash escapes in source text: the comment marker and the four openers. A backslash
#: before anything else is an ordinary character.
SOURCE_ESCAPES: tuple[str, ...] = (COMMENT, *TEMPLATE_ESCAPES)
#: The whitespace-control mark (see "Trim dashes" in the module docstring).
TRIM = "-"

#: Any opener, e.g. to escape literal text for an artifact.
OPENER = re.compile(r"\$\{|\{\{|\{#|\{%")
#: A backslash-escaped opener in artifact template text; group 1 is the opener.
ESCAPED_OPENER = re.compile(r"\\(\$\{|\{\{|\{#|\{%)")


def escape_literal(text: str) -> str:
    """Literal text → artifact template text: a backslash before every opener (what emit writes)."""
    return OPENER.sub(lambda m: ESCAPE + m.group(0), text)


def unescape(text: str) -> str:
    """Artifact template text that holds no placeholder and no block (a stable block's text) → the
    bytes it renders to: the backslash of every escaped opener removed. `unescape(escape_literal(t)) == t`."""
    return ESCAPED_OPENER.sub(r"\1", text)


# ---------------------------------------------------------------------------------------------
# Messages, separators, directives, placeholders

#: Between the sections of a block and between the blocks of a message.
JOINER = "\n\n"
Role = Literal["system", "developer", "user", "assistant"]
ROLES: tuple[Role, ...] = get_args(Role)
#: Roles whose messages go to Anthropic's `system` field.
SYSTEM_ROLES: tuple[Role, ...] = ("system", "developer")
#: A role separator line: `----- user -----`. Group 1 is the word as written; it is checked against
#: ROLES case-insensitively (another word is an error that lists the roles).
SEPARATOR = re.compile(r"^-{5,}[ \t]+([A-Za-z][A-Za-z0-9_]*)[ \t]+-{5,}(?:[ \t]+///.*|[ \t]*)$", re.M)
#: An inline comment at the end of a directive line: removed before the line is read (comments first).
#: A match starts only where a run of blanks starts (the lookbehind), and takes the run whole: a
#: search that tried every blank of the run, each reading the rest of it, was quadratic in the run.
INLINE_COMMENT = re.compile(r"(?<![ \t])[ \t]++///.*\Z", re.S)
#: The start of a `/// section:` directive line (a block may not span one).
SECTION_DIRECTIVE = re.compile(r"^[ \t]*///[ \t]*section[ \t]*:", re.M)
#: A directive comment: group 1 the key, group 2 the raw value. What each key means is declared
#: in `promptc.passes.directives` (`DIRECTIVES`).
DIRECTIVE = re.compile(r"[ \t]*///[ \t]*([a-z][a-z0-9_.\-]*)[ \t]*:(.*)", re.S)
#: `/// promptc: allow W706[, W710]` at the end of a line or on the line before: group 1 the codes
#: (with the blanks around them: split on commas and strip). Every repeat is possessive: the list
#: ends the line, so nothing is given back, and a run of blanks is read once (a lazy list before
#: `[ \t]*$` read the rest of the run at each of its blanks).
ALLOW_COMMENT = re.compile(r"(?:^|[ \t])///[ \t]*+promptc[ \t]*+:[ \t]*+allow[ \t]++([A-Za-z0-9, \t]*+)$")
#: A name: an input, a define, a helper, a key of a dotted path. ASCII, as Python's own identifiers
#: would be wider than what every runtime, provider and bindings language accepts.
IDENTIFIER_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
#: What a placeholder holds: a name or a dotted path (`${user.name}`). Use with `.match`.
PLACEHOLDER_PATH = re.compile(rf"{IDENTIFIER_PATTERN}(?:\.{IDENTIFIER_PATTERN})*\Z")
#: Most segments a placeholder path may have (`${user.name}` has two). Each segment is one more
#: level of the input's inferred schema, which the runtimes check at most 64 levels deep and a
#: JSON writer nests at most a few hundred; real paths have a handful.
MAX_PATH_SEGMENTS = 32

#: The attribute rule: what a placeholder path may not read. A runtime reads `${a.b.c}` as keys of
#: a mapping or attributes of an object the application passed, so a path could otherwise walk
#: from a value into the application's memory (`${a.__class__.__init__.__globals__.API_KEY}`).
#: No segment of a path — its root, the input's name, included, so that one rule holds for
#: promptc paths and for the Handlebars and Jinja paths an import converts, where the root is a
#: read too — may start with UNSAFE_PREFIX (Python's dunders and private names, JavaScript's
#: `__proto__`) or be one of UNSAFE_NAMES. The build refuses such a path (E506), an import refuses
#: to convert one (E973), and both runtimes refuse it at render time whatever the value is, a
#: mapping or an object. `{{ }}`, `{# #}` and `{% %}` blocks are Python and not bound by it.
UNSAFE_PREFIX = "_"
#: The names that reach an object's internals without an underscore. Python's are Jinja2's
#: sandbox list (`jinja2.sandbox`: a class's `mro`; a generator's, coroutine's or async
#: generator's frame and code; Jinja 2's lists of Python 2's function and method internals),
#: with the roads from a traceback or a frame to a frame or a namespace (Jinja refuses every
#: attribute of a frame, a traceback or a code object; a code object is reached only through a
#: refused name). JavaScript's are the road from any object to its class and from a class to its
#: prototype. `caller` and `arguments` are not listed: a strict-mode function (every class and
#: module) refuses them itself, and a tool call's `arguments` is a common key.
UNSAFE_NAMES: frozenset[str] = frozenset(
    {
        # jinja2.sandbox: `mro` of a class, UNSAFE_GENERATOR/COROUTINE/ASYNC_GENERATOR_ATTRIBUTES
        "mro",
        "gi_frame",
        "gi_code",
        "cr_frame",
        "cr_code",
        "ag_frame",
        "ag_code",
        # a traceback's and a frame's way to another frame, to code and to namespaces
        "tb_frame",
        "tb_next",
        "f_back",
        "f_code",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_trace",
        # Jinja 2's UNSAFE_FUNCTION_ATTRIBUTES and UNSAFE_METHOD_ATTRIBUTES (Python 2's names)
        "func_closure",
        "func_code",
        "func_defaults",
        "func_dict",
        "func_globals",
        "im_class",
        "im_func",
        "im_self",
        # JavaScript: any object's class, and a class's prototype (`__proto__` starts with `_`)
        "constructor",
        "prototype",
    }
)


def unsafe_name(name: str) -> bool:
    """Whether the attribute rule refuses `name` as a segment of a path."""
    return name.startswith(UNSAFE_PREFIX) or name in UNSAFE_NAMES


def unsafe_segment(path: str) -> tuple[int, str] | None:
    """The first segment of a dotted path the attribute rule refuses, with its offset in `path`;
    None when it refuses none."""
    offset = 0
    for segment in path.split("."):
        if unsafe_name(segment):
            return offset, segment
        offset += len(segment) + 1
    return None


# ---------------------------------------------------------------------------------------------
# `{% %}` tags

#: Tags that open a construct.
OPENERS: tuple[str, ...] = ("if", "for", "while")
#: Tags that continue an open construct, and the constructs each may continue. A construct takes
#: at most one `else`, and nothing may follow it but the end tag.
CONTINUERS: dict[str, tuple[str, ...]] = {"elif": ("if",), "else": ("if", "for", "while")}
#: End tags and the construct each closes.
CLOSERS: dict[str, str] = {"endif": "if", "endfor": "for", "endwhile": "while"}
STMT_KEYWORDS: frozenset[str] = frozenset((*OPENERS, *CONTINUERS, *CLOSERS))
#: Deepest `{% %}` nesting accepted. CPython refuses more than 100 levels of indentation and the
#: python renderer compiles a section into one function, so deeper nesting could never render.
MAX_NESTING = 90

# ---------------------------------------------------------------------------------------------
# Builds and artifacts

#: Request shapes `Rendered.as_shape` produces.
Shape = Literal["plain", "anthropic", "openai", "openai-responses", "gemini", "bedrock", "anthropic-vertex"]
SHAPES: tuple[Shape, ...] = get_args(Shape)
#: Tool definitions and output schemas (`/// tools:`, `/// output:`) are files with this suffix.
RESOURCE_SUFFIX = ".json"
#: The shape of a tool's name that every provider accepts.
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
#: `cache_ttl` values: the breakpoint lifetimes the providers offer (Claude, on its API, Bedrock and
#: Vertex AI: 5m, 1h; OpenAI GPT-5.6 and later: 30m, 12h; which one a model takes is its profile's
#: `cache_ttls`, E710), and `none` (no breakpoint is sent: where caching costs more than it saves,
#: `promptc cost --advise`).
Ttl = Literal["5m", "1h", "30m", "12h", "none"]
CACHE_TTLS: tuple[Ttl, ...] = get_args(Ttl)
#: what a `/// budget:` line limits (promptc.backend.budget): the whole request, and what is not cached
BUDGET_LIMITS: tuple[str, ...] = ("total", "uncached")
#: The tokenizers promptc counts with, all offline (`promptc.backend.meter` implements them): two BPEs, and
#: a byte estimate that needs no data (UTF-8 bytes / 4, rounded up), named as such in the manifest.
OFFLINE_TOKENIZERS: tuple[str, ...] = ("cl100k_base", "o200k_base")
APPROX_TOKENIZER = "approx-bytes/4"
MANIFEST = "manifest.json"
SOURCE_SUFFIX = ".prompt"
#: A source file whose name starts with this is a partial: it emits no artifact.
PARTIAL_PREFIX = "_"
#: Build state, next to the output folder.
CACHE_DIR = ".promptc-cache"
#: Include paths starting with this name the partials shipped with promptc (`std/env`).
STD_PREFIX = "std/"
#: The section that holds a message's text before any `/// section:` directive.
IMPLICIT_SECTION = "body"
#: Whether a section belongs to the cache-stable prefix (`stable`) or not.
Boundary = Literal["stable", "dynamic"]
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)
#: Where a section's text goes: the system prompt, or the first user turn as context.
Target = Literal["system", "user_context"]
TARGETS: tuple[Target, ...] = get_args(Target)

#: Jinja statement tags and the promptc way to write each
JINJA_TAGS = {
    "set": "`{% set %}` is Jinja: assign in a statement block, `{# x = … #}`",
    "include": "`{% include %}` is Jinja: include a partial with `/// include: _partial` on its own line",
    "extends": "promptc has no template inheritance: share text with `/// include: _partial`",
    "block": "promptc has no template blocks: use `/// section: NAME` to name a part of a message",
    "macro": "define a function in a statement block, `{# def name(…): … #}`, and call it in `{{ }}`",
    "raw": "write `\\{{`, `\\{%` or `\\{#` for a literal opener",
    "with": "assign in a statement block, `{# x = … #}`; blocks are Python",
    "filter": "call a method or function in `{{ }}`; blocks are Python",
}


#: the kinds of change `promptc diff --fail-on` gates on (besides `cost>AMOUNT`)
FAIL_KINDS = ("bust", "contract", "breaking", "output", "output-breaking", "removed")

#: the schemas of what a build writes (`promptc --version` names them; `promptc.runtime.model` reads them)
ARTIFACT_SCHEMA = "promptc.artifact/2"
MANIFEST_SCHEMA = "promptc.manifest/2"
