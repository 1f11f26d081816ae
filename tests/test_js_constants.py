"""The JavaScript runtime's constants are generated from the compiler's (`runtime-js/gen_constants.py`,
run by `make build`): the committed files are what the script writes, and no other file of the
runtime spells one of those facts itself."""

from __future__ import annotations

import re

from promptc.facts import language

from .js_vectors import ROOT, constants

RUNTIME = ROOT / "runtime-js"


def test_the_generated_constants_are_current() -> None:
    for path, text in constants.generated().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run `python runtime-js/gen_constants.py` (make build does)"
        )
    assert constants.main(["--check"]) == 0


def test_the_generated_placeholder_pattern_reads_as_pythons() -> None:
    """The JavaScript literal is the Python pattern, anchored: what one accepts the other does."""
    js = constants.language_js()
    literal = re.search(r"PLACEHOLDER_PATH = /\^(.*)\$/;", js)
    assert literal is not None
    pattern = re.compile(literal.group(1))
    for text in ("a", "user.name", "_x.y_2", "a.", ".a", "1a", "a-b", "a..b", "ä", ""):
        assert bool(pattern.fullmatch(text)) == bool(language.PLACEHOLDER_PATH.match(text)), text


def test_no_runtime_file_spells_a_generated_fact() -> None:
    """A schema name, the manifest's file name, the shapes or the placeholder pattern written by
    hand in a runtime source would drift from the compiler's."""
    facts = [
        language.ARTIFACT_SCHEMA,
        language.MANIFEST_SCHEMA,
        f'"{language.MANIFEST}"',
        ", ".join(f'"{shape}"' for shape in language.SHAPES),
        language.IDENTIFIER_PATTERN,
    ]
    generated = set(constants.generated())
    sources = [*RUNTIME.glob("*.js"), *RUNTIME.glob("*.d.ts"), *(RUNTIME / "src").glob("*.js")]
    for path in sources:
        if path in generated:
            continue
        text = path.read_text(encoding="utf-8")
        for fact in facts:
            assert fact not in text, f"{path.relative_to(ROOT)} spells {fact!r}: import it from src/language.js"
