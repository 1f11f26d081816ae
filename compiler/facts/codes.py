"""Every diagnostic code promptc can emit, in one place, as named constants (mypy's errorcodes.py is
the model): `UNDECLARED_INPUT` is code E501, an error. Passes report with the constant, never a bare
string, so a typo is a NameError at import time and a type checker sees it.

Codes are stable: once released a code keeps its meaning. `E` codes are errors, `W` codes warnings
(``--strict`` promotes warnings to errors but the code stays). The hundreds digit says which stage
owns the code. ``docs/diagnostics.md`` is generated from this file; a test keeps the two in step.
"""

from __future__ import annotations

from typing import Literal

Severity = Literal["error", "warning"]


class Code(str):
    """A diagnostic code: the string itself ("E501"), plus its heading, documentation and severity.

    A `str` subclass, so a diagnostic's code compares, sorts, hashes and serialises as the plain code."""

    #: one line: what went wrong (`str.title` is the string's own method, hence not "title")
    heading: str
    explain: str

    def __new__(cls, code: str, title: str, explain: str = "") -> Code:
        if not (len(code) == 4 and code[0] in "EW" and code[1:].isdigit()):
            raise ValueError(f"malformed diagnostic code {code!r}")
        self = super().__new__(cls, code)
        self.heading = title
        #: what the diagnostic means and when it fires; rendered into docs/diagnostics.md
        self.explain = explain
        return self

    @property
    def code(self) -> str:
        return str(self)

    @property
    def severity(self) -> Severity:
        return "warning" if self.startswith("W") else "error"

    def __reduce__(self) -> tuple[type[str], tuple[str]]:  # pickles (to and from build workers) as a plain string
        return (str, (str(self),))


#: every code by its string, in definition order
CODES: dict[str, Code] = {}


def _code(code: str, title: str, explain: str = "") -> Code:
    if code in CODES:
        raise ValueError(f"diagnostic code {code} defined twice")
    CODES[code] = entry = Code(code, title, explain)
    return entry


# 1xx: reading the source file
INVALID_UTF8 = _code(
    "E101",
    "invalid UTF-8",
    "The file is not valid UTF-8. promptc reads UTF-8 only and reports the first bad byte with its offset.",
)
BINARY_FILE = _code(
    "E102",
    "binary file (NUL byte)",
    "The file contains a NUL byte, which text never does: it is probably a binary file saved with a `.prompt` name.",
)
BOM_DROPPED = _code(
    "W103",
    "byte order mark dropped",
    "The file starts with a UTF-8 byte order mark. It is dropped; the artifact is the same as without it.",
)
CRLF_NORMALISED = _code(
    "W104",
    "CRLF or CR line endings normalised",
    "The file has CRLF (Windows) or CR line endings. They are normalised to LF, so artifacts are identical on every platform; the warning points at the first one.",
)
FILE_TOO_LARGE = _code(
    "E105",
    "source file too large",
    "The file is larger than the 8 MiB limit, which bounds the time and memory of a build whatever lands in the source folder.",
)
UNREADABLE = _code(
    "E106",
    "source file unreadable",
    "The file or folder could not be read: permissions, a dangling symlink, or a file deleted while the build ran.",
)
WIDE_ENCODING = _code(
    "E107",
    "UTF-16 or UTF-32 encoded file",
    "The file starts with a UTF-16 or UTF-32 byte order mark. Save it as UTF-8.",
)

# 2xx: syntax (the grammar and block structure)
SYNTAX = _code(
    "E200",
    "syntax error",
    "The parser failed in a way the grammar should make impossible. Please report it with the file.",
)
UNTERMINATED = _code(
    "E201",
    "unterminated placeholder or block",
    "`${`, `{{`, `{#` or `{%` has no closing `}`, `}}`, `#}` or `%}` (for `{%`, on the same line). Write `\\${` (etc.) for a literal opener.",
)
EMPTY_PLACEHOLDER = _code("E202", "empty placeholder", "`${}` names no input.")
INVALID_PLACEHOLDER = _code(
    "E203",
    "invalid placeholder name",
    "A placeholder holds something other than a name or a dotted path (`${user.name}`), or a path of more than 32 segments (each segment is one more level of the input's type, which the runtimes check at most 64 levels deep). Expressions belong in `{{ }}` blocks.",
)
BLOCK_NEVER_CLOSED = _code(
    "E204",
    "block never closed",
    "An `{% if %}`, `{% for %}` or `{% while %}` is not closed before the end of the file, the next role separator or the next section directive.",
)
CLOSES_NOTHING = _code(
    "E205",
    "closing tag without an opening tag",
    "An `{% endif %}`, `{% endfor %}` or `{% endwhile %}` has no matching opening tag.",
)
MISMATCHED_CLOSE = _code(
    "E206", "mismatched closing tag", "A closing tag closes a different kind of block than the innermost open one."
)
BLOCK_SPANS_SEPARATOR = _code(
    "E207",
    "block spans a role separator or section",
    "A `{{ }}` or `{# #}` block runs across a role separator or a section directive; blocks stay within one section.",
)
UNKNOWN_TAG = _code(
    "E208",
    "unknown statement tag",
    "`{% %}` holds only if / elif / else / for / while and their end tags. Other statements go in `{# #}`.",
)
MISPLACED_CONTINUATION = _code(
    "E209",
    "misplaced `elif` or `else`",
    "`{% elif %}` outside an `{% if %}`, `{% else %}` outside an if / for / while, a second `{% else %}`, or an `{% elif %}` after the `{% else %}`.",
)
AMBIGUOUS_ADJACENCY = _code(
    "E211",
    "text cannot end right before this placeholder or block",
    "Literal text that ends with a backslash right before a placeholder or block (or with `$` or `{` right before a block) would read as an escape or a different opener in the artifact's template text. It can only arise from a define's value or a partial that ends without a newline; add a space or a newline.",
)
TOO_DEEP = _code(
    "E210",
    "line too long or nesting too deep",
    "`{% %}` nesting deeper than 90 levels, or Python nested too deeply to parse. CPython cannot compile such a template, so it could never render.",
)

# 3xx: directives
DIRECTIVE_TWICE = _code(
    "E301", "directive given twice", "`flow` or `node` (or `role`) is given twice; a prompt has one."
)
KEY_TWICE = _code(
    "W302", "key given twice; the later value wins", "A `param` or metadata key is given twice; the later value wins."
)
DIRECTIVE_TYPO = _code(
    "W303",
    "unknown directive key close to a reserved one",
    "A directive key is one typo away from a reserved key (`sectoin` → `section`). It is kept as generic metadata.",
)
MALFORMED_DIRECTIVE = _code(
    "E304",
    "malformed directive value",
    "A directive value is malformed: a `param` without `key=value`, an input name that is not an identifier, an empty `flow`, `node` or `include`.",
)
INVALID_ROLE = _code("E305", "invalid role", "`/// role:` names a role other than system, developer, user, assistant.")
IGNORED_IN_PARTIAL = _code(
    "W306",
    "directive ignored here",
    "A directive that only a prompt can hold (generic metadata) stands in a partial and is ignored.",
)

# 4xx: roles and messages
UNKNOWN_SEPARATOR_ROLE = _code(
    "E401",
    "unknown role in separator",
    "A separator line names an unknown role (`----- tool -----`). The valid roles are listed.",
)
TEXT_BEFORE_SEPARATOR = _code(
    "E402",
    "text before the first role separator",
    "A file with role separators has text before the first one. Comments and directives may stand there; text may not.",
)
EMPTY_MESSAGE = _code(
    "W403", "empty message left out", "A message is empty once comments are removed; it is left out of the artifact."
)
NEAR_SEPARATOR = _code(
    "W404",
    "line looks like a role separator but is not one",
    "A line looks like a role separator but does not have its exact shape (indented, too few dashes, no spaces, odd whitespace). It is kept as text.",
)
MISTYPED_SEPARATOR = _code(
    "E406",
    "mistyped role separator",
    "A line is a role separator with a typo — a role (`user`, `system` …) between dashes, one side four dashes or more, but not the exact shape: a dash missing (`---- user -----`), indented, no space around the role. As text it would merge the turn it was meant to start into the message above, so it is an error. Three dashes on each side (`--- User ---`, a divider in prose) stay text with W404.",
)
LATE_SYSTEM_MESSAGE = _code(
    "W405",
    "system message after the conversation started",
    "A `system` or `developer` message follows a user or assistant message. The openai shapes send it where it stands; the anthropic shape, whose API has one system prompt at the start, sends it as a user turn in its place, so every shape keeps the order the cache prefix was proven in.",
)

# 5xx: inputs and placeholders
UNDECLARED_INPUT = _code(
    "E501",
    "input used but not declared",
    "With `/// input:` declared, the prompt uses an input that is not declared (often a typo: the hint names the closest declared input).",
)
UNUSED_INPUT = _code("W502", "declared input never used", "A declared input is never used.")
NO_INPUT_DECLARATION = _code(
    "E503",
    "no `/// input:` declaration",
    "`require_declared_inputs = true` is set in config and the prompt has inputs but no `/// input:` declaration.",
)
DEFINE_WITH_ATTRIBUTE = _code(
    "E504",
    "invalid build-time define",
    "A build-time define is used with attributes (`${product.name}`), but defines are plain strings.",
)
TYPE_CONTRADICTED = _code(
    "E505",
    "a use contradicts the input's declared type",
    "An input's declared type (`/// input: n: int`, or a schema file) cannot do what the template does with it: a placeholder path into a value that has no keys (`${n.attr}` on an `int`, `str`, `bool` or list), a key an object schema closes out (`additionalProperties: false` without that property), or a `{% for %}` over a number, a boolean or None. The error is at the use; the hint names the declaration.",
)
UNSAFE_PATH = _code(
    "E506",
    "a placeholder path reads a name no path may read",
    "A segment of a `${}` path starts with `_` (`${a.__class__}`, `${_secret}`) or is a name that reaches an object's internals: `mro`, a generator's, coroutine's, frame's or traceback's `gi_frame`, `f_globals`, `tb_frame` and the like, Python 2's `func_globals`, JavaScript's `constructor` and `prototype` (the list is `UNSAFE_NAMES` in `promptc.facts.language`). A runtime reads a path's keys from mappings and its attributes from objects the application passes, so such a path could read the application's memory (`${a.__class__.__init__.__globals__.API_KEY}`); both runtimes refuse it at render time too, whatever the value. The error is at the segment. Rename the key, or pass the value as an input of its own. Python in `{{ }}` blocks is not bound by this rule (docs/robustness.md, the attribute rule).",
)

# 6xx: template blocks and inference
PYTHON_SYNTAX = _code(
    "E601",
    "Python syntax error in a template block",
    "The Python inside a template block does not parse, or CPython's compiler refuses the section's program (`def f(a, a)`, a walrus in a comprehension's iterable, `await`, `nonlocal` with nothing to bind, `break` outside a loop), or the section uses `return` with a value or `yield` at its top level. The build compiles exactly the program the runtime runs, so a template that builds renders. The position is in the `.prompt` file.",
)
EXPR_BLOCK_NOT_EXPRESSION = _code(
    "E602",
    "`{{ }}` block does not end in an expression",
    "A `{{ }}` block must end with an expression (its value is output). Use `{# #}` for statements only.",
)
DYNAMIC_NAMES = _code(
    "W603",
    "template block cannot be analysed completely",
    "A block reads variables by name at run time (`locals()`, `globals()`, `vars()`, `eval`, `exec`, frame access), so its inputs cannot be inferred completely.",
)
BUILTIN_AS_TEXT = _code(
    "W604",
    "a builtin output as a value",
    "A `{{ }}` block outputs a name that is one of Python's builtins (`{{ input }}`, `{{ type }}`) and that the template never assigns. It is the builtin function, never an input, and rendering a function or a class as text is a render error. Prompt collections use such names as variables; rename it.",
)
JINJA_HABIT = _code(
    "W605",
    "Jinja syntax in a Python block",
    "A block uses Jinja's syntax where promptc's blocks are Python: a filter (`{{ name | upper }}`, which Python reads as a bitwise or, so `upper` becomes an input; `{{ name|default('there') }}`, which calls `default`), Jinja's `loop` variable (`{{ loop.index }}`) or a Jinja comment (`{# TODO #}`, which runs as a statement reading `TODO`). The hint gives the Python (`{{ name or 'there' }}`, `enumerate`, `/// TODO`). When the name is also an undeclared input (E501, E503), the error carries this hint instead. Jinja's statement tags (`{% set %}`, `{% include %}`, `{% else if %}` …), a comment in words and a literal `{{` in text are errors (E208, E601) with the same kind of hint.",
)

# 7xx: sections and the cache-stable prefix
SECTION_TWICE = _code(
    "E701",
    "section name used twice",
    "Two sections in one file have the same name (the implicit `body` section included).",
)
STABLE_USES_INPUT = _code(
    "E702",
    "stable section uses a runtime input",
    "A section declared `stable` uses a runtime input, so its bytes are not the same on every request. Reported at the use of the input.",
)
NO_USER_MESSAGE = _code(
    "E703",
    "user_context section but no user message",
    "A `user_context` section needs a user message to go into; the prompt has none.",
)
MALFORMED_SECTION = _code(
    "E704",
    "malformed section directive",
    "A section directive is malformed: `/// section: NAME [stable|dynamic] [system|user_context]`.",
)
PREFIX_BELOW_MINIMUM = _code(
    "W705",
    "cache-stable prefix below the provider minimum",
    "The cache-stable prefix is shorter than the configured provider's minimum cacheable prefix, so the provider will not cache it. The minimum is the platform's own for the model: Claude on Amazon Bedrock holds some models to other minimums than the Claude API (Claude Opus 4.5 to 4.8, Sonnet 4.5 and Haiku 4.5: 4,096 tokens), and a Bedrock model id is matched without its cross-Region prefix (`us.`, `global.` …).",
)
DYNAMIC_LOOKING_TEXT = _code(
    "W706",
    "text that looks dynamic in a stable section",
    "Text in a stable section looks like it changes from run to run (a date or time, a UUID, a long hex id, an epoch timestamp, an absolute home path). When it changes, every cached prefix that contains it is lost.",
)
PARAM_NOT_SENT = _code(
    "W707",
    "parameter the provider does not accept",
    "A `/// param:` is not a parameter of the provider's request (for the profile that applies: `provider` in config, or the model's provider). The shapes leave it out of the request; rename or remove it.",
)
BREAKPOINT_OUT_OF_REACH = _code(
    "W708",
    "cache breakpoint beyond the provider's lookback",
    "A cache breakpoint sits more than the provider's lookback window (Anthropic: 20 content blocks) after the previous one, so a request whose text changed before it cannot find the entry the previous breakpoint wrote by looking back.",
)
REQUIRED_PARAM_MISSING = _code(
    "E709",
    "request parameter the provider requires is missing",
    "The provider's request cannot be sent without this parameter (Anthropic requires `max_tokens`): add `/// param: max_tokens=1024`. Without a profile (no `provider`, no model) nothing is required.",
)
INVALID_MODEL = _code(
    "E710",
    "invalid model or cache TTL",
    "`param: model=` is not a non-empty string, `cache_ttl` is not `5m`, `1h`, `30m`, `12h` or `none`, or it is a lifetime the prompt's model does not offer (providers.json `cache_ttls`: Claude 5m and 1h, some Claude models on Bedrock 5m only, OpenAI GPT-5.6 and later 30m and 12h), or a `/// cache_ttl:` line is written for a model whose cache takes no TTL (OpenAI before GPT-5.6, Gemini: their caching is automatic). A request carrying such a TTL is refused by the provider's API. Reported at the `/// cache_ttl:` value, with the lifetimes the model offers in the hint; a `[tool.promptc]` `cache_ttl` default the model does not offer is reported at the prompt's model (`none`, no breakpoint, is always accepted).",
)
PREFIX_CUT_SHORT = _code(
    "W710",
    "cache-stable prefix cut short by an element that could move",
    'The cache-stable prefix ends at a dynamic element — an input\'s placeholder, or a template block — that is the only dynamic thing in its section, and the stable text around and after it (up to the next dynamic section) is at least `stable_run_tokens` tokens (config, default 64). Every request re-sends that text uncached. The hint gives the figure: how many more tokens would be in the prefix if the element rendered as empty text, which is what moving it into a dynamic section after the stable text, or fixing it at build time with `-D name=…`, achieves. Example: `You are the support assistant for ${product}.` at the top of a system prompt; write `You are the support assistant.` and say `The product is ${product}.` in the last user message. Allow it with `/// promptc: allow W710` on the line before, `allow = ["W710"]` in [tool.promptc], or `--allow W710`.',
)
REQUEST_NOT_SENDABLE = _code(
    "E711",
    "the provider's API refuses this request",
    "The request for the prompt's own provider cannot be sent as it is: Anthropic's Messages API and Gemini's generate_content need a user turn after the opening system part (`messages` / `contents` must not be empty), and every API needs a message. A prompt file with no separator line is one system message, so `Summarize ${text}` alone is a system prompt with no turn to answer. Add a `----- user -----` message (move the request into it). Without a profile (no `provider`, no model) nothing is required; rendering another provider's shape checks the same at render time and names the shape.",
)
STABLE_ENDS_UNMARKED = _code(
    "W712",
    "more stable ends than the provider takes cache markers",
    "The prompt has more runs of stable text (stable blocks between dynamic ones, and the tools) than the provider takes cache markers in one request: Claude, on its API, on Amazon Bedrock and on Vertex AI, writes a cache entry only at a marker (`cache_control`, a `cachePoint` block), at most four. The build marks the end of the cache-stable prefix and then the ends that cover the most tokens; the warning names the stable ends left unmarked by where they are written. A request whose text changed before an unmarked end cannot read what follows it from the cache. Merge stable sections, or move dynamic text after the stable text; `cache_ttl: none` (no markers at all) silences it.",
)
STABLE_HAS_CODE = _code(
    "E707",
    "stable section contains template code",
    "A section declared `stable` contains template code. Its output cannot be known without running it, and the build never runs template code.",
)
# 72x: token budgets (`/// budget:`) and the model's context window
BUDGET_EXCEEDED = _code(
    "E720",
    "token budget exceeded",
    "The request's worst case is over a limit of the prompt's `/// budget:` line. The worst case counts every stable text as sent, every input at its declared upper bound (`/// input: diff: str(max_tokens=4000)`, or a schema's `maxLength`), the tools and the output schema, as `total`; `uncached` is the worst case minus what the provider caches of the prefix (`cache.cacheable_tokens`). Shorten the prompt, lower a bound, or raise the budget. docs/language.md#token-budgets has the arithmetic.",
)
BUDGET_UNBOUNDED = _code(
    "E721",
    "budget cannot be checked: an input has no upper bound",
    "The prompt has a `/// budget:` line, but an input it inserts has no declared upper bound, so the worst case is unbounded. Declare one: `/// input: diff: str(max_tokens=4000)` (tokens) or a JSON Schema with `maxLength` (characters, counted as up to one token each — four for text that is not ASCII). A `{% for %}` loop or `{{ }}` block has no bound promptc can see either: a prompt with a budget can only use placeholders.",
)
CONTEXT_WINDOW_EXCEEDED = _code(
    "E722",
    "request can exceed the model's context window",
    "The request's worst case (every input at its declared upper bound), plus `max_tokens` when the prompt sets it, is more than the model's context window from the provider profile (`promptc/data/providers.json` `context_window`, with its source and date). The provider would refuse such a request. Lower the input bounds or `max_tokens`, or pick a model with a larger window.",
)

PARAM_VALUE_REFUSED = _code(
    "E730",
    "a parameter value the provider refuses",
    "A `/// param:` value does not have the type or range the provider's API takes for it: `temperature=hot` (a number), `max_tokens=lots` (an integer), `top_p=2` (from 0 to 1), a `service_tier` that is not one of its values, a `temperature` other than 1 for OpenAI's reasoning models. The types and ranges are in `promptc/data/providers.json` (`parameters`: per request shape, per model family, each with the API reference page and the date it was read). Without a model or provider, a value no provider takes is refused. The error is at the value.",
)

# 8xx: partials and includes
INCLUDE_NOT_FOUND = _code(
    "E801",
    "included file not found",
    "An included file does not exist (the hint names the closest partial), or a `std/` name is not a built-in partial.",
)
INCLUDE_OUTSIDE = _code(
    "E802",
    "include escapes the source folder",
    "An include path is absolute, leaves the source folder with `..`, or is a symlink that points outside it. A prompt source that is such a symlink is not compiled either.",
)
INCLUDE_CYCLE = _code("E803", "include cycle", "Partials include each other in a cycle; the message shows the chain.")
PARTIAL_NOT_ALLOWED = _code(
    "E804",
    "partial has separators or file-level directives",
    "A partial contains role separators or a prompt-level directive (`flow`, `node`, `param`, `role`).",
)
INCLUDE_NOT_PARTIAL = _code(
    "E805",
    "include target is not a partial",
    "`/// include:` names a prompt (a file whose name does not start with `_`), not a partial.",
)
INCLUDE_LIMIT = _code(
    "E806",
    "include nesting too deep or expansion too large",
    "Partials include partials more than 64 deep, or one prompt's includes would expand to more than 16 MiB of text or 200,000 pieces (a partial included many times by partials that are themselves included many times). The build stops expanding there instead of running out of stack or memory.",
)

# 82x: tool definitions and output schemas (`/// tools:`, `/// output:`)
RESOURCE_NOT_FOUND = _code(
    "E820",
    "tool or schema file not found",
    "A file named by `/// tools:` or `/// output:` does not exist in the source folder, or its path is absolute, leaves the source folder or is a symlink that points outside it. Paths resolve like includes: relative to the file that holds the directive.",
)
INVALID_JSON = _code(
    "E821",
    "invalid JSON file",
    "A tool or schema file is not valid JSON (the diagnostic points at the first error inside the file), is not UTF-8, or nests deeper than 32 levels.",
)
INVALID_TOOL = _code(
    "E822",
    "invalid tool definition",
    'A tool file holds something other than one tool object or a list of them. A tool is `{"name", "description", "input_schema"}`: the name matches `^[a-zA-Z0-9_-]{1,64}$` (what every provider accepts), the description is a string, and no other key is given. An OpenAI tool (`{"type": "function", "function": {…}}`) is one E822 at its wrapper (unwrap it and rename `parameters` to `input_schema`), and the inner object is still checked for other mistakes; the OpenAI key `parameters` on its own is one E822 too.',
)
INVALID_SCHEMA = _code(
    "E823",
    "invalid JSON Schema",
    'A tool\'s `input_schema` or the `/// output:` schema is not a valid JSON Schema (checked against its meta-schema with `jsonschema`), or its root is not `"type": "object"`, which providers require for tool inputs and structured output. Every problem of a schema is reported, each at the keyword that fails with a hint of its own (`"type": "strin"`: did you mean `string`?), and so is a key one typo away from a keyword (`"requird"`), which JSON Schema would silently ignore.',
)
DUPLICATE_TOOL = _code(
    "E824",
    "duplicate tool name",
    "Two tools of one prompt share a name (also when one comes from a partial). Providers refuse such a request.",
)
UNCHECKED_SCHEMA_KEYWORD = _code(
    "E825",
    "input schema uses a keyword render cannot check",
    "An input typed by a schema file (`/// input: order: @schemas/order.json`) uses a JSON Schema keyword that promptc's runtimes do not check. `render()` validates every value against the schema in Python and in JavaScript, with the same result and the same messages, so a keyword they would silently skip is refused at build time: `pattern` and `patternProperties` (Python's and JavaScript's regular expressions differ), `unevaluatedProperties`, `unevaluatedItems`, `$anchor`, `$dynamicRef`, a `$ref` to another file or URL, any keyword JSON Schema does not define. Checked, with JSON Schema 2020-12's meaning: `type` (one or a list; `3.0` is an integer), `enum`, `const`, `minLength`, `maxLength` (in characters), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `items`, `prefixItems`, `minItems`, `maxItems`, `uniqueItems`, `contains`, `minContains`, `maxContains`, `properties`, `required`, `additionalProperties`, `propertyNames`, `minProperties`, `maxProperties`, `dependentRequired`, `dependentSchemas`, `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else`, boolean schemas, and local `$ref`s into `$defs` (resolved at build, E826). Draft-07's spellings (tuple `items: [...]`, `additionalItems`, `dependencies`) are read as that draft means them. The annotations `title`, `description`, `default`, `examples`, `format`, `$schema`, `$id`, `$comment`, `deprecated`, `readOnly`, `writeOnly`, `contentEncoding`, `contentMediaType`, `contentSchema` and `discriminator` are allowed.",
)
UNRESOLVABLE_REF = _code(
    "E826",
    "a schema `$ref` that cannot be resolved",
    "A schema file that types an input uses a `$ref` promptc cannot turn into a finite check: it points to nothing in the file, names an anchor instead of a JSON pointer (`#/$defs/name`), refers back to a schema that holds it (a recursive type, such as a tree), or makes the schema larger than 20,000 nodes or 64 levels once every reference is copied in. Local references are resolved at build time, so the artifact's `input_schema` holds none: pydantic's `model_json_schema()` output (`$defs` plus `$ref`) is accepted as it is. The error is at the `$ref` in the schema file.",
)
OUTPUT_NOT_CHECKABLE = _code(
    "W827",
    "output schema `parse` cannot check",
    "The `/// output:` schema uses a keyword both runtimes do not check (`pattern` …, see E825) or a recursive `$ref` (E826). The schema is sent to the provider as written, but the generated bindings get no `parse` helper for this prompt: a helper that validates only part of the schema would pass responses the schema refuses. Validate such responses in the application (jsonschema, ajv).",
)

# 9xx: configuration, tokenizer and the output folder
TOKENIZER_UNAVAILABLE = _code(
    "E901",
    "unknown or unavailable tokenizer",
    "The configured tokenizer is unknown or not available offline. promptc never falls back to another tokenizer silently.",
)
INVALID_CONFIG = _code(
    "E902",
    "invalid configuration",
    "A value in `[tool.promptc]` has the wrong type or an unknown value (a role, a provider).",
)
UNKNOWN_CONFIG_KEY = _code(
    "W903",
    "unknown configuration key",
    "`[tool.promptc]` has a key promptc does not know (the hint names the closest one).",
)
OUTPUT_UNWRITABLE = _code(
    "E904",
    "cannot write the output folder",
    "The output folder could not be written (permissions, a file where the folder should be, disk full). The previous build is unchanged.",
)
BUILD_STALE = _code(
    "E905",
    "build/ is stale",
    "`check --locked`: a file in the output folder differs from what `promptc build` would write, is missing, or should not be there.",
)
SOURCE_NOT_FOUND = _code("E906", "source folder not found", "The source folder does not exist.")
OUTPUT_LOCKED = _code(
    "E907",
    "output folder locked by another build",
    "Another build holds the output folder's lock and did not release it in time. Builds of one output folder never interleave.",
)
ARTIFACT_COLLISION = _code(
    "E908",
    "two sources map to the same artifact",
    "A source would be written where the manifest goes (`manifest.prompt` at the top of the source folder).",
)
OUTPUT_OVERLAPS_SOURCES = _code(
    "E910",
    "output folder overlaps the source folder",
    "The output folder is the source folder, lies inside it, or contains it. A build replaces the output folder as a whole, which would move or delete sources, so promptc refuses before reading anything.",
)
OUTPUT_IS_SYMLINK = _code(
    "E911",
    "output folder is a symlink",
    "The output folder is a symbolic link. A build swaps the output folder atomically, which would exchange the link itself (and delete files in its target on the next build), so promptc refuses: point `out` at the real folder.",
)
OUTPUT_NOT_OURS = _code(
    "E912",
    "output folder holds files promptc did not write",
    "The output folder exists and holds something besides a promptc build: a file that is neither `manifest.json` nor an artifact that manifest lists (`promptc build -o docs` by mistake), or a symlink, pipe or device anywhere inside. A build replaces its output folder as a whole, so promptc builds only into a folder that is missing, empty, or holds a promptc build, and refuses before reading or moving anything; the message names the files. Build into a folder of its own, or move the files out.",
)
CACHE_NOT_OURS = _code(
    "E913",
    "cache entry promptc did not make",
    "Something in `.promptc-cache/` that a build needs (the folder itself, the lock, the record of the folders promptc made, the shadow set, the trash) is a symlink, or otherwise not what promptc makes there: a cache folder committed to the repository or copied from elsewhere. promptc never follows a link in its cache or output folder and deletes only what it made, so the build stops with nothing touched. Delete the entry the message names (or the whole `.promptc-cache/`); promptc recreates what it needs.",
)
PATH_OUTSIDE_PROJECT = _code(
    "E914",
    "path outside the project",
    "A path `[tool.promptc]` sets for promptc to write (`out`, `python_bindings`, `typescript_bindings`, the `src` that `import`, `fmt` and `cost --advise --write` write into) is absolute or leaves the project, the folder of the pyproject.toml (`../victim/notes.txt`), or is that folder itself. The file is committed with the project, and a clone's may be hostile, so what it names is confined to the project; nothing is written (exit 1) and the previous build is intact. Name a path inside the project, relative to pyproject.toml; a path elsewhere can be given on the command line (`-o`), which is the user's own choice.",
)
PATH_THROUGH_LINK = _code(
    "E915",
    "path goes through a symlink",
    "promptc would write a file through a symbolic link it did not make: the file itself is a link (a committed `app/prompts.py -> ../../victim/notes.txt`), or a folder on its way inside the project is one. promptc never writes through such a link, wherever the path came from, and writes nothing (exit 1). A source `fmt` or `cost --advise --write` edits may be a link, as an editor saves through one, but only to a file inside the source folder. Replace the link with a real file or folder.",
)
FILE_NOT_GENERATED = _code(
    "E916",
    "file promptc did not write",
    "A file stands where promptc would write a generated file (a bindings file, `gen -o`, `report -o`), and it is not one promptc generated: its first lines do not carry the mark every generated file has (\"generated by promptc\", in the bindings' docstring or comment and the report's HTML comment). promptc never replaces a file it did not write, and writes nothing (exit 1). Move or delete the file if promptc should write there, or name another path.",
)
OUTPUT_HOLDS_WORKING_FOLDER = _code(
    "E917",
    "output folder holds the working folder",
    "`promptc build` was asked to write its output into the folder it runs in, or into a folder that holds it (`-o .`, `-o ..`). A build swaps the output folder as a whole (the new set is renamed into its place), so the working folder of the shell that ran it would be moved away: promptc refuses and writes nothing. Name a folder of its own for the output (`-o build`). `promptc check` only reads, and takes such a folder.",
)
BINDING_COLLISION = _code(
    "E920",
    "generated name collision",
    "`promptc gen` would give two prompts the same function name (`support/chat` and `support-chat` are both `support_chat`), two object types the same type name (they are named from the prompt and the input's path), or an input is named like a keyword of the target language. Bindings never rename silently: rename a prompt, the input or the key.",
)
PYTHON_ONLY_PROMPT = _code(
    "W921",
    "prompt left out of the TypeScript bindings",
    "`promptc gen typescript` leaves out a prompt whose artifact has the `python` renderer: its `{{ }}`, `{# #}` and `{% %}` blocks are Python code, which only the Python runtime runs. The JavaScript runtime refuses such artifacts too. Render the prompt from Python, or write it with `${…}` placeholders only.",
)
# 94x: `promptc diff`'s old tree (`--old-src`, `--against REV`)
NOT_A_GIT_REPOSITORY = _code(
    "E940",
    "not a git repository",
    "`promptc diff --against REV` reads the old sources and build with git (`git ls-tree`, `git cat-file`; no checkout, no worktree), so it must run inside a git work tree, and git must be installed. Use `--old-src DIR` to compare with a folder instead.",
)
UNKNOWN_REVISION = _code(
    "E941",
    "unknown git revision",
    "`--against` names something git cannot resolve to a commit: a typo, a branch that was never fetched (`git fetch origin main` first, in CI), or a shallow clone that lacks it (`fetch-depth: 0`).",
)
OLD_SOURCES_NOT_FOUND = _code(
    "E942",
    "old sources not found",
    "The old source folder does not exist: the folder given to `--old-src`, or the source folder (config `src`) in the revision given to `--against`. Diff needs the old sources to point at the line a cache bust comes from.",
)
GIT_FAILED = _code(
    "E943",
    "git failed",
    "git failed while reading the revision (a corrupt repository, a missing object, a file that cannot be read); the message is git's own.",
)
SYMLINK_LOOP = _code(
    "W909",
    "symlink loop in the source tree",
    "A symlink makes the source tree loop back on itself; the folder already read is skipped.",
)

# 94x: the traffic file of `promptc diff --traffic` / `promptc cost --traffic` / `promptc report --traffic`
TRAFFIC_UNREADABLE = _code(
    "E945",
    "traffic file cannot be read",
    'The `--traffic` file is missing, unreadable, or not valid JSON. It must be a JSON object mapping each prompt name to its requests per day, e.g. `{"support/chat": 12000}`. The command stops (exit 2) before printing any cost.',
)
INVALID_TRAFFIC = _code(
    "E946",
    "invalid traffic file",
    "The `--traffic` file is JSON but not an object of prompt name → requests per day, or a value is not a number ≥ 0 (a string, a boolean, null, a negative number). Each wrong value is reported at its place in the file; the command exits 2.",
)
UNKNOWN_TRAFFIC_PROMPT = _code(
    "W947",
    "traffic for an unknown prompt",
    "The `--traffic` file names a prompt that is not in the build (a typo, or a prompt that was renamed or removed): its requests are not counted. The hint names the closest prompt.",
)
UNPRICED_MODEL = _code(
    "W948",
    "model not priced",
    "A prompt's model has no row in the price table (promptc/data/prices.json) in force at the moment priced, in the size band of its request: a model the table does not name (`claude-opus-4-8` is never priced as `claude-opus-4`: a row matches only its own model names and their snapshot suffixes, `-20250929`, `@20250929`, `-v1:0`), a model whose price could not be read from an official page, a request larger than every band of its model, or a moment before its first row. `promptc cost`, `diff --traffic`, `cost --advise`, `report` and `reconcile` say so once per model, at the prompt's `model=` parameter, and leave its prompts out of every money figure instead of guessing.",
)

# 95x: usage records (`promptc reconcile`) and the cache advisor (`promptc cost --advise`)
RECORDS_UNREADABLE = _code(
    "E950",
    "records file cannot be read",
    "The file of usage records given to `promptc reconcile` (or `promptc cost --advise --records`, `promptc report --records`) does not exist or cannot be opened. The command stops with exit 2.",
)
MALFORMED_RECORD = _code(
    "W951",
    "malformed usage record skipped",
    "A value in the records file is not JSON, or not a usage record (`promptc.usage/1`, as `Rendered.usage(...)` writes it) nor an OpenTelemetry span export (or an export of the wrong shape). The value is skipped and the others are reconciled; the diagnostic gives the file and line, and reading resumes at the next line that starts a JSON value (a log cut off mid-line loses that line only). A record whose field holds a bad value is W953.",
)
BAD_RECORD_VALUE = _code(
    "W953",
    "usage record with a bad value skipped",
    "A usage record (or an OpenTelemetry span carrying one) has a field whose value is not what the field holds: a count that is not a whole number from 0 to 2^63-1 (a negative or fractional number, NaN, `1e300`, a number of thousands of digits, a string of digits that are not ASCII such as `²`), a timestamp that is not an ISO 8601 date and time with a zone nor epoch seconds, or is outside the years 1 to 9999, a name that is not a string, a missing prompt or input count. The record is skipped and the others are reconciled; the diagnostic names the field and points at it (file, line and column), and the warnings are counted by code (`summary.warnings` in `--format json`).",
)
ADVICE_NOT_WRITTEN = _code(
    "E952",
    "cannot write the advised TTL",
    "`promptc cost --advise --write` changes a prompt's `/// cache_ttl:` line only when the prompt's source is in the source folder, compiles, and would compile to the same artifact but for the TTL; otherwise (the file is not there, was saved again while promptc ran, or cannot be written) the file is left exactly as it was and this error says why (exit 1). A TTL from `[tool.promptc]` is overridden by the line written. Files are written atomically.",
)


# 93x: the formatter (`promptc fmt`)
FMT_DOES_NOT_COMPILE = _code(
    "E930",
    "not formatted: the file does not compile",
    "`promptc fmt` formats only what compiles: it checks every change against the compiled artifact, "
    "which a file with errors does not have (for a partial: a prompt that includes it has errors). "
    "The file is left as it was; fix what `promptc check` reports, then format.",
)
FMT_CHANGES_ARTIFACT = _code(
    "E931",
    "not formatted: the artifact would change",
    "The formatted text would compile to an artifact that differs from the original's (messages, tools, "
    "schema, cache fields or any other field but `source_sha256` and source line numbers). fmt never "
    "changes what is sent, so it leaves the file as it was. This is a bug in the formatter: report it with the file.",
)
FMT_CHANGES_WARNINGS = _code(
    "E932",
    "not formatted: the warnings would change",
    "The formatted text would compile with other warnings than the original (another code, or one more or "
    "fewer). The file is left as it was. This is a bug in the formatter: report it with the file.",
)
FMT_WRITE_FAILED = _code(
    "E933",
    "cannot write the formatted file",
    "The formatted text could not be written (permissions, a read-only file system). Files are written "
    "atomically, so the file holds either its old text or its new one, never part of either.",
)
FMT_NOT_A_SOURCE = _code(
    "E934",
    "not a prompt source",
    "A path given to `promptc fmt` is neither a folder nor a `.prompt` file, or does not exist.",
)

# 96x-97x: `promptc import` and `promptc audit` (foreign sources: Dotprompt, Prompty, Jinja)
IMPORT_BAD_HEADER = _code(
    "E960",
    "import: the header is not valid YAML",
    "The YAML front matter of a Dotprompt or Prompty file cannot be read: a syntax error, a key given "
    "twice, an anchor or alias (refused: they can expand without bound), a tag other than the safe "
    "ones, or a header that is not a mapping. The position is in the foreign file. The file is not written.",
)
IMPORT_UNSUPPORTED_FIELD = _code(
    "E961",
    "import: a header field has no promptc equivalent",
    "A field of the header means something promptc cannot express in a `.prompt` source: a Prompty "
    "`thread` or image input, a tool bound to an input or of a kind other than `function`, a "
    "Mustache template, an `${env:…}` reference in a value that is sent, a schema type Picoschema "
    "or Prompty defines but promptc's input types cannot check. Importing it anyway would change what "
    "is sent, so the file is not written; the hint says what to do instead.",
)
IMPORT_NO_EQUIVALENT = _code(
    "E962",
    "import: a template construct has no promptc equivalent",
    "The template uses something promptc's language cannot express with the same meaning: a custom "
    "Handlebars helper (or Dotprompt's `media`, `history`, `section`), a Jinja filter that has no "
    "Python expression, a role marker inside a block (a Prompty or Prompt flow role line in a loop "
    "would make as many messages as it has items), a partial with arguments, `{% macro %}` or "
    "`{% extends %}`, or a value whose text promptc would spell differently. The file is not written: "
    "promptc import never changes the meaning of a prompt silently. The hint names the nearest "
    "promptc construct.",
)
IMPORT_TEMPLATE_SYNTAX = _code(
    "E963",
    "import: template syntax error",
    "The foreign template is not well formed: an unclosed `{{`, `{%` or comment, a block closed "
    "that was never opened or closed by the wrong tag, an `{{else}}` outside a block. The original "
    "engine would refuse it too. The file is not written.",
)
IMPORT_PARTIAL_MISSING = _code(
    "E964",
    "import: partial or include not found",
    "A `{{> name}}` (Dotprompt: the file `_name.prompt` beside the prompt) or `{% include %}` names "
    "a file that is not in the imported folder, or partials include each other in a cycle.",
)
IMPORT_WOULD_OVERWRITE = _code(
    "E965",
    "import: would overwrite a file import did not write",
    "The output folder already holds a file at a path the import would write, and that file was not "
    "written by `promptc import` (its first line is not the import marker) or was edited since. "
    "promptc never replaces a user's file silently: move it away, or pass `--force`. Two foreign files "
    "that would be written to the same path (`a.j2` and `a.jinja`) are reported the same way.",
)
IMPORT_WRITE_FAILED = _code(
    "E966",
    "import: cannot write the output",
    "A file of the import could not be written (permissions, a read-only file system, a file where "
    "a folder should be). Files are written atomically: each holds its old bytes or its new ones.",
)
IMPORT_CHECK_DIFFERS = _code(
    "E967",
    "import --check: the rendered messages differ",
    "`--check` rendered the foreign prompt with its own engine and the imported one with promptc, on "
    "the same sample inputs, and the messages differ. The message names the input set, the message "
    "and the first differing line on both sides. Messages are compared after the trimming promptc "
    "applies to every message (leading blank lines, trailing whitespace), a message that renders "
    "empty left out on both sides (the original engines leave it out); every other byte counts. A "
    "sample that does not fit the input types the import declares is reported at the declaration.",
)
IMPORT_ENGINE_MISSING = _code(
    "E968",
    "import --check: the original engine is not installed",
    "`--check` renders with the original engine (dotpromptz for Dotprompt, prompty for Prompty, "
    "jinja2 for Jinja), which promptc does not depend on. Install it: "
    "`pip install 'promptc-compiler[check]'`.",
)
IMPORT_ENGINE_FAILED = _code(
    "E969",
    "import --check: the original engine failed on a sample",
    "The original engine raised an error rendering the foreign prompt with a sample input set, so "
    "there is nothing to compare with: give inputs it accepts with `--inputs FILE`. When it cannot "
    "load the file at all, whatever the inputs, the message says what it refuses.",
)
IMPORT_BAD_INPUTS = _code(
    "E970",
    "import --check: the inputs file cannot be used",
    "The `--inputs` file is not a JSON object mapping prompt names to an input object or a list of "
    "them, or names a prompt that the import does not produce.",
)
IMPORT_NOT_COMPILED = _code(
    "E971",
    "import: the imported prompt does not compile",
    "The `.prompt` text the importer made for this file does not compile; the message quotes the "
    "compiler's diagnostic and the hint is its hint. Usually the source uses something the promptc "
    "build refuses on its own terms (an input schema keyword the runtimes do not check, E825); "
    "otherwise it is an importer bug: report it with the file. The file is not written.",
)
IMPORT_FIELD_DROPPED = _code(
    "W972",
    "import: a header field is not imported",
    "A header field describes how the foreign runtime connects or runs (Prompty's `model.connection`, "
    "an `apiType`, Dotprompt's `output.format: text`), not the request promptc builds, so it is left "
    "out of the `.prompt` source. Nothing sent changes; the warning says what was left out. Also: a "
    "Prompty `object` kind the template loops over (the input is a list), and a sample `--check` "
    "cannot use (a `sample: ${file:…}` that cannot be read, a value the template cannot read the way "
    "it does), for which it makes samples from the input types.",
)
IMPORT_UNREADABLE = _code(
    "E975",
    "import: a foreign file cannot be read",
    "A file of the imported folder could not be read: it is not a regular file (a named pipe, a "
    "socket or a device, which is never opened, so import and audit never wait on one), a dangling "
    "symlink, a symlink leading outside the imported folder (never read, as the build never compiles "
    "such a prompt, E802), a file the permissions do not let promptc read, or one deleted while "
    "import ran; or the folder itself cannot be listed. The file is refused; the others are imported. "
    "(A file over 8 MiB is E105, refused before a byte of it is read.)",
)
IMPORT_LINK_NOT_FOLLOWED = _code(
    "W976",
    "import: a linked folder is not walked",
    "A symlink in the imported folder leads to a folder outside it, or back to a folder the walk "
    "has already read (a loop). import and audit follow links only while they stay inside the "
    "folder, as the build does; the files beneath this one are not imported.",
)

IMPORT_UNSAFE_PATH = _code(
    "E973",
    "import: a path reads a name no promptc path may read",
    "A Handlebars or Jinja path names a key or attribute that starts with `_` (`{{a.__class__}}`, "
    "`{{this.__dict__}}`, `{{ x._secret }}`) or that reaches an object's internals (`{{ x.constructor }}`, "
    "`mro`, `gi_frame`, `f_globals` …): the names a `${}` path may not hold (E506), which both runtimes "
    "refuse to read. The file is not written. Rename the key, or pass the value as an input of its own.",
)
IMPORT_EXPANSION_LIMIT = _code(
    "E974",
    "import: partials would expand past the limit",
    "Handlebars partials that the import inlines (a `{{> name}}` inside a block, inside a line or inside "
    "another partial: promptc's `/// include:` takes whole lines) would make one file expand to more than "
    "16 MiB of text or 200,000 pieces, the bound the build puts on its own includes (E806). A partial "
    "printed twice by a partial printed twice doubles at every level: 40 levels are a trillion copies. The "
    "import counts the expansion before making it, each partial once, and refuses the file at the "
    "`{{> name}}` that would pass the bound. The file is not written.",
)


def markdown(examples: dict[str, str]) -> str:
    """docs/diagnostics.md: every code, what it means, and real output (promptc/data/diagnostics, which `promptc explain` prints too)."""
    lines = [
        "# Diagnostics",
        "",
        "Every diagnostic promptc prints has a stable code. `E` codes are errors (exit status 1, nothing",
        "is written); `W` codes are warnings (`--strict` makes them errors). The hundreds digit tells the",
        "stage: 1 reading files, 2 syntax, 3 directives, 4 roles, 5 inputs, 6 template blocks, 7 sections",
        "and caching, 8 includes, 9 configuration, the output folder and `diff`'s old tree (93x: the",
        "formatter, `promptc fmt`; 94x: `diff`'s old tree and traffic file; 96x-97x: `promptc import` and",
        "`promptc audit` of Dotprompt, Prompty and Jinja sources).",
        "",
        "Each diagnostic is printed as `path:line:col: severity[CODE]: message`, then the source line with",
        "a caret under the span, then a hint. `--format json`, `--format github` and `--format sarif` (a",
        "SARIF 2.1.0 log, for GitHub code scanning) carry the same fields. The examples below are real",
        "output, checked by `tests/test_diagnostic_codes.py`.",
        "",
        "This file is generated from `compiler/facts/codes.py`: run `python -m promptc.facts.codes > docs/diagnostics.md`.",
        "",
    ]
    for code in CODES.values():
        lines += [f"## {code.code}: {code.heading}", "", code.explain, ""]
        example = examples.get(code.code)
        if example:
            lines += ["```text", example.rstrip("\n"), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - documentation generator
    import sys
    from importlib import resources

    folder = resources.files("promptc.data").joinpath("diagnostics")
    found = {
        p.name.removesuffix(".txt"): p.read_text(encoding="utf-8") for p in folder.iterdir() if p.name.endswith(".txt")
    }
    sys.stdout.write(markdown(found))
