"""Turn raw bytes into normalised source text (docs/language.md, "Text"): UTF-8 only, BOM dropped, CRLF/CR → LF.

Every rejection is a located diagnostic, never an exception.
"""

from __future__ import annotations

from ..facts import codes
from ..facts.codes import Code
from ..facts.diagnostics import Diagnostic, SourceText, Span, file_span, make

#: Largest source file promptc reads (bytes). Bigger files get E105 before any parsing, which keeps
#: time and memory bounded whatever lands in the source folder.
MAX_SOURCE_BYTES = 8 * 1024 * 1024

_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)


def _locate_byte(data: bytes, offset: int) -> tuple[int, int]:
    """Line and column (1-based, in code points) of a byte offset, tolerating bad bytes before it."""
    before = data[:offset]
    line = before.count(b"\n") + 1
    line_start = before.rfind(b"\n") + 1
    col = len(before[line_start:].decode("utf-8", errors="replace")) + 1
    return line, col


def _byte_diag(path: str, data: bytes, offset: int, code: Code, message: str, hint: str) -> Diagnostic:
    line, col = _locate_byte(data, offset)
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    shown = data[line_start : line_end if line_end != -1 else len(data)][:400]
    shown_text = shown.decode("utf-8", errors="replace").replace("\x00", "\u2400")
    return make(code, message, Span(offset, offset + 1, line, col), hint, path=path, source_line=shown_text)


def decode(path: str, data: bytes) -> tuple[SourceText | None, list[Diagnostic]]:
    """Decode and normalise a source file. Returns (None, errors) when the file cannot be used."""
    if len(data) > MAX_SOURCE_BYTES:
        return None, [
            make(
                codes.FILE_TOO_LARGE,
                f"source file is {len(data):,} bytes; the limit is {MAX_SOURCE_BYTES:,}",
                file_span(),
                "split the prompt into smaller files and `/// include:` partials",
                path=path,
            )
        ]
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            return None, [
                _byte_diag(
                    path,
                    data,
                    0,
                    codes.WIDE_ENCODING,
                    f"file is {encoding} encoded; promptc reads UTF-8 only",
                    "save the file as UTF-8",
                )
            ]
    nul = data.find(b"\x00")
    if nul != -1:
        return None, [
            _byte_diag(
                path,
                data,
                nul,
                codes.BINARY_FILE,
                f"NUL byte at byte offset {nul}: this looks like a binary file",
                "prompt sources must be UTF-8 text; remove the file or the NUL byte",
            )
        ]
    warnings: list[Diagnostic] = []
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
        warnings.append(
            make(
                codes.BOM_DROPPED,
                "byte order mark dropped",
                file_span(),
                "save the file as UTF-8 without a BOM",
                path=path,
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        return None, [
            _byte_diag(
                path,
                data,
                exc.start,
                codes.INVALID_UTF8,
                f"invalid UTF-8 byte 0x{bad} at byte offset {exc.start}",
                "save the file as UTF-8",
            )
        ]
    cr = text.find("\r")
    if cr != -1:
        src_before = SourceText.of(path, text[: cr + 1])
        span = src_before.span(cr, cr + 1)
        line_text = src_before.line_text(span.line).rstrip("\r")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        warnings.append(
            make(
                codes.CRLF_NORMALISED,
                "CRLF or CR line endings normalised to LF",
                Span(span.start, span.end, span.line, span.col),
                "configure your editor or .gitattributes for LF line endings",
                path=path,
                source_line=line_text,
            )
        )
    return SourceText.of(path, text), warnings


def vanished(display: str, exc: OSError) -> Diagnostic:
    """E106 for a source that was listed but could not be read when a compile needed it."""
    return make(
        codes.UNREADABLE,
        f"cannot read file: {exc.strerror or exc} (it vanished or changed while the build ran)",
        file_span(),
        "restore the file, or build again",
        path=display,
    )
