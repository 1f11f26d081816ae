"""The llmutils-style helpers, against the seed's own examples (seeds/000)."""

from __future__ import annotations

from promptc import extract_params, process, strip_comments, strip_comments_from_messages

SEED_PROCESS = """
/// This is a full-line comment - will be removed
/// param: model=gpt-4, temperature=0.7
/// flow: checkout-process
/// node: payment-validation
You are a helpful assistant /// inline comment
Visit http://example.com for more /// URL preserved
"""


def test_process_seed_example() -> None:
    result = process(SEED_PROCESS)
    assert result.cleaned_prompt == "You are a helpful assistant\nVisit http://example.com for more"
    assert result.params == {"model": "gpt-4", "temperature": 0.7}
    assert result.flow == "checkout-process"
    assert result.node == "payment-validation"
    assert result.diagnostics == []


def test_tags_metadata_and_escapes() -> None:
    result = process("/// tag: a, b\n/// tag: b, c\n/// owner: me\nKeep \\/// this and file:///x\n")
    assert result.tags == ["a", "b", "c"]
    assert result.metadata == {"owner": "me"}
    assert result.cleaned_prompt == "Keep /// this and file:///x"


def test_strip_comments_keeps_blank_lines_the_author_wrote() -> None:
    assert strip_comments("a /// x\n\n/// gone\nb\r\n") == "a\n\nb"


def test_extract_params_typed() -> None:
    assert extract_params('/// param: temperature=0.7, max_tokens=1000, stop="a, b", json=true\n') == {
        "temperature": 0.7,
        "max_tokens": 1000,
        "stop": "a, b",
        "json": True,
    }


def test_strip_comments_from_messages_seed_example() -> None:
    messages = [
        {"role": "system", "content": "You are helpful /// be nice"},
        {"role": "user", "content": "/// Debug note\nTell me a joke"},
        {"role": "user", "content": [{"type": "image"}]},
        "not a message",
    ]
    cleaned = strip_comments_from_messages(messages)
    assert cleaned[:2] == [
        {"role": "system", "content": "You are helpful"},
        {"role": "user", "content": "Tell me a joke"},
    ]
    assert cleaned[2:] == messages[2:]
    assert messages[0]["content"] == "You are helpful /// be nice"  # the input is not mutated
