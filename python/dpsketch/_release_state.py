"""The one-way derivation of independent hash and noise seeds from a user seed (docs/privacy.md
§Seeds), and the hand-over of an object's release state to its native structure.

The release state (docs/format.md, header flags and release-state trailer; docs/privacy.md
§Publishing and the release-once rule) is parsed, validated and written by the C++ core: every
native class has ``set_release_state(count, published, seeded)`` and reads back ``release_count``,
``published`` and ``seeded`` from its bytes. Python never edits serialized bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any


def stamp(impl: Any, count: int, published: bool, seeded: bool) -> Any:
    """Give the native object the release state its next ``to_bytes()`` writes; returns it."""
    impl.set_release_state(count, published, seeded)
    return impl


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
