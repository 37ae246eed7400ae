"""The one seed rule (docs/privacy.md §Seeds).

Every ``seed=`` a caller passes, to a constructor, a ``release()``, a Spark route or the CLI, is a
*user seed*. Nothing uses it directly: each random stream an object or call draws is seeded by
``derive_seed(seed, label)``, a one-way function of the user seed and the stream's purpose:

=================  ==========================================================================
label              stream
=================  ==========================================================================
``hash``           the public hash functions of a sketch (published with it; needed to merge)
``noise``          the noise of a release, or of a private sketch at construction
``length``         the noisy stream length of a release whose sketch noise came earlier
``salt``           fingerprint and contribution-bounding salts
``partition/<p>``  the noise of distributed part ``p``
=================  ==========================================================================

So one seed reproduces everything, and publishing one derived value (the hash seed is in every
sketch's bytes) reveals nothing usable about another (inverting SHA-256 is infeasible). Without a
seed every stream is keyed from the operating system. A seeded result is reproducible and NOT
secret, and says so (``reproducible_not_secret=True``).
"""

from __future__ import annotations

import hashlib
import secrets

from . import _core
from ._validation import check, check_int
from .errors import ParameterError

__all__ = ["check_user_seed", "derive_seed", "hash_seed", "rng"]


def check_user_seed(seed) -> int | None:
    """None, or the seed as an integer in [0, 2**64)."""
    return None if seed is None else check("seed", seed)


def derive_seed(seed: int, label: str) -> int:
    """The 64-bit seed of stream ``label``: the first 8 bytes (little-endian) of
    SHA-256("dpsketch/seed/v1/" + label + NUL + seed as u64 little-endian)."""
    msg = b"dpsketch/seed/v1/" + label.encode("ascii") + b"\x00" + int(seed).to_bytes(8, "little")
    return int.from_bytes(hashlib.sha256(msg).digest()[:8], "little")


def hash_seed(seed, given=None) -> int:
    """The public hash seed: ``given`` (a hash seed read from a published sketch), else derived
    from the user seed, else random."""
    if given is not None:
        if seed is not None:
            raise ParameterError("pass seed= (a user seed) or hash_seed= (a published hash seed), not both")
        return check("hash_seed", given)
    s = check_user_seed(seed)
    return secrets.randbits(64) if s is None else derive_seed(s, "hash")


def rng(seed, label: str = "noise"):
    """``(generator, seeded)``: ChaCha20 keyed from the operating system, or from
    ``derive_seed(seed, label)`` (reproducible, NOT secret)."""
    s = check_user_seed(seed)
    if s is None:
        return _core.noise.SecureRng(), False
    return _core.noise.SecureRng(derive_seed(s, label)), True
