"""dpsketch.spark as users run it: local[2], a standalone cluster (master + two one-core workers)
and Spark Connect over local[2], all on 127.0.0.1 (tests/spark_cluster.py starts and stops them).

Every public dpsketch.spark function runs the same seeded workload (spark_cluster.run_suite) on the
three, each in its own Python process; the releases must be equal item for item. One cluster and
one Connect server serve the whole test session; their logs are printed when a run fails."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pip install '.[spark]' (or the test extra) to run")

import spark_cluster as sc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SUITE_TIMEOUT = 420  # seconds for one configuration's run of the workload

CASES = ["counters.default_partitions", "summarize.countsketch", "summarize.countmin", "summarize.dyadic",
         "summarize.task_error", "heavy_hitters.counters.spacesaving",
         "heavy_hitters.counters.misragries.num_partitions=3", "heavy_hitters.sketch.int",
         "heavy_hitters.sketch.str", "heavy_hitters.exact.int", "heavy_hitters.exact.str.laplace",
         "heavy_hitters.privacy_id", "quantiles.int", "quantiles.int.sketch",
         "quantiles.bounds", "quantiles.privacy_id"]

def _need_java():
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("no Java runtime (install openjdk-17-jre-headless; .ci/run does)")


@pytest.fixture(scope="session")
def cluster_logs(tmp_path_factory):
    return tmp_path_factory.mktemp("spark-cluster")


class SuiteRun:
    """run_suite in its own Python process against one Spark (started at once, waited for later)."""

    def __init__(self, name: str, where: list[str], log_dir: Path, services=()):
        self.name, self.services = name, list(services)
        self.out = log_dir / f"suite-{name}.json"
        self.err = log_dir / f"suite-{name}.log"
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, str(Path(sc.__file__)), *where, "--out", str(self.out)],
                                         stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def result(self) -> dict:
        try:
            rc = self.proc.wait(timeout=SUITE_TIMEOUT)
        except subprocess.TimeoutExpired:
            sc.Service.stop(self)  # same group handling as the services
            rc = "timeout"
        if rc != 0:
            tail = "\n".join(self.err.read_text(errors="replace").splitlines()[-60:])
            pytest.fail(f"the workload on {self.name} failed ({rc}):\n{tail}\n{sc.logs_of(self.services)}")
        return json.loads(self.out.read_text())

    # what Service.stop needs
    @property
    def pgid(self):
        return self.proc.pid


@pytest.fixture(scope="session")
def local_run(cluster_logs):
    """The local[2] run, started first so it overlaps the cluster's and the server's start-up."""
    _need_java()
    run = SuiteRun("local[2]", ["--master", "local[2]"], cluster_logs)
    yield run
    sc.Service.stop(run)


@pytest.fixture(scope="session")
def standalone_master(cluster_logs):
    """(spark://127.0.0.1:PORT, services): a master and two one-core workers, ready."""
    _need_java()
    with sc.standalone_cluster(cluster_logs / "standalone") as started:
        yield started


@pytest.fixture(scope="session")
def connect_url(cluster_logs):
    """(sc://127.0.0.1:PORT, services): a Spark Connect server over local[2], ready."""
    _need_java()
    if sc.connect_server_jar() is None:
        pytest.fail("the installed pyspark ships no spark-connect jar (pyspark >= 4 does)")
    with sc.connect_server(cluster_logs / "connect") as started:
        yield started


@pytest.fixture(scope="session")
def results(local_run, standalone_master, connect_url, cluster_logs):
    """The workload's results per configuration: the cluster and Connect runs start together once
    both services are up; the local run has been going since before."""
    (master, cluster_services), (remote, connect_services) = standalone_master, connect_url
    runs = [SuiteRun("standalone", ["--master", master], cluster_logs, cluster_services),
            SuiteRun("connect", ["--remote", remote], cluster_logs, connect_services)]
    try:
        out = {"local": local_run.result()}
        out.update((r.name, r.result()) for r in runs)
    finally:
        for r in runs:
            sc.Service.stop(r)
    print("workload seconds:", {k: v["_seconds"] for k, v in out.items()})
    return out


# -- the three Sparks agree -----------------------------------------------------------------------

@pytest.mark.parametrize("where", ["standalone", "connect"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.spark
@pytest.mark.spark_cluster
def test_same_results_as_local(results, where, case):
    assert case in results["local"], f"run_suite produced no {case!r}"
    assert results[where][case] == results["local"][case], f"{case}: {where} differs from local[2]"


@pytest.mark.spark
@pytest.mark.spark_cluster
def test_workload_ran_where_asked_and_released_something(results):
    assert set(CASES) == {k for k in results["local"] if not k.startswith("_")}
    assert [results[w]["_connect"] for w in ("local", "standalone", "connect")] == [False, False, True]
    local = results["local"]
    assert local["counters.default_partitions"] == 2  # min(4 shuffle partitions, default parallelism 2)
    assert local["summarize.task_error"] == "ParameterError"
    for case in ("heavy_hitters.counters.spacesaving", "heavy_hitters.counters.misragries.num_partitions=3",
                 "heavy_hitters.sketch.int", "heavy_hitters.sketch.str", "heavy_hitters.exact.int",
                 "heavy_hitters.exact.str.laplace", "heavy_hitters.privacy_id"):
        assert local[case], f"{case} released nothing"
    assert local["heavy_hitters.counters.spacesaving"][0][0] == -49  # the Zipf head (key 1 - 50)
    assert local["heavy_hitters.sketch.str"][0][0] == "w1"
    assert local["heavy_hitters.exact.int"][0][0] == -49 and local["heavy_hitters.exact.str.laplace"][0][0] == "w1"
    assert local["quantiles.bounds"] == sorted(local["quantiles.bounds"])
    assert 35 < local["quantiles.bounds"][1] < 65  # median of N(50, 15²)


@pytest.mark.spark
@pytest.mark.spark_cluster
def test_services_listen_on_loopback_only(standalone_master, connect_url):
    services = standalone_master[1] + connect_url[1]
    addrs = sc.listening_addresses(services)
    assert addrs, "found no listening socket of the started JVMs (is /proc readable?)"
    assert addrs == {sc.HOST}, f"listening on {sorted(addrs)}; logs in {[str(s.log) for s in services]}"


# -- Connect has no SparkContext: the Spark modules must not need one ------------------------------

FORBIDDEN = {"rdd", "sparkContext", "_jvm", "_jsc", "_jdf", "_jsparkSession", "_jconf", "SparkContext",
             "getNumPartitions", "mapPartitions", "defaultParallelism"}


def classic_only_uses(source: str) -> list[str]:
    """Names in ``source`` that exist only on classic (non-Connect) Spark: RDDs, the SparkContext
    and the Py4J gateway, as attributes, names or imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.alias):
            name = node.name.rsplit(".", 1)[-1]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[:2] == ["pyspark", "rdd"]:
                name = "pyspark.rdd"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FORBIDDEN:
            name = node.value  # getattr(df, "rdd")
        if name in FORBIDDEN or name == "pyspark.rdd":
            found.append(f"line {node.lineno}: {name}")
    return found


@pytest.mark.parametrize("module", ["spark.py", "distributed.py"])
def test_spark_modules_use_only_the_dataframe_api(module):
    src = (ROOT / "python" / "dpsketch" / module).read_text()
    assert classic_only_uses(src) == []


def test_classic_only_scan_catches_rdd_and_gateway_uses():
    assert classic_only_uses("n = df.rdd.getNumPartitions()")
    assert classic_only_uses("spark.sparkContext.setLogLevel('ERROR')")
    assert classic_only_uses("jvm = spark._jvm")
    assert classic_only_uses("x = getattr(df, '_jdf')")
    assert classic_only_uses("from pyspark import SparkContext")
    assert classic_only_uses("from pyspark.rdd import RDD")
    assert classic_only_uses("df.select('x').mapInArrow(f, 's long').collect()") == []


@pytest.mark.spark
def test_connect_client_and_server_are_installed():
    """What `SparkSession.builder.remote` imports (the test and spark extras) and the server class's jar."""
    for mod in ("grpc", "grpc_status", "google.rpc", "zstandard", "pandas", "pyarrow"):
        __import__(mod)
    assert sc.connect_server_jar() is not None
