import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("DPSKETCH_DATA", ROOT.parent / "shared" / "data"))


def shared_file(name: str) -> Path:
    """Path of a real data set in ../shared/data, or skip the test cleanly when it is absent."""
    p = SHARED_DATA / name
    if not p.exists():
        pytest.skip(f"{name} not found in {SHARED_DATA} (the real data sets are optional)")
    return p


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
