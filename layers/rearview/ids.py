"""Time-ordered memory ids (ULID: 48-bit millisecond timestamp + 80 random bits, Crockford base32)."""

from __future__ import annotations

import os
from datetime import datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid(at: datetime) -> str:
    """A ULID whose time part is `at`, so ids sort by creation time."""
    millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))
