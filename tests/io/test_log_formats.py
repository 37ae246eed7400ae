"""dpsketch._core.logs: log lines parsed into columns in C++ (cpp/include/dpsketch/io/log_formats.hpp,
docs/logs.md), checked against reference parsers written here with Python's re and json on
generated lines: quotes, backslash escapes, '-' for missing, IPv6 hosts, malformed lines; JSON
with escapes, nested values and missing keys; a regular expression with named groups."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import string
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from dpsketch import _core
from dpsketch.errors import ParameterError

pa = pytest.importorskip("pyarrow")

logs = _core.logs
COMBINED = list(logs.FIELDS["combined"])
REASONS = logs.BAD_LINE_REASONS


def to_arrow(col: dict, rows: int):
    """A column of parse() as a pyarrow array, without a copy (the way the input layer wraps it)."""
    validity = None if col["validity"] is None else pa.py_buffer(col["validity"])
    if col["type"] == "string":
        bufs = [validity, pa.py_buffer(col["offsets"]), pa.py_buffer(col["data"])]
        arr = pa.Array.from_buffers(pa.large_string(), rows, bufs, null_count=col["null_count"])
    else:
        bufs = [validity, pa.py_buffer(col["values"])]
        arr = pa.Array.from_buffers(pa.int64(), rows, bufs, null_count=col["null_count"])
    arr.validate(full=True)  # offsets in range, UTF-8 valid
    return arr


def parsed(block: bytes, fmt: str, fields, **kw):
    r = logs.parse_log_lines(block, fmt, list(fields), **kw)
    cols = {name: to_arrow(c, r["rows"]).to_pylist() for name, c in r["columns"].items()}
    return r, cols


# --- a reference for the access log formats -------------------------------------------------

_Q = r'"((?:[^"\\]|\\.)*)"'
_COMMON = r"^(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]+\[([^\]]*)\][ \t]+" + _Q + r"[ \t]+(\S+)[ \t]+(\S+)"
COMMON_RE = re.compile(_COMMON + r"(?:[ \t].*)?$")
COMBINED_RE = re.compile(_COMMON + r"[ \t]+" + _Q + r"[ \t]+" + _Q + r"(?:[ \t].*)?$")
_ESC = {ord('"'): 0x22, 0x5C: 0x5C, ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("v"): 11, ord("f"): 12}


def unescape(s: str) -> str:
    b, out, i = s.encode(), bytearray(), 0
    while i < len(b):
        c = b[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        if i + 1 == len(b):
            out.append(c)
            break
        x, i = b[i + 1], i + 2
        if x in _ESC:
            out.append(_ESC[x])
        elif x == ord("x") and len(b) - i >= 2 and all(chr(h) in string.hexdigits for h in b[i:i + 2]):
            out.append(int(b[i:i + 2], 16))
            i += 2
        else:
            out += bytes([0x5C, x])
    return out.decode("utf-8", "replace")


def ref_access(line: str, combined: bool, strip_query: bool = False):
    """The fields of one line as the docs define them, or None when it does not parse."""
    m = (COMBINED_RE if combined else COMMON_RE).match(line.strip())
    if not m:
        return None
    g = m.groups()
    status, nbytes = g[5], g[6]
    if (status != "-" and not (status.isdigit() and status.isascii() and len(status) <= 18)) or (
            nbytes != "-" and not (nbytes.isdigit() and nbytes.isascii() and len(nbytes) <= 18)):
        return None
    dash = lambda v: None if v == "-" else v  # noqa: E731
    req = g[4]
    method = path = proto = None
    if req != "-" and " " in req:
        method, target = req.split(" ", 1)
        if " " in target:
            head, last = target.rsplit(" ", 1)
            if last.startswith("HTTP/"):
                proto, target = last, head
        if strip_query:
            target = target.split("?", 1)[0]
        method, path, proto = dash(method), dash(target or None), dash(proto)
    try:
        ts = int(dt.datetime.strptime(g[3], "%d/%b/%Y:%H:%M:%S %z").timestamp()) if len(g[3]) == 26 else None
    except ValueError:
        ts = None
    f = {
        "host": dash(g[0]), "ident": dash(g[1]), "user": dash(g[2]), "time": dash(g[3]), "timestamp": ts,
        "request": dash(req), "method": method, "path": path, "protocol": proto,
        "status": None if status == "-" else int(status), "bytes": None if nbytes == "-" else int(nbytes),
    }
    if combined:
        f["referer"], f["user_agent"] = dash(g[7]), dash(g[8])
    return {k: unescape(v) if isinstance(v, str) and k not in ("time",) else v for k, v in f.items()}


def gen_access_lines(rng: random.Random, n: int) -> list[str]:
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    def host():
        r = rng.random()
        if r < 0.6:
            return ".".join(str(rng.randrange(256)) for _ in range(4))
        if r < 0.9:
            return rng.choice(["2001:db8::1", "::1", "fe80::1ff:fe23:4567:890a", "2001:db8:85a3::8a2e:370:7334"])
        return rng.choice(["-", "example.org", "h\u00e9te"])

    def piece():
        return rng.choice(["a", "b", "index.html", "x y", "caf\u00e9", "\\\"q\\\"", "\\\\", "\\x41",
                           "\\xff\\xfe", "\\xc3\\xa9", "\\t", "\\q", "%20", "?", "??a=1", "&b=2"])

    def quoted():
        r = rng.random()
        if r < 0.2:
            return "-"
        return "".join(piece() for _ in range(rng.randrange(4)))

    out = []
    for _ in range(n):
        t = (f"{rng.randrange(1, 29):02d}/{rng.choice(months)}/{rng.randrange(1990, 2030)}:"
             f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d} "
             f"{rng.choice('+-')}{rng.randrange(13):02d}{rng.choice(['00', '30'])}")
        if rng.random() < 0.05:
            t = rng.choice(["bad", "1/Jan/2000:00:00:00 +0000", "10/Foo/2000:00:00:00 +0000", ""])
        method = rng.choice(["GET", "POST", "HEAD", "-"])
        r = rng.random()
        if r < 0.7:
            req = f"{method} /{'/'.join(piece() for _ in range(rng.randrange(4)))} HTTP/1.{rng.randrange(2)}"
        elif r < 0.8:
            req = f"{method} /{piece()}"
        elif r < 0.9:
            req = rng.choice(["-", "\\x16\\x03\\x01\\x00", "", "GET  HTTP/1.1"])
        else:
            req = f"{method} /{piece()} {piece()} HTTP/2.0"
        status = rng.choice(["200", "404", "301", "-", "500"])
        nbytes = rng.choice(["0", "-", str(rng.randrange(10**6))])
        user = rng.choice(["-", "frank", "a\u00efda"])
        line = f'{host()} - {user} [{t}] "{req}" {status} {nbytes} "{quoted()}" "{quoted()}"'
        if rng.random() < 0.1:
            line += rng.choice([' "x-forwarded"', " 0.004", ""])
        if rng.random() < 0.08:  # malformed
            k = rng.randrange(len(line))
            line = rng.choice([line[:k], line[:k] + '"' + line[k:], line.replace(" ", "", 1),
                               line.replace(f" {status} ", " 2x0 ", 1), "not a log line", "   "])
        if rng.random() < 0.05:
            line = "  " + line + " \t"
        out.append(line)
    return out


@pytest.mark.parametrize("fmt", ["common", "combined"])
@pytest.mark.parametrize("strip_query", [False, True])
def test_access_formats_match_the_reference(fmt, strip_query):
    rng = random.Random(20261207 + strip_query)
    lines = gen_access_lines(rng, 3000)
    ends = [rng.choice(["\n", "\r\n", "\r"]) for _ in lines]
    block = "".join(line + e for line, e in zip(lines, ends)).encode()
    fields = list(logs.FIELDS[fmt])
    r, cols = parsed(block, fmt, fields, strip_query=strip_query)
    assert r["lines"] == len(lines)
    want_rows, want_bad, want_blank = [], [], []
    for i, line in enumerate(lines):
        if not line.strip():
            want_blank.append(i)
            continue
        ref = ref_access(line, fmt == "combined", strip_query)
        if ref is None:
            want_bad.append(i)
        else:
            want_rows.append(ref)
    assert r["blank"].tolist() == want_blank
    assert r["bad"].tolist() == want_bad
    assert set(r["bad_reason"].tolist()) <= {3}
    assert r["rows"] == len(want_rows)
    assert 0 < len(want_bad) < len(lines) // 5
    for name in fields:
        assert cols[name] == [row[name] for row in want_rows], name
    assert r["columns"]["status"]["type"] == "int64" and r["columns"]["path"]["type"] == "string"


def test_a_combined_line_field_by_field():
    line = (b'2001:db8::7 - frank [10/Oct/2000:13:55:36 -0700] "GET /a%20b?q=\\"1\\"&x=\\xc3\\xa9 HTTP/1.1" '
            b'200 - "http://ex.org/?p=1" "Mozilla/5.0 (X11; \\"quoted\\") \\\\o/"')
    r, c = parsed(line, "combined", COMBINED)
    assert r["rows"] == 1 and r["bad"].size == 0
    row = {k: v[0] for k, v in c.items()}
    assert row == {
        "host": "2001:db8::7", "ident": None, "user": "frank", "time": "10/Oct/2000:13:55:36 -0700",
        "timestamp": 971211336, "request": 'GET /a%20b?q="1"&x=\u00e9 HTTP/1.1', "method": "GET",
        "path": '/a%20b?q="1"&x=\u00e9', "protocol": "HTTP/1.1", "status": 200, "bytes": None,
        "referer": "http://ex.org/?p=1", "user_agent": 'Mozilla/5.0 (X11; "quoted") \\o/',
    }
    _, c = parsed(line, "combined", ["path"], strip_query=True)
    assert c["path"] == ["/a%20b"]


def test_bytes_like_blocks_and_threads():
    rng = random.Random(5)
    block = "\n".join(gen_access_lines(rng, 500)).encode()
    want = parsed(block, "combined", ["path", "status"])[1]
    for b in (bytearray(block), memoryview(block), np.frombuffer(block, dtype=np.uint8)):
        assert parsed(b, "combined", ["path", "status"])[1] == want
    p = logs.LogParser("combined", ["path", "status"])
    assert p.format == "combined" and p.fields == ["path", "status"]
    with ThreadPoolExecutor(4) as ex:  # parse() releases the GIL and is const: same answers
        for r in ex.map(p.parse, [block] * 8):
            assert to_arrow(r["columns"]["path"], r["rows"]).to_pylist() == want["path"]
    assert parsed(b"", "combined", ["path"])[0]["lines"] == 0
    with pytest.raises(TypeError):
        logs.parse_log_lines(np.zeros(4, dtype=np.int32), "combined", ["path"])


def test_bad_lines_are_listed_with_their_reason():
    block = (b'h - - [t] "GET / HTTP/1.0" 200 1\n'
             b'h - - [t] "GET /\xff HTTP/1.0" 200 1\n'
             b'h - - [t] "GET /' + b"x" * 200 + b' HTTP/1.0" 200 1\n'
             b"garbage\n\n"
             b'h - - [t] "GET /last HTTP/1.0" 200 1')
    r, c = parsed(block, "common", ["path"], max_line_bytes=100)
    assert r["lines"] == 6 and r["rows"] == 2 and r["blank"].tolist() == [4]
    assert r["bad"].tolist() == [1, 2, 3]
    assert [REASONS[k] for k in r["bad_reason"]] == ["invalid UTF-8", "longer than max_line_bytes",
                                                     "does not match the log format"]
    assert c["path"] == ["/", "/last"]
    r, c = parsed(block, "common", ["path"], max_line_bytes=100, replace_invalid_utf8=True)
    assert r["bad"].tolist() == [2, 3] and c["path"] == ["/", "/\ufffd", "/last"]


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="no field 'referer'"):
        logs.LogParser("common", ["referer"])
    with pytest.raises(ParameterError, match="unknown log format"):
        logs.LogParser("apache", ["path"])
    with pytest.raises(ParameterError, match="twice"):
        logs.LogParser("combined", ["path", "path"])
    with pytest.raises(ParameterError):
        logs.LogParser("combined", [])
    with pytest.raises(ParameterError, match="no group named 'x'"):
        logs.LogParser("regex", ["x"], pattern="(?P<y>a)")
    with pytest.raises(ParameterError, match="not a valid regular expression"):
        logs.LogParser("regex", ["x"], pattern="(?P<x>a")
    with pytest.raises(ParameterError):
        logs.LogParser("regex", ["x"])
    with pytest.raises(ParameterError, match="regex format only"):
        logs.LogParser("json", ["x"], pattern="(?P<x>a)")
    with pytest.raises(ParameterError):
        logs.LogParser("json", ["x"], max_line_bytes=0)


# --- JSON lines -------------------------------------------------------------------------------

def gen_json_lines(rng: random.Random, n: int) -> list[str]:
    words = ["/a", "caf\u00e9", "quote\"d", "back\\slash", "tab\there", "nl\nx", "\U0001F600", "\u2028", "", "-"]

    def value(depth=0):
        r = rng.random()
        if r < 0.45:
            return rng.choice(words) + str(rng.randrange(5))
        if r < 0.6:
            return rng.randrange(-10**12, 10**12)
        if r < 0.7:
            return rng.choice([1.5, -0.0, 1e-300, 2.5e17])
        if r < 0.8:
            return rng.choice([True, False, None])
        if depth < 3 and r < 0.9:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        if depth < 3:
            return {rng.choice(["path", "k", "user"]): value(depth + 1) for _ in range(rng.randrange(3))}
        return "leaf"

    out = []
    for _ in range(n):
        obj = {}
        for key in rng.sample(["path", "user", "status", "extra", "p\u00e4th"], rng.randrange(5)):
            obj[key] = value()
        text = json.dumps(obj, ensure_ascii=rng.random() < 0.5,
                          separators=rng.choice([(",", ":"), (", ", ": ")]))
        if rng.random() < 0.05 and len(obj) > 1:  # a repeated key: the last one wins
            text = text[:-1] + ', "path": "dup"}'
        if rng.random() < 0.1:  # malformed
            k = rng.randrange(len(text))
            text = rng.choice([text[:k], text + " x", "[" + text + "]", text.replace(":", "", 1),
                               text.replace('"', "'", 1), '{"path": 01}', '{"path": "\\x"}', '{"a": [1,]}',
                               '{"a" "b"}', "null", '{"path": NaN}'])
        out.append(text)
    return out


def _no_constants(name):
    raise ValueError(f"{name} is not JSON (RFC 8259)")  # Python's json accepts NaN and Infinity


def ref_json(line: str, fields):
    try:
        obj = json.loads(line, parse_constant=_no_constants)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    return {f: obj.get(f) for f in fields}


def test_json_lines_match_python_json():
    rng = random.Random(77)
    lines = gen_json_lines(rng, 4000)
    fields = ["path", "user", "status", "p\u00e4th", "missing"]
    r, cols = parsed("\n".join(lines).encode(), "json", fields)
    want_rows, want_bad = [], []
    for i, line in enumerate(lines):
        if not line.strip():  # blank: skipped, as by the line splitter
            continue
        ref = ref_json(line, fields)
        (want_bad.append(i) if ref is None else want_rows.append(ref))
    assert r["bad"].tolist() == want_bad
    assert r["rows"] == len(want_rows)
    assert 0 < len(want_bad) < len(lines) // 5
    for f in fields:
        got = cols[f]
        assert r["columns"][f]["type"] == "string"
        for g, row in zip(got, want_rows):
            v = row[f]
            if v is None:
                assert g is None
            elif isinstance(v, str):
                assert g == v
            else:  # numbers, true/false, arrays and objects: their JSON text as written
                assert json.loads(g) == v


def test_json_depth_is_bounded_not_recursive():
    ok = '{"a": ' + "[" * 200 + "]" * 200 + "}"
    deep = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    r, c = parsed((ok + "\n" + deep).encode(), "json", ["a"])
    assert r["rows"] == 1 and r["bad"].tolist() == [1]


# --- regular expressions ----------------------------------------------------------------------

def test_regex_named_groups_match_python_re():
    rng = random.Random(9)
    py = r"^(?P<ip>\S+) \S+ (?P<user>\S+) \[[^\]]*\] \"(?P<method>[A-Z]+) (?P<path>[^ \"?]*)(\?[^ \"]*)? [^\"]*\" (?P<status>\d{3})"
    lines = gen_access_lines(rng, 1500)
    fields = ["ip", "user", "method", "path", "status"]
    r, cols = parsed("\n".join(lines).encode(), "regex", fields, pattern=py)
    rx = re.compile(py)
    want_rows, want_bad = [], []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        m = rx.search(s)
        (want_bad.append(i) if m is None else want_rows.append(m.groupdict()))
    assert r["bad"].tolist() == want_bad
    for f in fields:
        assert cols[f] == [row[f] for row in want_rows], f
    # (?<name>...) too, and an optional group that did not take part is null
    r, cols = parsed(b"k=1\nk=2 v=x\n", "regex", ["k", "v"], pattern=r"k=(?<k>\d+)(?: v=(?<v>\w+))?")
    assert cols == {"k": ["1", "2"], "v": [None, "x"]}


def test_regex_never_yields_invalid_utf8_and_long_lines_do_not_crash():
    r, cols = parsed("\u00e9\u00e9\n".encode(), "regex", ["c"], pattern="(?P<c>.)")
    assert cols["c"] == ["\ufffd"]
    long_line = b"a" * 200_000 + b"c\n"
    r, cols = parsed(long_line, "regex", ["x"], pattern="(?P<x>(a|b)*c)")
    assert r["rows"] == 1 and len(cols["x"][0]) == 200_001
