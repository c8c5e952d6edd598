#!/usr/bin/env python3
"""Concurrent load on `qmd mcp --http` over the tldr corpus.

Indexes the corpus into an isolated home, starts the HTTP server, and
measures, in the same run:
  - sequential REST `POST /query` latency (the baseline: one call at a time),
  - 64 concurrent REST `POST /query` calls (one per query),
  - 64 concurrent MCP `tools/call query` calls over streamable HTTP,
reporting p50/p99 and each as a ratio to the sequential median. Every
concurrent answer must equal the sequential answer for the same query.
Prints a Markdown table.
"""

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

QUERIES = """tar archive; git commit; docker run; ssh key; find files; grep pattern; curl download;
rsync copy; chmod permissions; kill process; ps list; top cpu; df disk; du size; ls hidden; cp recursive;
mv rename; rm directory; ln symlink; mount drive; systemctl service; journalctl logs; crontab schedule;
awk column; sed replace; sort unique; head lines; tail follow; less pager; vim save; nano editor;
python venv; pip install; npm install; cargo build; rustc compile; gcc warnings; make target; cmake build;
ffmpeg convert; convert image; zip archive; unzip extract; gzip compress; openssl certificate; gpg encrypt;
ping host; traceroute route; netstat ports; ip address; iptables rule; wget mirror; scp remote; tmux session;
screen detach; htop memory; kubectl pods; helm chart; terraform plan; ansible playbook; aws s3; git rebase;
git stash; docker compose""".replace("\n", " ").split(";")
QUERIES = [q.strip() for q in QUERIES if q.strip()][:64]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(qmd: str, env: dict) -> tuple[subprocess.Popen, int]:
    """`qmd mcp --http` on a free port, once its /health answers."""
    port = free_port()
    server = subprocess.Popen([qmd, "mcp", "--http", "--port", str(port), "--host", "127.0.0.1"], env=env,
                              stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.05)
    return server, port


def post(port: int, path: str, body: dict, headers: dict | None = None) -> tuple[float, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed, response.status, data


def rest(port: int, query: str):
    return post(port, "/query", {"searches": [{"type": "lex", "query": query}], "limit": 10})


def mcp(port: int, query: str):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "query", "arguments": {"searches": [{"type": "lex", "query": query}]}}}
    headers = {"Accept": "application/json, text/event-stream"}
    return post(port, "/mcp", body, headers)


def rest_files(data: bytes) -> list[str]:
    return [urllib.parse.unquote(r["file"]) for r in json.loads(data)["results"]]


def mcp_files(data: bytes) -> list[str]:
    message = json.loads(data)
    return ["qmd://" + r["file"] for r in message["result"]["structuredContent"]["results"]]


def concurrently(call, port: int) -> list[tuple[float, int, bytes]]:
    results: list = [None] * len(QUERIES)
    barrier = threading.Barrier(len(QUERIES))

    def worker(i: int):
        barrier.wait()
        results[i] = call(port, QUERIES[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(QUERIES))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def concurrent_rounds(call, port: int, rounds: int, check) -> tuple[list[float], list[float]]:
    """`rounds` times all queries at once: every call's latency and each
    round's wall time; `check(query, body)` judges each answer."""
    latencies, walls = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        results = concurrently(call, port)
        walls.append(time.perf_counter() - start)
        for q, (elapsed, status, data) in zip(QUERIES, results):
            assert status == 200, (q, status, data[:200])
            check(q, data)
            latencies.append(elapsed)
    return latencies, walls


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--qmd", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="qmd-mcp-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(home / "cache"), "XDG_CONFIG_HOME": str(home / "config")}
    subprocess.run([args.qmd, "collection", "add", args.corpus, "--name", "tldr"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    server, port = start_server(args.qmd, env)
    try:
        # Warm every pooled instance, then the baseline: one call at a time.
        concurrently(rest, port)
        expected, sequential = {}, []
        for _ in range(args.rounds):
            for q in QUERIES:
                elapsed, status, data = rest(port, q)
                assert status == 200, (q, status, data)
                expected[q] = rest_files(data)
                sequential.append(elapsed)
        rows = []
        for name, call, files in (("REST POST /query", rest, rest_files), ("MCP tools/call query", mcp, mcp_files)):
            def same(q: str, data: bytes, files=files, name=name) -> None:
                assert files(data) == expected[q], (name, q)
            latencies, walls = concurrent_rounds(call, port, args.rounds, same)
            rows.append((name, latencies, walls))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=15)

    base = statistics.median(sequential)
    ms = lambda s: f"{s * 1000:.1f} ms"
    print(f"Corpus: {args.corpus}; {len(QUERIES)} distinct lex queries; {args.rounds} rounds; "
          f"{os.cpu_count()} CPUs; server pool of warm engine instances.\n")
    print("| measurement | p50 | p99 | p50 × sequential | wall of 64 calls (median) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| sequential REST `POST /query` (baseline) | {ms(base)} | {ms(percentile(sequential, 99))} | 1.0× | |")
    for name, latencies, walls in rows:
        p50 = percentile(latencies, 50)
        print(f"| 64 concurrent {name} | {ms(p50)} | {ms(percentile(latencies, 99))} | "
              f"{p50 / base:.1f}× | {ms(statistics.median(walls))} |")
    print(f"\nAll {len(QUERIES) * args.rounds * 2} concurrent answers equal the sequential ones.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
