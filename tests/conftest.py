import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The paper reproductions (ROOT/experiments) are a top-level folder of the checkout, not part of
# the installed package; the tests that run them import it from here.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
SHARED_DATA = Path(os.environ.get("DPSKETCH_DATA", ROOT.parent / "shared" / "data"))


def shared_file(name: str) -> Path:
    """Path of a real data set in ../shared/data, or skip the test cleanly when it is absent."""
    p = SHARED_DATA / name
    if not p.exists():
        pytest.skip(f"{name} not found in {SHARED_DATA} (the real data sets are optional)")
    return p


SPARK_PARTS = 4  # shuffle partitions and default parallelism of the test session


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession per test process (small shuffle partitions, UI off); skips without Java."""
    import shutil
    import sys

    pytest.importorskip("pyspark", reason="pip install '.[spark]' (or the test extra) to run")
    from pyspark.sql import SparkSession

    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("no Java runtime (install openjdk-17-jre-headless; .ci/run does)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    s = (SparkSession.builder.master("local[2,2]")  # 2 threads; a failed task is retried once
         .appName("dpsketch-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", str(SPARK_PARTS))
         .config("spark.default.parallelism", str(SPARK_PARTS))
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
         .config("spark.driver.memory", "1g")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


def check_unit_utility(released, users, keys, *, popular_users: int = 150, recall: float = 0.95) -> None:
    """A user-level release of an event log: recall >= ``recall`` of the keys with at least
    ``popular_users`` distinct users, and no key of a single user."""
    from dpsketch.datasets import distinct_units_per_key

    by = distinct_units_per_key(keys, users)
    got = set(released)
    popular = {x for x, u in by.items() if u >= popular_users}
    assert popular and len(got & popular) / len(popular) >= recall
    assert not any(by[x] == 1 for x in got)


def run_cli(capsys, *argv):
    """``dpsketch`` in-process: (exit code, stdout, stderr)."""
    from dpsketch.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err):
    """The one ``dpsketch: error: ...`` line of a refused run (warnings aside), with no traceback."""
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("dpsketch: warning:")]
    assert len(lines) == 1 and lines[0].startswith("dpsketch: error: "), err
    assert "Traceback" not in err
    return lines[0]


def write_event_log(folder: Path, users, keys) -> Path:
    """An event log as events.csv (text cells, an extra ts column) and events.parquet (int64)."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(folder / "events.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["ts", "query", "user_id"])
        w.writerows(zip(range(len(keys)), keys.tolist(), users.tolist()))
    pq.write_table(pa.table({"query": keys, "user_id": users}), folder / "events.parquet", row_group_size=50_000)
    return folder


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that asks for the ``spark`` fixture is a Spark test: it carries the ``spark`` marker
    whether or not its module says so, so the README's test command never starts a JVM."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
