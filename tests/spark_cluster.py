"""Spark as users run it, for the tests: a standalone cluster (a master and two one-core workers)
and a Spark Connect server over local[2], started from the installed pyspark, bound to 127.0.0.1
only (every bind address and port is set explicitly), stopped by process group.

Also the workload they are compared on: :func:`run_suite` calls every public ``dpsketch.spark``
function with fixed seeds and returns JSON-able results. Each Spark configuration runs the suite
in its own Python process (``python tests/spark_cluster.py --master URL | --remote URL``):
one process holds one classic SparkContext, and a Connect client switches pyspark's process-wide
mode (``SPARK_CONNECT_MODE_ENABLED``), so neither may share a process with another session.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
START_TIMEOUT = 120.0  # seconds for a master, its workers or a Connect server to come up
APP_CONF = {  # the same on every configuration, so seeded results can be compared exactly
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def connect_server_jar() -> Path | None:
    """The Spark Connect server jar shipped in the installed pyspark, or None."""
    jars = sorted((spark_home() / "jars").glob("spark-connect_*.jar"))
    return jars[0] if jars else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def jvm_env(log_dir: Path) -> dict:
    """Environment of every JVM we start: loopback only, logs and scratch under ``log_dir``, the
    executors' Python is this interpreter with this process's PYTHONPATH."""
    env = dict(os.environ)
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST,
               SPARK_LOG_DIR=str(log_dir), SPARK_WORKER_DIR=str(log_dir / "work"),
               SPARK_LOCAL_DIRS=str(log_dir / "scratch"), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    return env


class Service:
    """One started process in its own process group (it and the JVMs it spawns), its output in a
    log file; stop() ends the group: SIGTERM, then SIGKILL after a grace period."""

    def __init__(self, name: str, cmd: list[str], env: dict, log_dir: Path):
        self.name = name
        self.log = log_dir / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.pgid = self.proc.pid  # start_new_session: the child leads its own group

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, sig)
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            # the leader is gone; children of the group (executor JVMs) may still be running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, 0)
                time.sleep(0.5)
                continue
            return

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def logs_of(services, lines: int = 40) -> str:
    return "\n".join(f"--- {s.name} ({s.log}) ---\n{s.tail(lines)}" for s in services)


def _wait(check, services, what: str, timeout: float = START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = [s for s in services if not s.alive()]
        if dead:
            raise RuntimeError(f"{dead[0].name} exited while waiting for {what}\n{logs_of(services)}")
        with contextlib.suppress(OSError, ValueError):
            if check():
                return
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not ready after {timeout:.0f} s\n{logs_of(services)}")


@contextlib.contextmanager
def standalone_cluster(log_dir: Path, workers: int = 2):
    """A standalone master and ``workers`` one-core workers on 127.0.0.1; yields the master URL
    once every worker is registered (read from the master's JSON status page)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    env = jvm_env(log_dir)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    url = f"spark://{HOST}:{port}"
    services = [Service("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                                   "--port", str(port), "--webui-port", str(ui)], env, log_dir)]
    try:
        for i in range(workers):
            services.append(Service(f"worker{i}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", HOST,
                "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                "--memory", "1g", "--work-dir", str(log_dir / f"work{i}")], env, log_dir))

        def registered():
            with urllib.request.urlopen(f"http://{HOST}:{ui}/json/", timeout=2) as r:
                status = json.load(r)
            return sum(w.get("state") == "ALIVE" for w in status.get("workers", [])) >= workers

        _wait(registered, services, f"standalone master with {workers} workers")
        yield url, services
    finally:
        for s in reversed(services):
            s.stop()


@contextlib.contextmanager
def connect_server(log_dir: Path, master: str = "local[2]"):
    """A Spark Connect server (SparkConnectServer from the installed pyspark's jars) over
    ``master``, gRPC bound to 127.0.0.1; yields the sc:// URL once its port accepts connections."""
    log_dir.mkdir(parents=True, exist_ok=True)
    env = jvm_env(log_dir)
    port = free_port()
    conf = {"spark.connect.grpc.binding.address": HOST, "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": HOST, "spark.driver.bindAddress": HOST, "spark.driver.memory": "1g",
            **APP_CONF}
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--name", "dpsketch-connect-tests",
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    server = Service("connect-server", cmd, env, log_dir)
    try:
        def listening():
            with socket.create_connection((HOST, port), timeout=2):
                return "Spark Connect server started" in server.log.read_text(errors="replace")

        _wait(listening, [server], "Spark Connect server")
        yield f"sc://{HOST}:{port}", [server]
    finally:
        server.stop()


def _group_pids(pgids) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (d / "stat").read_text()
                if int(stat[stat.rindex(")") + 2:].split()[2]) in pgids:  # field 5: process group
                    pids.append(int(d.name))
    return pids


def listening_addresses(services) -> set[str]:
    """The local addresses of every TCP socket in LISTEN state held by a process of the services'
    groups (the JVMs we started and the executors they spawned), read from /proc (Linux)."""
    inodes = set()
    for pid in _group_pids({s.pgid for s in services}):
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
    addrs = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                f = line.split()
                if f[3] == "0A" and f[9] in inodes:  # 0A: LISTEN
                    addrs.add(_decode_addr(f[1].split(":")[0]))
    return addrs


def _decode_addr(hexaddr: str) -> str:
    import ipaddress

    raw = bytes.fromhex(hexaddr)
    # /proc prints the address as 32-bit words in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)  # a JVM socket bound to 127.0.0.1 shows up in tcp6 as ::ffff:127.0.0.1
    return str(ip)


# -- the workload -----------------------------------------------------------------------------------

def _items(rel) -> list:
    return [[k if isinstance(k, str) else int(k), float(v)] for k, v in rel.items]


def _digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class _Timed(dict):
    """A dict that records the seconds since the previous entry under '_t' (reported, not compared)."""

    def __init__(self):
        super().__init__(_t={})
        self._last = time.perf_counter()

    def __setitem__(self, key, value):
        now = time.perf_counter()
        self["_t"][key] = round(now - self._last, 2)
        self._last = now
        super().__setitem__(key, value)


def run_suite(spark) -> dict:
    """Every public dpsketch.spark function on fixed data and seeds; the results as JSON values.
    The releases are seeded, so equal inputs give equal outputs on any Spark that computes the
    same partitions (the counters route's count is set by APP_CONF or num_partitions=)."""
    import numpy as np
    import pandas as pd

    import dpsketch as dp
    from dpsketch import spark as dps
    from dpsketch.sketches.dyadic import DyadicCountSketch

    r = np.random.default_rng(20261202)  # small data: the point is the plumbing, not the scale
    ints = (r.zipf(1.3, size=20000) % 3000).astype(np.int64) - 50  # some negative keys
    words = [f"w{i}" for i in r.zipf(1.4, size=8000) % 1500]
    users = r.integers(0, 3000, size=20000)
    events = np.where(r.random(20000) < 0.5, r.zipf(1.5, size=20000) % 300, r.integers(0, 300, size=20000))
    floats = r.normal(50.0, 15.0, size=10000)

    int_df = spark.createDataFrame(pd.DataFrame({"x": ints})).repartition(3).cache()
    str_df = spark.createDataFrame(pd.DataFrame({"w": words})).cache()
    ev_df = spark.createDataFrame(pd.DataFrame({"user": users.astype(np.int64),
                                                "item": [f"i{e}" for e in events]})).cache()
    fl_df = spark.createDataFrame(pd.DataFrame({"f": floats, "u": (np.arange(10000) % 2500).astype(np.int64)})).cache()
    out: dict = _Timed()

    out["counters.default_partitions"] = dps._counters_partitions(spark)
    out["summarize.countsketch"] = _digest(dps.summarize(str_df, "w", lambda: dp.CountSketch(256, 3, seed=5)).to_bytes())
    out["summarize.countmin"] = _digest(dps.summarize(int_df, "x", lambda: dp.CountMin(256, 3, seed=6)).to_bytes())
    out["summarize.dyadic"] = _digest(dps.summarize(fl_df, "f", lambda: DyadicCountSketch(
        12, gamma=0.05, bounds=(0.0, 100.0), seed=7)).to_bytes())
    try:  # a task's own error comes back to the caller as the same exception type
        dps.summarize(int_df, "x", lambda: DyadicCountSketch(12, seed=1))
        out["summarize.task_error"] = None
    except ValueError as e:
        out["summarize.task_error"] = type(e).__name__

    # the default partition count (APP_CONF: min(4 shuffle partitions, parallelism 2)) and an explicit one
    out["heavy_hitters.counters.spacesaving"] = _items(dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6,
                                                                         route="counters", seed=11))
    out["heavy_hitters.counters.misragries.num_partitions=3"] = _items(dps.heavy_hitters(
        str_df, "w", k=20, epsilon=1.0, delta=1e-6, summary="misragries", num_partitions=3, seed=12))
    out["heavy_hitters.sketch.int"] = _items(dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6,
                                                               route="sketch", seed=13))
    out["heavy_hitters.sketch.str"] = _items(dps.heavy_hitters(str_df, "w", k=20, epsilon=1.0, delta=1e-6,
                                                               route="sketch", seed=14))
    # the exact route (the default): Spark's groupBy in the JVM, the noise on the driver
    out["heavy_hitters.exact.int"] = _items(dps.heavy_hitters(int_df, "x", k=20, epsilon=1.0, delta=1e-6, seed=20))
    out["heavy_hitters.exact.str.laplace"] = _items(dps.heavy_hitters(str_df, "w", k=20, epsilon=1.0, delta=1e-6,
                                                                      noise="laplace", cut=None, seed=21))
    out["heavy_hitters.privacy_id"] = _items(dps.heavy_hitters(ev_df, "item", epsilon=1.0, delta=1e-6,
                                                               privacy_id="user", max_keys_per_unit=3, seed=15))

    qs = [0.1, 0.5, 0.9]
    q = dps.quantiles(int_df.where("x >= 0"), "x", qs, rho=0.5, universe_bits=12, seed=17)
    out["quantiles.int"] = [int(v) for v in q.values()]
    out["quantiles.int.sketch"] = _digest(q.sketch.to_bytes())
    out["quantiles.bounds"] = [float(v) for v in dps.quantiles(fl_df, "f", qs, epsilon=1.0, bounds=(0.0, 100.0),
                                                               seed=18).values()]
    out["quantiles.privacy_id"] = [float(v) for v in dps.quantiles(
        fl_df, "f", qs, rho=0.5, bounds=(0.0, 100.0), privacy_id="u", max_rows_per_unit=2, seed=19).values()]
    return out


def session(master: str | None = None, remote: str | None = None):
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("dpsketch-cluster-tests")
    if remote is not None:
        b = b.remote(remote)
        for k, v in APP_CONF.items():
            if k.startswith("spark.sql."):  # session settings; the rest are the server's
                b = b.config(k, v)
        return b.getOrCreate()
    assert master is not None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = b.master(master).config("spark.driver.host", HOST).config("spark.driver.bindAddress", HOST)
    b = b.config("spark.driver.memory", "1g").config("spark.executor.memory", "512m")
    # wait for the executors before the first job (up to 60 s), so the cluster's layout is the configured one
    b = b.config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
    b = b.config("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s")
    for k, v in APP_CONF.items():
        b = b.config(k, v)
    return b.getOrCreate()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--master", help="local[2] or spark://127.0.0.1:PORT")
    where.add_argument("--remote", help="sc://127.0.0.1:PORT (Spark Connect)")
    ap.add_argument("--out", required=True, help="JSON file for the results")
    args = ap.parse_args(argv)
    spark = session(args.master, args.remote)
    try:
        t0 = time.perf_counter()
        res = run_suite(spark)
        res["_seconds"] = round(time.perf_counter() - t0, 2)
        res["_connect"] = type(spark).__module__.startswith("pyspark.sql.connect")
    finally:
        spark.stop()
    Path(args.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
