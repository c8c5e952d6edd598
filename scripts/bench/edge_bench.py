#!/usr/bin/env python3
"""The edge component under `wasmtime serve` against `qmd mcp --http`.

Indexes and embeds a corpus in an isolated home, runs `qmd edge build`,
and serves the build three ways in one run, next to the native server:
  - `qmd mcp --http` (the baseline: warm engine instances in one process),
  - `wasmtime serve` as `qmd edge build` prints it (`--max-instance-reuse-
    count`: an instance serves requests in turn, so a loaded model stays
    loaded), and without that flag (an instance per request, as edge
    platforms run WASIp2 components),
  - the same two for the `--bundle` build (pre-initialised: every fresh
    instance starts with the index and the model in memory).
For keyword (`lex`) and hybrid (`lex` + `vec`) queries it measures
sequential latency (p50/p99) and 64 concurrent requests (requests/s,
p50/p99), and checks that every server gives the native server's files in
the same order. Prints a Markdown table.
"""

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_bench import QUERIES, concurrent_rounds, concurrently, free_port, percentile, post  # noqa: E402


def body(mode: str, query: str) -> dict:
    searches = [{"type": "lex", "query": query}]
    if mode == "hybrid":
        searches.append({"type": "vec", "query": query})
    return {"searches": searches, "limit": 10}


def files(data: bytes) -> list[str]:
    return [urllib.parse.unquote(r["file"]) for r in json.loads(data)["results"]]


def start(command: list[str], cwd: Path, env: dict, ready: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pattern = re.compile(ready)
    assert proc.stdout is not None
    for line in proc.stdout:
        match = pattern.search(line)
        if match:
            # Keep draining so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, int(match.group(1))
    raise RuntimeError(f"{command[0]} exited before serving")


def without_reuse(command: list[str]) -> list[str]:
    """The command with wasmtime's default of an instance per request."""
    at = command.index("--max-instance-reuse-count")
    return command[:at] + command[at + 2:]


def run(env: dict, cwd: Path, *args: str) -> str:
    return subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True, text=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--qmd", required=True)
    parser.add_argument("--wasmtime", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--model", required=True, help="the embedding model (a local directory)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="qmd-edge-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(home / "cache"), "XDG_CONFIG_HOME": str(home / "config"),
           "QMD_EMBED_MODEL": args.model}
    run(env, home, args.qmd, "collection", "add", args.corpus, "--name", "tldr")
    started = time.perf_counter()
    run(env, home, args.qmd, "embed")
    embed_s = time.perf_counter() - started
    printed = run(env, home, args.qmd, "edge", "build", "--out", str(home / "edge")).strip().splitlines()[-1]
    served = shlex.split(printed)[2:]
    size_mb = sum(f.stat().st_size for f in (home / "edge").rglob("*") if f.is_file()) / 1e6
    started = time.perf_counter()
    bundled = run(env, home, args.qmd, "edge", "build", "--bundle", "--wasmtime", args.wasmtime,
                  "--out", str(home / "bundle")).strip().splitlines()[-1]
    bundle_s = time.perf_counter() - started
    bundle_mb = (home / "bundle" / "qmd-edge.wasm").stat().st_size / 1e6

    native_port = free_port()
    wasm_env, ready = {"PATH": os.environ["PATH"]}, r"Serving HTTP on http://127\.0\.0\.1:(\d+)/"
    mounted = [args.wasmtime, "serve", "--addr", "127.0.0.1:0", *served]
    bundle = [args.wasmtime, "serve", "--addr", "127.0.0.1:0", *shlex.split(bundled)[2:]]
    servers = [
        ("`qmd mcp --http` (baseline)", [args.qmd, "mcp", "--http", "--port", str(native_port), "--host", "127.0.0.1"],
         home, env, r"listening on http://127\.0\.0\.1:(\d+)/mcp"),
        ("edge build, an instance per request", without_reuse(mounted), home / "edge", wasm_env, ready),
        ("edge build, as printed (instances reused)", mounted, home / "edge", wasm_env, ready),
        ("`--bundle` build, an instance per request", without_reuse(bundle), home / "bundle", wasm_env, ready),
        ("`--bundle` build, as printed (instances reused)", bundle, home / "bundle", wasm_env, ready),
    ]
    rows, expected = [], {}
    # Keyword answers must be identical; hybrid ones run the model in wasm
    # (float sums in another order), so a near tie may swap: counted.
    differing = {"keyword": 0, "hybrid": 0}

    def check(mode: str, q: str, data: bytes, where: str) -> None:
        got = files(data)
        if (mode, q) not in expected:
            expected[mode, q] = got
        elif got != expected[mode, q]:
            assert mode == "hybrid", (where, q)
            differing[mode] += 1
    for name, command, cwd, server_env, ready in servers:
        proc, port = start(command, cwd, server_env, ready)
        try:
            for mode in ("keyword", "hybrid"):
                call = lambda port, q, mode=mode: post(port, "/query", body(mode, q))  # noqa: E731
                concurrently(call, port)  # warm-up: instances, pages, models
                sequential = []
                for _ in range(args.rounds):
                    for q in QUERIES:
                        elapsed, status, data = call(port, q)
                        assert status == 200, (name, q, status, data[:300])
                        check(mode, q, data, name)
                        sequential.append(elapsed)
                latencies, walls = concurrent_rounds(
                    call, port, args.rounds, lambda q, data, mode=mode, name=name: check(mode, q, data, name))
                rows.append((name, mode, sequential, latencies, len(QUERIES) / statistics.median(walls)))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=15)

    ms = lambda s: f"{s * 1000:.1f} ms"  # noqa: E731
    baseline = {mode: rps for name, mode, _, _, rps in rows if name.endswith("(baseline)")}
    print(f"Corpus: {args.corpus} ({sum(1 for _ in Path(args.corpus).rglob('*.md'))} files), embedded with "
          f"{Path(args.model).name} in {embed_s:.0f} s; edge build {size_mb:.0f} MB; `--bundle` build "
          f"{bundle_mb:.0f} MB in {bundle_s:.0f} s; {len(QUERIES)} distinct queries; "
          f"{args.rounds} rounds; {os.cpu_count()} CPUs.\n")
    print("| server | queries | sequential p50 | sequential p99 | 64 concurrent: requests/s | p50 | p99 | requests/s × baseline |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, mode, sequential, latencies, rps in rows:
        print(f"| {name} | {mode} | {ms(percentile(sequential, 50))} | {ms(percentile(sequential, 99))} | "
              f"{rps:.0f} | {ms(percentile(latencies, 50))} | {ms(percentile(latencies, 99))} | "
              f"{rps / baseline[mode]:.2f}× |")
    total = len(rows) * len(QUERIES) * args.rounds
    print(f"\nOf {total} answers, every keyword answer lists the baseline's files in the baseline's order; "
          f"{differing['hybrid']} hybrid answers differ from the baseline's order.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
