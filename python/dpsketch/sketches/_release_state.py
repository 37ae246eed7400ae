"""The hand-over of an object's release state to its native structure.

The release state (docs/format.md, header flags and release-state trailer; docs/privacy.md
§Publishing and the release-once rule) is parsed, validated and written by the C++ core: every
native class has ``set_release_state(count, published, seeded)`` and reads back ``release_count``,
``published`` and ``seeded`` from its bytes. Python never edits serialized bytes.
"""

from __future__ import annotations

from typing import Any


def stamp(impl: Any, count: int, published: bool, seeded: bool) -> Any:
    """Give the native object the release state its next ``to_bytes()`` writes; returns it."""
    impl.set_release_state(count, published, seeded)
    return impl
