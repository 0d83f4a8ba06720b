"""State of a `neardup scan` over recrawls of one real page: identical bodies against bodies whose raw
bytes rotate outside the main text, this code against the code before (issue 21).

One corpus page (`--page`, an index in the manifest) is fetched N times at one URL, a minute apart:
(a) **identical**: the same body every time; (b) **rotating**: a token in a `<script>`, a banner ad (a
link and an image, no text) after `<body>` and a render time in an attribute change on every fetch,
the main text does not (the table says how many distinct text digests scan reported). Each input goes
to a fresh `--state` dir, once with this worktree's code and once with `--before` (a git revision,
extracted with `git archive`; default: the branch point from `main`). After each scan the state dir is
measured as left (its files, RocksDB info logs `LOG*` left out) and the index's live keys are counted
(entries, group summaries, version records).

    python bench/bench_recrawl.py [--sizes 100 300] [--page 0] [--before REV] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import orjson
from common import (
    DEFAULT_CORPUS,
    FIRST_FETCH_MS,
    REPO,
    Table,
    append_results,
    fmt_bytes,
    fmt_ratio,
    keys_of,
    load_corpus,
)
from rocksdict import AccessType, Options, Rdict


def rotated(body: bytes, token: int) -> bytes:
    """The page with bytes that change on every fetch, all outside its main text."""
    head = f"<script>window.__csrf='{token:012x}';window.__t={token};</script>".encode()
    ad = (f"<div class=\"ad\"><a href=\"/ad/click?id={token:06d}\"><img src=\"/ad/b{token % 13}.png\" "
          f"width=\"728\" alt=\"\"></a></div>").encode()
    body = re.sub(rb"<head[^>]*>", lambda m: m.group(0) + head, body, count=1, flags=re.I)
    body = re.sub(rb"<body([^>]*)>", lambda m: b"<body" + m.group(1) + f" data-rendered=\"{token}\">".encode() + ad,
                  body, count=1, flags=re.I)
    return body


def write_events(path: Path, url: str, bodies: list[bytes]) -> Path:
    with path.open("wb") as fh:
        for i, body in enumerate(bodies):
            fh.write(orjson.dumps({"url": url, "body_b64": base64.b64encode(body).decode("ascii"),
                                   "fetched_at": FIRST_FETCH_MS + 60_000 * i, "status": 200,
                                   "content_type": "text/html"}) + b"\n")
    return path


def scan(code: Path, data: Path, state: Path, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("NEARDUP_RETENTION_DAYS", None)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "streams.cli", "scan", str(data), "--state", str(state),
                             "--out", str(out), "--no-progress", "--processes", "1"],
                            cwd=code, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return time.perf_counter() - started


def state_bytes(state: Path) -> int:
    return sum(p.stat().st_size for p in state.rglob("*") if p.is_file() and not p.name.startswith("LOG"))


def index_keys(state: Path) -> int:
    db = Rdict(str(state / "index"), options=Options(raw_mode=True), access_type=AccessType.read_only())
    n = keys_of(db)
    db.close()
    return n


def text_digests(out: Path) -> set[str]:
    return {d["text_sha256"] for line in out.read_bytes().splitlines() if (d := orjson.loads(line)).get("text_sha256")}


def extract_revision(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def branch_point() -> str:
    found = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "main"], capture_output=True, text=True)
    return found.stdout.strip() or "HEAD"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300], help="fetches of the one URL")
    parser.add_argument("--page", type=int, default=0, help="the corpus page (manifest order)")
    parser.add_argument("--before", default=None, help="the code to compare with (default: merge-base with main)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results" / "recrawl.md")
    args = parser.parse_args()
    started = time.perf_counter()
    page = load_corpus(args.corpus, limit=args.page + 1)[args.page]  # exits with SKIPPED when there is no corpus
    before_rev = args.before or branch_point()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-recrawl-") as tmp:
        root = Path(tmp)
        codes = {"before": extract_revision(before_rev, root / "before"), "after": REPO}
        for n in args.sizes:
            inputs = {"identical": [page.body] * n, "rotating": [rotated(page.body, i) for i in range(n)]}
            for kind, bodies in inputs.items():
                data = write_events(root / f"{kind}-{n}.jsonl", page.url, bodies)
                got = {}
                for name, code in codes.items():
                    state, out = root / f"state-{name}-{kind}-{n}", root / f"out-{name}-{kind}-{n}.jsonl"
                    seconds = scan(code, data, state, out)
                    got[name] = (state_bytes(state), index_keys(state), len(text_digests(out)), seconds)
                    print(f"{n} {kind} {name}: {got[name]}", flush=True)
                b, a = got["before"], got["after"]
                rows.append((n, kind, len({*bodies}), a[2], b, a))
    table = Table(f"`neardup scan` state after N fetches of one URL ({page.path}, {len(page.body):,} bytes), "
                  f"before = {before_rev[:10]}",
                  ["fetches", "input", "distinct bodies", "text digests", "before: state dir", "after: state dir",
                   "after / before", "before: index keys", "after: index keys", "after / before"])
    for n, kind, distinct, texts, b, a in rows:
        table.add(n, kind, distinct, texts, fmt_bytes(b[0]), fmt_bytes(a[0]), fmt_ratio(a[0] / b[0]),
                  f"{b[1]:,}", f"{a[1]:,}", fmt_ratio(a[1] / b[1]))
    table.notes.append("state dir: the files of the --state dir after the scan closed it (RocksDB flushed on close), "
                       "info logs (LOG*) left out; index keys: live keys of its index RocksDB (entries, group "
                       "summaries, version records)")
    table.notes.append("rotating: a token in a <script>, a banner ad (link + image) and a render time in an attribute "
                       "change on every fetch; text digests: distinct text_sha256 in scan's decisions (1 = the main "
                       "text did not move)")
    table.print()
    append_results(args.results, "Issue 21: recrawls by main text", [table], started=started)


if __name__ == "__main__":
    main()
