"""Token counting: each distinct text is encoded once per process, however many prompts repeat it."""

from __future__ import annotations

from promptc.backend import meter as meter_module
from promptc.backend.meter import Meter


def words() -> Meter:
    return Meter("words", lambda: str.split)


def test_a_repeated_text_is_encoded_once_even_after_thousands_of_others() -> None:
    m = words()
    for i in range(5000):  # more distinct texts than a fixed-size memo would hold
        m.tokens(f"prompt {i} own text")
    shared = "a shared partial that many prompts include"
    assert [m.tokens(shared) for _ in range(10)] == [7] * 10
    assert m.encoded == 5001


def test_the_memo_forgets_the_least_recently_used_texts_within_its_budget(monkeypatch) -> None:
    monkeypatch.setattr(meter_module, "MEMO_CHARS", 1000)
    m = words()
    shared = "shared text " * 10  # 120 characters, used between every other text
    for i in range(200):
        m.tokens(f"text number {i:04}")
        m.tokens(shared)
    assert m.encoded == 201  # the shared text stayed; every other text was new
    assert m._chars <= 1000
    m.tokens("text number 0000")  # long forgotten: encoded again
    assert m.encoded == 202


def test_preloaded_counts_are_used_without_loading_the_encoder() -> None:
    def refuse():
        raise AssertionError("the encoder must not load")

    m = Meter("x", refuse)
    m.preload({"known text": 3, "": 0})
    assert m.tokens("known text") == 3 and m.tokens("") == 0 and m.encoded == 0
