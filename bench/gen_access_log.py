"""A deterministic combined-format access log (Apache/nginx `combined`) for benchmarks and docs:
clients drawn from a heavy-tailed population (IPv4 and some IPv6, a few busy crawlers), paths from
a Zipf law over a site's pages with query strings on some, realistic user agents and referers,
times increasing from a fixed start, weighted status codes, '-' where a server writes one.

    python bench/gen_access_log.py access.log [--lines 1000000] [--seed 7] [--paths paths.txt] [--json access.jsonl]

--paths also writes the request paths alone, one per line (what `awk '{print $7}'` extracts), the
baseline of bench/bench_log_parse.py; --json the same records as JSON lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from pathlib import Path

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.4.0",
    "python-requests/2.31.0",
    'Mozilla/5.0 (Linux; Android 14) \\"quoted\\" build',
    "-",
]
SECTIONS = ["", "blog", "docs", "api/v1", "api/v2", "static/js", "static/css", "img", "products", "users"]
WORDS = ["index", "about", "pricing", "login", "search", "cart", "item", "release-notes", "faq", "contact",
         "caf\\xc3\\xa9", "news", "archive", "team", "careers", "privacy", "terms", "status", "feed", "tags"]
EXT = ["", ".html", ".php", ".js", ".css", ".png", ".json"]
REFERERS = ["-", "https://www.google.com/", "https://example.com/", "https://news.ycombinator.com/", "-", "-"]


def zipf_index(rng: random.Random, n: int, s: float = 1.1) -> int:
    """An index in [0, n) with P(i) ~ 1 / (i + 1)^s (inverse transform on a continuous approximation)."""
    u = rng.random()
    x = ((n + 1) ** (1 - s) - 1) * u + 1
    return min(n - 1, int(x ** (1 / (1 - s))) - 1)


def records(n: int, seed: int):
    rng = random.Random(seed)
    pages = []
    for i in range(20_000):
        sec = SECTIONS[i % len(SECTIONS)]
        page = f"/{sec}/{WORDS[i % len(WORDS)]}-{i}{EXT[i % len(EXT)]}".replace("//", "/")
        pages.append(page)
    rng.shuffle(pages)
    clients = []
    for i in range(200_000):
        if i % 20 == 0:
            clients.append(f"2001:db8:{i % 65536:x}::{rng.randrange(65536):x}")
        else:
            clients.append(".".join(str(rng.randrange(1, 255)) for _ in range(4)))
    t = dt.datetime(2026, 3, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    step = dt.timedelta(seconds=86400 * 7 / max(n, 1))
    for k in range(n):
        host = clients[zipf_index(rng, len(clients), 1.05)]
        path = pages[zipf_index(rng, len(pages), 1.1)]
        if rng.random() < 0.15:
            path += f"?q={rng.randrange(1000)}&page={rng.randrange(1, 9)}"
        method = "GET" if rng.random() < 0.9 else rng.choice(["POST", "HEAD", "PUT"])
        status = rng.choices([200, 304, 301, 404, 500, 403], [80, 8, 4, 6, 1, 1])[0]
        size = "-" if status == 304 else str(int(rng.lognormvariate(8, 1.5)))
        user = "-" if rng.random() < 0.97 else f"user{rng.randrange(100)}"
        yield {
            "host": host, "ident": "-", "user": user, "time": (t + k * step).strftime("%d/%b/%Y:%H:%M:%S %z"),
            "method": method, "path": path, "protocol": "HTTP/1.1" if rng.random() < 0.8 else "HTTP/2.0",
            "status": status, "bytes": size, "referer": rng.choice(REFERERS),
            "user_agent": AGENTS[zipf_index(rng, len(AGENTS), 1.2)],
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--paths", type=Path, help="also write the paths alone, one per line")
    ap.add_argument("--json", type=Path, help="also write the records as JSON lines")
    a = ap.parse_args()
    paths = a.paths.open("w", encoding="utf-8", newline="\n") if a.paths else None
    js = a.json.open("w", encoding="utf-8", newline="\n") if a.json else None
    with a.out.open("w", encoding="utf-8", newline="\n") as f:
        buf, pbuf, jbuf = [], [], []
        for r in records(a.lines, a.seed):
            buf.append(f'{r["host"]} {r["ident"]} {r["user"]} [{r["time"]}] "{r["method"]} {r["path"]} {r["protocol"]}" '
                       f'{r["status"]} {r["bytes"]} "{r["referer"]}" "{r["user_agent"]}"\n')
            if paths:
                pbuf.append(r["path"].replace("\\xc3\\xa9", "\u00e9") + "\n")  # as the parser decodes it
            if js:
                jbuf.append(json.dumps(r) + "\n")
            if len(buf) == 100_000:
                f.write("".join(buf))
                paths and paths.write("".join(pbuf))
                js and js.write("".join(jbuf))
                buf, pbuf, jbuf = [], [], []
        f.write("".join(buf))
        paths and paths.write("".join(pbuf))
        js and js.write("".join(jbuf))
    for h in (paths, js):
        if h:
            h.close()


if __name__ == "__main__":
    main()
