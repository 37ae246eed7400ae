"""update_many on Arrow streams: a real DuckDB query, real polars frames and lazy scans, pyarrow
readers, datasets and iterators of arrays give byte for byte the state of one numpy batch of the
same keys; nulls, mixed key types and a batch of several columns without column= are typed errors."""

from __future__ import annotations

import numpy as np
import pytest

import dpsketch as d
from dpsketch.errors import DPSketchError, ParameterError

pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

N = 50_000
RNG = np.random.default_rng(5)
INTS = (RNG.zipf(1.2, size=N) % 5_000).astype(np.int64)
STRS = np.array([f"/page/{v}" for v in INTS])
MAKERS = [lambda: d.SpaceSaving(64), lambda: d.MisraGries(64), lambda: d.CountSketch(256, 5, seed=9),
          lambda: d.PrivateCountMin(256, 4, epsilon=1.0, seed=3)]


def fed(make, *args, **kwargs):
    obj = make()
    obj.update_many(*args, **kwargs)
    return obj.to_bytes()


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE logs (i BIGINT, q VARCHAR, n BIGINT)")
    con.execute("INSERT INTO logs SELECT * FROM (SELECT unnest(range(?)) AS i, unnest(?) AS q, unnest(?) AS n)",
                [N, STRS.tolist(), INTS.tolist()])
    yield con
    con.close()


@pytest.mark.parametrize("make", MAKERS)
def test_duckdb_reader_equals_numpy(db, make):
    reader = db.sql("SELECT q, i FROM logs ORDER BY i").to_arrow_reader(4096)
    assert fed(make, reader, column="q") == fed(make, STRS)


def test_duckdb_reader_is_read_in_several_batches(db):
    reader = db.sql("SELECT q FROM logs ORDER BY i").to_arrow_reader(4096)
    seen = []

    def counted():
        for batch in reader:
            seen.append(batch.num_rows)
            yield batch

    assert fed(MAKERS[0], counted()) == fed(MAKERS[0], STRS)
    assert len(seen) >= N // 4096 and max(seen) <= 4096


def test_duckdb_relation_and_int_column(db):
    rel = db.sql("SELECT n FROM logs ORDER BY i")
    assert fed(MAKERS[0], rel) == fed(MAKERS[0], INTS)
    obj = d.DyadicCountSketch(16, seed=2)
    obj.update_many(db.sql("SELECT n FROM logs ORDER BY i").to_arrow_reader(1000))
    ref = d.DyadicCountSketch(16, seed=2)
    ref.update_many(INTS)
    assert obj.to_bytes() == ref.to_bytes()


@pytest.mark.parametrize("make", MAKERS)
def test_polars_batches_equal_numpy(tmp_path, make):
    path = tmp_path / "logs.parquet"
    pl.DataFrame({"q": STRS, "n": INTS}).write_parquet(path, row_group_size=5_000)
    lazy = pl.scan_parquet(path)
    assert fed(make, lazy, column="q") == fed(make, STRS)
    assert fed(make, lazy.select("q").collect_batches()) == fed(make, STRS)
    assert fed(make, lazy.collect_batches(), column="n") == fed(make, INTS)


def test_record_batch_reader_and_dataset(tmp_path):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = pa.table({"q": STRS, "n": INTS})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=3000))
    assert fed(MAKERS[1], reader, column="q") == fed(MAKERS[1], STRS)
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=7000)
    assert fed(MAKERS[1], ds.dataset(tmp_path / "t.parquet"), column="n") == fed(MAKERS[1], INTS)


def test_generator_of_arrays():
    parts = np.array_split(STRS, 7)
    gen = (pa.array(p) if i % 2 else p for i, p in enumerate(parts))
    assert fed(MAKERS[0], gen) == fed(MAKERS[0], STRS)
    # an iterator of single keys stays a batch of keys
    assert fed(MAKERS[0], iter(STRS[:100].tolist())) == fed(MAKERS[0], STRS[:100])


def test_nulls_are_refused(db):
    rel = db.sql("SELECT CASE WHEN i = 20000 THEN NULL ELSE q END AS q FROM logs ORDER BY i")
    obj = d.SpaceSaving(64)
    with pytest.raises(ParameterError, match="nulls"):
        obj.update_many(rel.to_arrow_reader(4096))
    assert 0 < obj.n <= 20000  # the batches before the refused one stay added
    with pytest.raises(ParameterError, match="nulls"):
        d.SpaceSaving(64).update_many(pl.LazyFrame({"q": ["a", None]}), column="q")


def test_mixed_key_types_are_refused():
    obj = d.MisraGries(16)
    with pytest.raises(TypeError, match="int keys"):
        obj.update_many(iter([np.arange(5), pa.array(["a", "b"])]))


def test_several_columns_need_column(db):
    obj = d.SpaceSaving(16)
    with pytest.raises(TypeError, match="column="):
        obj.update_many(db.sql("SELECT q, n FROM logs").to_arrow_reader())
    with pytest.raises(ParameterError, match="no column 'x'"):
        obj.update_many(db.sql("SELECT q, n FROM logs"), column="x")
    with pytest.raises(ParameterError, match="already is one column"):
        obj.update_many(STRS, column="q")
    with pytest.raises(ParameterError, match="counts="):
        d.CountMin(16, 2).update_many(pa.table({"q": ["a"]}), counts=[1])
    assert obj.n == 0 and obj.key_type is None
    assert issubclass(ParameterError, DPSketchError)


# -- the command line: --format arrow ---------------------------------------------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
ENV = {**__import__("os").environ, "PYTHONPATH": str(__import__("pathlib").Path(d.__file__).parent.parent)}


def _cli(*argv, stdin=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "dpsketch", *map(str, argv)], input=stdin, capture_output=True,
                          env=ENV, timeout=300)


def _ipc_stream(table, batch_rows):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as out:
        for batch in table.to_batches(max_chunksize=batch_rows):
            out.write_batch(batch)
    return sink.getvalue().to_pybytes()


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    """The same rows as Parquet and as an Arrow IPC file, with a few nulls in the key column."""
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("arrow")
    q = pa.array([None if i % 997 == 0 else s for i, s in enumerate(STRS.tolist())])
    table = pa.table({"query": q, "user_id": (np.arange(N) * 7919) % 5000, "n": INTS})
    pq.write_table(table, folder / "events.parquet", row_group_size=8000)
    with pa.ipc.new_file(folder / "events.arrow", table.schema) as out:
        for batch in table.to_batches(max_chunksize=6000):
            out.write_batch(batch)
    return folder, table


@pytest.mark.parametrize("extra", [
    ("--column", "query"),
    ("--column", "n", "-k", 20),
    ("--column", "query", "--privacy-id", "user_id", "--max-keys-per-unit", 3),
])
def test_cli_arrow_stream_on_stdin_equals_parquet(events, extra):
    """Arrow on stdin against Parquet on stdin, an Arrow file against the Parquet file (with
    --privacy-id, stdin and files take different routes)."""
    import json

    folder, table = events
    common = ("--seed", 4, "--json", *extra)
    parquet_bytes = (folder / "events.parquet").read_bytes()
    runs = {
        "parquet stdin": _cli("top", "-", "--format", "parquet", *common, stdin=parquet_bytes),
        "arrow stdin": _cli("top", "-", "--format", "arrow", "--chunk-size", 5000, *common,
                            stdin=_ipc_stream(table, 7000)),
        "parquet file": _cli("top", folder / "events.parquet", *common),
        "arrow file": _cli("top", folder / "events.arrow", *common),
    }
    for name, r in runs.items():
        assert r.returncode == 0, (name, r.stderr)
    out = {name: json.loads(r.stdout) for name, r in runs.items()}
    for kind in ("stdin", "file"):
        want, got = out[f"parquet {kind}"], out[f"arrow {kind}"]
        assert want["items"] and got["items"] == want["items"]
        assert got["cli"]["keys"].split()[0] == want["cli"]["keys"].split()[0]
    assert "Arrow column type" in out["arrow stdin"]["cli"]["keys"]


def test_cli_arrow_quantiles_equal_parquet(events):
    folder, table = events
    common = ("--column", "n", "--universe-bits", 16, "--rho", 0.5, "--seed", 2, "--json")
    want = _cli("quantiles", folder / "events.parquet", *common)
    got = _cli("quantiles", "-", "--format", "arrow", *common, stdin=_ipc_stream(table, 9000))
    assert want.returncode == 0 and got.returncode == 0, (want.stderr, got.stderr)
    assert got.stdout == want.stdout


def test_cli_arrow_errors(events):
    folder, table = events
    bad = _cli("top", "-", "--format", "arrow", "--column", "query", stdin=b"query\na\nb\n")
    assert bad.returncode == 1 and b"as an Arrow IPC stream or file" in bad.stderr and b"Traceback" not in bad.stderr
    several = _cli("top", "-", "--format", "arrow", stdin=_ipc_stream(table, 9000))
    assert several.returncode == 2 and b"pick one with --column" in several.stderr
    enc = _cli("top", folder / "events.arrow", "--column", "query", "--encoding", "latin-1")
    assert enc.returncode == 2 and b"--encoding is only for text and CSV" in enc.stderr


# -- the recipes of docs/cli.md, as written -------------------------------------------------------------

def _recipes():
    import re

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("### Pipelines: DuckDB, polars and Arrow streams"):]
    section = section[: section.index("\n## ")]
    return re.findall(r"```(python|bash)\n(.*?)```", section, re.S)


def test_docs_pipeline_recipes_run_as_written(events, tmp_path, monkeypatch, capsys):
    import shutil
    import subprocess

    folder, _ = events
    shutil.copy(folder / "events.parquet", tmp_path / "events.parquet")
    monkeypatch.chdir(tmp_path)
    blocks = _recipes()
    assert [lang for lang, _ in blocks] == ["python", "python", "bash"]
    heaviest = "/page/1"  # the most frequent key of the Zipf stream
    for lang, code in blocks:
        if lang == "python":
            scope: dict = {}
            exec(compile(code, "docs/cli.md", "exec"), scope)
            assert heaviest in dict(scope["release"].items)
            assert capsys.readouterr().out.startswith("[(")
        else:
            # the `dpsketch` of this checkout: the bash block's `dpsketch` word runs this package
            bindir = tmp_path / "bin"
            bindir.mkdir()
            exe = bindir / "dpsketch"
            exe.write_text(f"#!/bin/sh\nexec {__import__('sys').executable} -m dpsketch \"$@\"\n")
            exe.chmod(0o755)
            env = {**ENV, "PATH": f"{bindir}:{ENV['PATH']}"}
            r = subprocess.run(["bash", "-c", "set -o pipefail\n" + code], capture_output=True, env=env, timeout=300)
            assert r.returncode == 0, r.stderr
            assert heaviest in r.stdout.decode() and b"rank" in r.stdout


def test_flight_stream():
    """A real Arrow Flight server on localhost: the client's stream reader feeds update_many."""
    flight = pytest.importorskip("pyarrow.flight")
    table = pa.table({"q": STRS, "n": INTS})

    class Server(flight.FlightServerBase):
        def do_get(self, context, ticket):
            return flight.GeneratorStream(table.schema, iter(table.to_batches(max_chunksize=4000)))

    with Server("grpc://127.0.0.1:0") as server:
        client = flight.connect(f"grpc://127.0.0.1:{server.port}")
        assert fed(MAKERS[0], client.do_get(flight.Ticket(b"logs")), column="q") == fed(MAKERS[0], STRS)
        assert fed(MAKERS[2], client.do_get(flight.Ticket(b"logs")).to_reader(), column="n") == fed(MAKERS[2], INTS)
        client.close()


def test_pandas_frame_with_non_str_labels():
    import pandas as pd

    frame = pd.DataFrame({0: STRS[:500], 1: INTS[:500]})
    assert fed(MAKERS[1], frame, column="1") == fed(MAKERS[1], INTS[:500])
