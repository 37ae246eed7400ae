"""Every audit pair, registered in a fixed order: the pairs of ``_pairs`` (counters, sketches,
dyadic sketches, distributed releases), then the person as the privacy unit (docs/privacy.md
§Privacy unit), releases over time (§Windows, §Cumulative) and in-memory quantiles. Each module
adds its pairs to ``_pairs.PAIRS`` when it is imported."""

from . import _pairs
from . import _unit_pairs  # noqa: F401
from . import _weighted_pairs  # noqa: F401
from . import _window_pairs  # noqa: F401
from . import _cumulative_pairs  # noqa: F401
from . import _correlated_pairs  # noqa: F401
from . import _quantile_pairs  # noqa: F401
from . import _composed_pairs  # noqa: F401

PAIRS = _pairs.PAIRS
