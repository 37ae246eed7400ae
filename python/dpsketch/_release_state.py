"""Release state that travels with every copy, pickle and serialized form (docs/format.md,
docs/privacy.md §Publishing and the release-once rule), and the one-way derivation of independent
hash and noise seeds from a user seed (docs/privacy.md §Seeds).

Header byte 7 is a flags byte. Bit 0 belongs to the native layer (merged counter summary) and is
passed through untouched; bits 1-3 are handled here and cleared before the native reader sees
the bytes; bits 4-7 are unknown and rejected.
"""

from __future__ import annotations

import hashlib
import struct

FLAG_NATIVE = 0x01  # merged counter summary: read by the native layer
FLAG_RELEASE_STATE = 0x02  # a release-state trailer follows the payload
FLAG_PUBLISHED = 0x04  # a published (released) private sketch: read-only forever
FLAG_SEEDED = 0x08  # noise drawn from a user seed: reproducible, NOT secret
_KNOWN = FLAG_NATIVE | FLAG_RELEASE_STATE | FLAG_PUBLISHED | FLAG_SEEDED
_MINE = FLAG_RELEASE_STATE | FLAG_PUBLISHED | FLAG_SEEDED

# Trailer (present iff FLAG_RELEASE_STATE): release count u64 LE, then extension version u8.
_TRAILER = struct.Struct("<QB")
_TRAILER_VERSION = 1
_FLAGS_BYTE = 7


class ReleaseState:
    """What travels: how many times the object was released, whether it is a published read-only
    copy, and whether its noise came from a user seed."""

    __slots__ = ("count", "published", "seeded")

    def __init__(self, count: int = 0, published: bool = False, seeded: bool = False):
        self.count, self.published, self.seeded = count, published, seeded


def attach(data: bytes, state: ReleaseState) -> bytes:
    """Set flag bits 1-3 in header byte 7 of native bytes and append the trailer if needed."""
    flags = data[_FLAGS_BYTE] & ~_MINE
    tail = b""
    if state.count:
        flags |= FLAG_RELEASE_STATE
        tail = _TRAILER.pack(state.count, _TRAILER_VERSION)
    if state.published:
        flags |= FLAG_PUBLISHED
    if state.seeded:
        flags |= FLAG_SEEDED
    if flags == data[_FLAGS_BYTE] and not tail:
        return data
    return data[:_FLAGS_BYTE] + bytes([flags]) + data[_FLAGS_BYTE + 1 :] + tail


def detach(data: bytes, *, can_publish: bool) -> tuple[bytes, ReleaseState]:
    """Split serialized bytes into (native bytes with bits 1-3 cleared, ReleaseState)."""
    flags = data[_FLAGS_BYTE]
    if flags & ~_KNOWN:
        raise ValueError(
            f"corrupt or incompatible dpsketch bytes: unknown header flags 0x{flags & ~_KNOWN:02x} "
            "(written by a newer dpsketch? upgrade to read them)"
        )
    state = ReleaseState(published=bool(flags & FLAG_PUBLISHED), seeded=bool(flags & FLAG_SEEDED))
    if state.published and not can_publish:
        raise ValueError("corrupt or incompatible dpsketch bytes: only private sketches can be marked published")
    if flags & FLAG_RELEASE_STATE:
        if len(data) < 8 + _TRAILER.size:
            raise ValueError("corrupt or incompatible dpsketch bytes: truncated release-state trailer")
        count, version = _TRAILER.unpack(data[-_TRAILER.size :])
        if version != _TRAILER_VERSION:
            raise ValueError(
                f"corrupt or incompatible dpsketch bytes: release-state extension version {version} "
                f"(this build reads version {_TRAILER_VERSION})"
            )
        if count == 0:
            raise ValueError("corrupt or incompatible dpsketch bytes: a release-state trailer must count >= 1 release")
        state.count = count
        data = data[: -_TRAILER.size]
    elif state.published:
        raise ValueError("corrupt or incompatible dpsketch bytes: a published sketch must record its release index")
    if flags & _MINE:
        data = data[:_FLAGS_BYTE] + bytes([flags & ~_MINE]) + data[_FLAGS_BYTE + 1 :]
    return data, state


def derive_seed(seed: int, label: str) -> int:
    """A 64-bit seed for one purpose (``label``) derived one-way from the user's seed:
    the first 8 bytes of SHA-256("dpsketch/seed/v1/" + label + seed as u64 LE).

    Different labels give computationally independent streams, and publishing one derived seed
    (the hash seed is published with every sketch) reveals nothing usable about another (the noise
    seed): inverting SHA-256 on the published value is infeasible (docs/privacy.md §Seeds). The
    user's seed itself stays reproducible, NOT secret: anyone who knows it regenerates everything.
    """
    msg = b"dpsketch/seed/v1/" + label.encode("ascii") + b"\x00" + int(seed).to_bytes(8, "little")
    return int.from_bytes(hashlib.sha256(msg).digest()[:8], "little")
