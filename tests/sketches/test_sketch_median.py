"""CountSketch estimates equal an independent median (docs/algorithms.md §4): the signed values
g_i(x)·C[i, h_i(x)] are read back through cells() -- h_i(x) and g_i(x) come from a fresh sketch with
the same seed fed x once -- and their median (mean of the two middle values for even d) is
computed with numpy. Covers the depths of every selection path in sketches/median.hpp and
linear_sketch.hpp (quickselect for d <= 8 and d > 64, sorting networks in between)."""

import numpy as np
import pytest

from dpsketch import CountSketch


def _rows_and_signs(width, depth, seed, x):
    probe = CountSketch(width, depth, seed=seed)
    probe.update(x)
    cells = probe.cells()
    cols = np.argmax(np.abs(cells), axis=1)
    signs = cells[np.arange(depth), cols]
    assert set(np.unique(signs)) <= {-1, 1}
    return cols, signs


@pytest.mark.parametrize("depth", [1, 2, 5, 8, 9, 12, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 70])
def test_estimate_is_the_median_of_signed_cells(depth, rng):
    width, seed = 7, 1000 + depth  # a narrow sketch: many collisions, many ties and sign mixes
    stream = rng.zipf(1.4, 3000) % 60
    s = CountSketch(width, depth, seed=seed)
    s.update_many(stream.astype(np.int64))
    cells = s.cells()
    for x in range(0, 60, 3):
        cols, signs = _rows_and_signs(width, depth, seed, x)
        want = float(np.median(signs * cells[np.arange(depth), cols]))
        assert s.estimate(x) == want, (depth, x)
