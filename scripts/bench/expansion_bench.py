"""`query` latency with and without query expansion: the cold CLI (a
process per query, the expansion cache empty), the CLI again (the cache
answers), `query --no-expand`, and a warm `qmd mcp --http` server's MCP
`query` tool with plain text (the model loaded once; first ask, then a
repeat).

Index: qmd's eval notes, embedded with the test weights (all-MiniLM-L6-v2).
Generator: the GGUF given (SmolLM2-135M-Instruct Q4_1 by default, from
scripts/test-weights.sh; point --generator at qmd's 1.7B file to measure
it). Prints a markdown report; each figure is a median over the queries,
with its ratio to `--no-expand` measured in the same run.
"""

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from mcp_bench import start_server

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "fixtures" / "qmd-eval" / "docs"
QUERIES = REPO / "tests" / "fixtures" / "qmd-eval" / "queries.jsonl"


def timed(command: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, out.stderr


def post(port: int, arguments: dict) -> float:
    """The MCP `query` tool over streamable HTTP (qmd's REST `/query` takes
    typed searches only; plain text expands through the tool)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query", "arguments": arguments}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, (response.status, data[:200])
    assert not json.loads(data)["result"].get("isError"), data[:300]
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--qmd", required=True)
    parser.add_argument("--generator", required=True)
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--queries", type=int, default=8)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="qmd-expansion-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(HOME=str(root / "home"), QMD_EMBED_MODEL=args.embedder, QMD_GENERATE_MODEL=args.generator, NO_COLOR="1")
    qmd = args.qmd
    expansions = root / "home" / ".cache" / "qmd" / "expansions"
    try:
        shutil.copytree(DOCS, root / "notes")
        subprocess.run([qmd, "collection", "add", str(root / "notes"), "--name", "eval"], env=env,
                       capture_output=True, check=True)
        subprocess.run([qmd, "embed"], env=env, capture_output=True, check=True)
        queries = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines() if line.strip()]
        rows: dict[str, list[float]] = {"cold": [], "cached": [], "no_expand": [], "server_first": [],
                                        "server_repeat": []}
        expanded = 0
        for query in queries:
            if len(rows["cold"]) == args.queries:
                break
            shutil.rmtree(expansions, ignore_errors=True)
            seconds, stderr = timed([qmd, "query", "--json", query], env)
            if "Expanding query" not in stderr:
                continue  # a strong BM25 signal: nothing to compare
            expanded += 1
            rows["cold"].append(seconds)
            rows["cached"].append(timed([qmd, "query", "--json", query], env)[0])
            rows["no_expand"].append(timed([qmd, "query", "--no-expand", "--json", query], env)[0])
        shutil.rmtree(expansions, ignore_errors=True)
        server, port = start_server(qmd, env)
        try:
            # Warm: one structured query loads the embedder.
            post(port, {"searches": [{"type": "vec", "query": "warm up"}]})
            for query in queries[: len(rows["cold"]) * 3]:
                if len(rows["server_first"]) == len(rows["cold"]):
                    break
                before = len(list(expansions.glob("*.json"))) if expansions.is_dir() else 0
                seconds = post(port, {"query": query})
                after = len(list(expansions.glob("*.json"))) if expansions.is_dir() else 0
                if after == before:
                    continue  # strong signal: the model was not asked
                rows["server_first"].append(seconds)
                rows["server_repeat"].append(post(port, {"query": query}))
        finally:
            server.terminate()
            server.wait(timeout=30)
        base = statistics.median(rows["no_expand"])
        print("# Query expansion latency (`scripts/bench-expansion.sh`)\n")
        print(f"Generator: `{Path(args.generator).name}`; embedder: `{Path(args.embedder).name}`; "
              f"qmd's eval notes; {expanded} queries that expand (strong BM25 signals skipped); "
              f"{os.cpu_count()} cores; one run. Medians; ratio to `query --no-expand` in the same run.\n")
        print("| what | median (ms) | = `--no-expand` × |")
        print("|---|---:|---:|")
        labels = {
            "cold": "CLI `query`, cold (model loaded, expansion generated)",
            "cached": "CLI `query`, the same query again (expansion cache)",
            "no_expand": "CLI `query --no-expand`",
            "server_first": "`qmd mcp --http`, MCP `query` tool, warm server, a new query",
            "server_repeat": "`qmd mcp --http`, MCP `query` tool, warm server, the query again",
        }
        for key, label in labels.items():
            median = statistics.median(rows[key])
            print(f"| {label} | {median * 1000:.0f} | {median / base:.2f}× |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
