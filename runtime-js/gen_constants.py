"""Write the JavaScript runtime's constants from the compiler's own definitions.

    python runtime-js/gen_constants.py          # rewrite src/language.js, src/language.d.ts,
                                                # src/shape-params.js and src/printable.js
    python runtime-js/gen_constants.py --check  # exit 1 when a committed file differs

The facts live once, in Python: the language's (`promptc.facts.language`: the joiner between sections,
the request shapes, the roles a provider sends as its system prompt, what a placeholder holds
and what its path may not read (the attribute rule), the openers a backslash escapes, the build folder's file name and the schemas it writes) and the
providers' (`promptc/data/providers.json`: each shape's parameter names, provider, turn
requirements and body layout, and each provider's model-name prefixes), and the characters `repr`
writes as they are (`promptc.facts.printable`: one Unicode version's, whatever the engine's tables
are). `make build` runs this
script, and `tests/test_js_constants.py` fails until the committed files are regenerated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from promptc.facts import language, printable
from promptc.facts.profiles import data as profile_data

HERE = Path(__file__).resolve().parent
LANGUAGE_JS = HERE / "src" / "language.js"
LANGUAGE_DTS = HERE / "src" / "language.d.ts"
SHAPE_PARAMS_JS = HERE / "src" / "shape-params.js"
PRINTABLE_JS = HERE / "src" / "printable.js"

_HEADER = "// Generated from {source} by runtime-js/gen_constants.py: do not edit.\n"


def _js(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _regex(pattern: str) -> str:
    """A Python pattern matched whole (`fullmatch`, or `match` ending in `\\Z`) as a JavaScript
    regular expression literal: anchored at both ends. The patterns use only syntax the two
    engines read alike (classes, groups, quantifiers)."""
    body = pattern.removesuffix("\\Z")
    assert "\\Z" not in body and "/" not in body, pattern
    return f"/^{body}$/"


def language_js() -> str:
    """`src/language.js`: the facts of `promptc.facts.language` the runtime reads."""
    lines = [
        _HEADER.format(source="promptc.facts.language"),
        "// Between the sections of a block and between the blocks of a message.",
        f"export const JOINER = {_js(language.JOINER)};",
        "// The request shapes `Rendered.asShape` produces.",
        f"export const SHAPES = Object.freeze({_js(list(language.SHAPES))});",
        "// Roles whose messages go to Anthropic's `system` field (and open a Gemini request's system).",
        f"export const SYSTEM_ROLES = Object.freeze({_js(list(language.SYSTEM_ROLES))});",
        "// What a placeholder holds: a name or a dotted path (`${user.name}`).",
        f"export const PLACEHOLDER_PATH = {_regex(language.PLACEHOLDER_PATH.pattern)};",
        "// The attribute rule: no segment of a placeholder path starts with UNSAFE_PREFIX or is one of",
        "// UNSAFE_NAMES (names that reach an object's internals), whatever the value is.",
        f"export const UNSAFE_PREFIX = {_js(language.UNSAFE_PREFIX)};",
        f"export const UNSAFE_NAMES = Object.freeze({_js(sorted(language.UNSAFE_NAMES))});",
        "// The openers a backslash escapes in artifact template text.",
        f"export const TEMPLATE_ESCAPES = Object.freeze({_js(list(language.TEMPLATE_ESCAPES))});",
        "// The build folder's index of artifacts, and the schemas of what a build writes.",
        f"export const MANIFEST = {_js(language.MANIFEST)};",
        f"export const ARTIFACT_SCHEMA = {_js(language.ARTIFACT_SCHEMA)};",
        f"export const MANIFEST_SCHEMA = {_js(language.MANIFEST_SCHEMA)};",
    ]
    return "\n".join(lines) + "\n"


def language_dts() -> str:
    """`src/language.d.ts`: the same constants' types, as literal types."""
    shapes = " | ".join(_js(shape) for shape in language.SHAPES)
    roles = " | ".join(_js(role) for role in language.SYSTEM_ROLES)
    escapes = " | ".join(_js(opener) for opener in language.TEMPLATE_ESCAPES)
    lines = [
        _HEADER.format(source="promptc.facts.language"),
        f"export type Shape = {shapes};",
        f"export declare const JOINER: {_js(language.JOINER)};",
        "export declare const SHAPES: readonly Shape[];",
        f"export declare const SYSTEM_ROLES: readonly ({roles})[];",
        "export declare const PLACEHOLDER_PATH: RegExp;",
        f"export declare const UNSAFE_PREFIX: {_js(language.UNSAFE_PREFIX)};",
        "export declare const UNSAFE_NAMES: readonly string[];",
        f"export declare const TEMPLATE_ESCAPES: readonly ({escapes})[];",
        f"export declare const MANIFEST: {_js(language.MANIFEST)};",
        f"export declare const ARTIFACT_SCHEMA: {_js(language.ARTIFACT_SCHEMA)};",
        f"export declare const MANIFEST_SCHEMA: {_js(language.MANIFEST_SCHEMA)};",
    ]
    return "\n".join(lines) + "\n"


def shape_params_js() -> str:
    """`src/shape-params.js`, from providers.json: each shape's parameter names, its provider,
    what its API requires of the turns and how the pinned Python SDK writes its body, and each
    provider's model-name prefixes."""
    data = profile_data()
    table = {shape: entry["params"] for shape, entry in data["shapes"].items()}
    assert set(table) | {"plain"} == set(language.SHAPES)
    info = {
        shape: {"provider": entry["provider"], "requires": entry["requires"]["needs"], "body": entry["body"]}
        for shape, entry in data["shapes"].items()
    }
    prefixes = {name: entry["model_prefixes"] for name, entry in data["providers"].items()}
    patterns = {
        name: _regex(entry["model_pattern"]["value"] + "\\Z")
        for name, entry in data["providers"].items()
        if entry.get("model_pattern")
    }
    facts = {name: _model_facts(entry) for name, entry in data["providers"].items()}
    return (
        _HEADER.format(source="promptc/data/providers.json")
        + "// promptc's parameter names → the names each shape's SDK call takes.\n"
        f"export const SHAPE_PARAMS = Object.freeze({_dump(table)});\n"
        "// Per shape: the provider it goes to, what its API requires of the turns, how the pinned\n"
        "// Python SDK writes the body (key order, json.dumps options; Gemini's REST layout; the keys\n"
        "// the SDK moves into the URL and the ones it adds).\n"
        f"export const SHAPE_INFO = Object.freeze({_dump(info)});\n"
        "// The model-name prefixes of each provider (`claude-` → anthropic).\n"
        f"export const MODEL_PREFIXES = Object.freeze({_dump(prefixes)});\n"
        "// The form of a provider's model ids, matched whole before the prefixes\n"
        "// (`claude-sonnet-4-5@20250929` → anthropic-vertex).\n"
        "export const MODEL_PATTERNS = Object.freeze({"
        + ", ".join(f"{_js(name)}: {pattern}" for name, pattern in patterns.items())
        + "});\n"
        "// Per provider, the per-model facts the shapes read for the model a request goes to (the\n"
        "// longest model-name prefix in `by_model` wins, else `value`), the platform whose models it\n"
        "// serves under the same names, and the cross-Region prefixes dropped before a lookup.\n"
        f"export const PROVIDER_FACTS = Object.freeze({_dump(facts)});\n"
    )


def printable_js() -> str:
    """`src/printable.js`: the characters from U+0080 up that `repr` escapes, as one character class
    (`promptc.facts.printable`'s table, not the engine's `\\p{C}`, whose Unicode version is Node's)."""
    runs = zip(printable.NON_PRINTABLE[::2], printable.NON_PRINTABLE[1::2], strict=True)
    ranges = [f"\\u{{{start:x}}}" + (f"-\\u{{{end - 1:x}}}" if end - 1 > start else "") for start, end in runs]
    rows = ["".join(ranges[i : i + 12]) for i in range(0, len(ranges), 12)]
    return (
        _HEADER.format(source="promptc.facts.printable")
        + "// The Unicode version whose printable characters `repr` writes as they are.\n"
        f"export const UNICODE_VERSION = {_js(printable.UNICODE_VERSION)};\n"
        "// One character from U+0080 up that is not printable in that version (`str.isprintable`).\n"
        "export const NON_PRINTABLE = new RegExp(\n"
        '  "^[" +\n' + "".join(f"    {_js(row)} +\n" for row in rows) + '    "]$",\n'
        '  "u",\n'
        ");\n"
    )


#: the per-model facts of a provider the shapes need at render time
_SHAPE_FACTS = ("cache_ttls", "explicit_breakpoints", "cache_retention")


def _model_facts(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "same_as": (entry.get("same_as") or {}).get("value"),
        "inference_profiles": (entry.get("inference_profiles") or {}).get("value") or [],
    }
    for key in _SHAPE_FACTS:
        fact = entry.get(key) or {}
        out[key] = {"value": fact.get("value"), "by_model": fact.get("by_model") or {}}
    return out


def generated() -> dict[Path, str]:
    """Every file this script writes, and its text."""
    return {
        LANGUAGE_JS: language_js(),
        LANGUAGE_DTS: language_dts(),
        SHAPE_PARAMS_JS: shape_params_js(),
        PRINTABLE_JS: printable_js(),
    }


def main(argv: list[str]) -> int:
    stale = []
    for path, text in generated().items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if "--check" in argv:
            stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path.relative_to(HERE.parent)} is stale: run `python runtime-js/gen_constants.py`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
