"""Decoding every part of a text that could carry a smuggled line (used by the leak tests).

A student who wants hidden test lines past a word-for-word filter encodes them: base64, hex, rot13, reversed
text, zlib+base64 (and zlib+hex).  :func:`decodings` yields the text itself and every such decoding of every
token of it that could be one, so a test looks for the plain lines in each view (encoding the lines instead
would miss them: an encoded substring depends on its offset and, for zlib, on everything before it).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import zlib
from collections.abc import Iterator

__all__ = ["decodings"]

_B64 = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")


def _bytes_views(raw: bytes) -> list[str]:
    """The bytes as text, and decompressed if they are zlib data."""
    try:
        return [raw.decode("utf-8", "replace"), zlib.decompress(raw).decode("utf-8", "replace")]
    except zlib.error:
        return [raw.decode("utf-8", "replace")]


def decodings(shown: str) -> Iterator[tuple[str, str]]:
    """``(encoding, decoded text)`` for the text itself and every way a part of it could be encoded."""
    yield "plain", shown
    yield "escaped", re.sub(r"\\+(.)", r"\1", shown)          # inside JSON or Python string literals
    yield "rot13", codecs.decode(shown, "rot13")
    yield "reversed", shown[::-1]
    for token in _B64.findall(shown):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(token + "=" * (-len(token) % 4))
            except (binascii.Error, ValueError):
                continue
            for view in _bytes_views(raw):
                yield "base64", view
    for token in _HEX.findall(shown):
        for view in _bytes_views(bytes.fromhex(token)):
            yield "hex", view
