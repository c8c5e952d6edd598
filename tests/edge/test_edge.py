"""The edge component under `wasmtime serve`, built by `qmd edge build`.

The index (qmd's eval documents, embedded with the test weights) is built
with the `qmd` CLI; `qmd edge build` writes the component, the snapshot and
the model; the command it prints is run as printed (plus a loopback
address). Answers are compared with `qmd mcp --http` (the same REST API
from the native host) and with the CLI's `query --json`.

    QMD_BIN=~/.cache/qmd/target/release/qmd WASMTIME_BIN=$(scripts/wasmtime-cli.sh) \\
    QMD_TEST_MODEL_DIR=$(scripts/test-weights.sh) "$(scripts/python-env.sh)/bin/pytest" tests/edge
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

QMD_BIN = os.environ.get("QMD_BIN", "")
WASMTIME_BIN = os.environ.get("WASMTIME_BIN", "")
MODEL_DIR = os.environ.get("QMD_TEST_MODEL_DIR", "")
if not (QMD_BIN and WASMTIME_BIN and MODEL_DIR):
    pytest.fail("set QMD_BIN, WASMTIME_BIN and QMD_TEST_MODEL_DIR (see this file's docstring)", pytrace=False)

EVAL_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "qmd-eval"
TIMEOUT_S = 300


def run_qmd(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [QMD_BIN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        pytest.fail(f"qmd {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


def request(port: int, method: str, path: str, body: Any = None, timeout: float = 120) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        return Response(resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()})
    finally:
        conn.close()


class Server:
    """A server process on a loopback port, with its output kept."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], ready: re.Pattern[str]):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        found = threading.Event()
        self.port = 0

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                match = ready.search(line)
                if match and not found.is_set():
                    self.port = int(match.group(1))
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(120):
            self.stop()
            pytest.fail(f"{args[0]} did not start:\n{self.log()}")

    def log(self) -> str:
        return "".join(self.lines)[-6000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Setup:
    root: Path
    env: dict[str, str]
    edge: Server  # as printed: instances reused
    fresh: Server  # an instance per request, as edge platforms run it
    bundled: Server
    native: Server
    build_stdout: str
    queries: list[str]

    def wasm_servers(self) -> list[Server]:
        return [self.edge, self.fresh, self.bundled]


SERVING = re.compile(r"Serving HTTP on http://127\.0\.0\.1:(\d+)/")


def serve_build(printed: str, folder: Path, fresh: bool = False) -> Server:
    """The printed command, run as printed from the build folder (on a free
    loopback port instead of wasmtime's default 0.0.0.0:8080); `fresh`
    drops its instance reuse, for wasmtime's default of an instance per
    request."""
    command = shlex.split(printed.strip().splitlines()[-1])
    assert command[:2] == ["wasmtime", "serve"], printed
    assert command[3:5] == ["--max-instance-reuse-count", "1000"], printed
    if fresh:
        del command[3:5]
    command = [WASMTIME_BIN, "serve", "--addr", "127.0.0.1:0", *command[2:]]
    return Server(command, folder, {"PATH": os.environ.get("PATH", "")}, SERVING)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = Path(os.path.realpath(tmp_path_factory.mktemp("qmd-edge")))
    shutil.copytree(EVAL_DIR / "docs", root / "docs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QMD_")}
    env.update(HOME=str(root), XDG_CACHE_HOME=str(root / "cache"), XDG_CONFIG_HOME=str(root / "config"), NO_COLOR="1")
    env["QMD_EMBED_MODEL"] = MODEL_DIR
    run_qmd(env, root, "collection", "add", str(root / "docs"), "--name", "eval")
    run_qmd(env, root, "context", "add", "qmd://eval/", "Company handbook and engineering notes")
    run_qmd(env, root, "embed")
    build_stdout = run_qmd(env, root, "edge", "build", "--out", str(root / "edge"))
    edge = serve_build(build_stdout, root / "edge")
    fresh = serve_build(build_stdout, root / "edge", fresh=True)
    bundle_stdout = run_qmd(env, root, "edge", "build", "--bundle", "--wasmtime", WASMTIME_BIN, "--out", str(root / "bundle"))
    bundled = serve_build(bundle_stdout, root / "bundle")
    port = free_port()
    listening = re.compile(r"listening on http://127\.0\.0\.1:(\d+)/mcp")
    native = Server([QMD_BIN, "mcp", "--http", "--port", str(port), "--host", "127.0.0.1"], root, env, listening)
    queries = [json.loads(line)["query"] for line in (EVAL_DIR / "queries.jsonl").read_text().splitlines() if line]
    setup = Setup(root, env, edge, fresh, bundled, native, build_stdout, queries)
    yield setup
    for server in [*setup.wasm_servers(), native]:
        server.stop()
    for server in setup.wasm_servers():
        assert "trap" not in server.log().lower(), server.log()


def lex(query: str, **extra: Any) -> dict[str, Any]:
    return {"searches": [{"type": "lex", "query": query}], "limit": 5, **extra}


def hybrid(query: str) -> dict[str, Any]:
    return {"searches": [{"type": "lex", "query": query}, {"type": "vec", "query": query}], "limit": 5}


def test_build_writes_a_snapshot_without_host_paths(setup: Setup):
    edge_dir = setup.root / "edge"
    assert (edge_dir / "qmd-edge.wasm").is_file()
    assert (edge_dir / "index" / "manifest.json").is_file()
    assert (edge_dir / "models" / "embed" / "model.safetensors").is_file()
    models = json.loads((edge_dir / "models" / "models.json").read_text())
    assert models["embed"]["id"] == MODEL_DIR
    config = (edge_dir / "config" / "index.yml").read_text()
    assert str(setup.root) not in config, config
    assert "Company handbook" in config
    # The bundle is complete on its own: a second build replaces it.
    again = run_qmd(setup.env, setup.root, "edge", "build", "--out", str(edge_dir))
    assert again.strip().splitlines()[-1] == setup.build_stdout.strip().splitlines()[-1]


def test_keyword_answers_equal_the_native_servers(setup: Setup):
    for query in setup.queries:
        native = request(setup.native.port, "POST", "/query", lex(query))
        for server in (setup.edge, setup.fresh):
            edge = request(server.port, "POST", "/query", lex(query))
            assert edge.status == native.status == 200, (query, edge.body, native.body)
            assert edge.json() == native.json(), query
    assert any(request(setup.edge.port, "POST", "/search", lex(q)).json()["results"] for q in setup.queries)


def test_keyword_answers_equal_the_cli(setup: Setup):
    for query in setup.queries[:8]:
        cli = json.loads(run_qmd(setup.env, setup.root, "query", "--json", "-n", "5", f"lex: {query}"))
        edge = request(setup.edge.port, "POST", "/query", lex(query)).json()["results"]
        assert [r["docid"] for r in edge] == [r["docid"] for r in cli], query
        for mine, theirs in zip(edge, cli):
            assert abs(mine["score"] - theirs["score"]) <= 0.005 + 1e-9, (query, mine, theirs)


# Two vector similarities this close (as the CLI prints them, to two
# decimals) are a tie the arithmetic decides: the component's wasm SIMD (fused
# multiply-adds in its relaxed build) and native kernels on another CPU round
# differently in the last bits.
NEAR_TIE = 0.01 + 1e-9


def vector_ranking(port: int, query: str) -> list[str]:
    """The server's ranking of every document by vector search alone."""
    answer = request(port, "POST", "/query", {"searches": [{"type": "vec", "query": query}], "limit": 100})
    assert answer.status == 200, (query, answer.body)
    return [r["file"] for r in answer.json()["results"]]


def swapped_pairs(mine: list[str], theirs: list[str]) -> list[tuple[str, str]]:
    """Pairs that `theirs` ranks one way and `mine` the other."""
    position = {f: i for i, f in enumerate(mine)}
    return [
        (a, b)
        for i, a in enumerate(theirs)
        for b in theirs[i + 1 :]
        if a in position and b in position and position[a] > position[b]
    ]


def test_hybrid_answers_match_the_native_servers(setup: Setup):
    """Vector search runs the embedding model inside the component (wasm
    SIMD): the same documents in the same order, scores within 0.01, unless
    the two vector rankings differ, and then only by near-ties (within
    NEAR_TIE in native's similarities): hybrid lists follow from keyword
    ranks, which are equal (above), and vector ranks."""
    compared = 0
    for query in setup.queries:
        edge = request(setup.fresh.port, "POST", "/query", hybrid(query))
        native = request(setup.native.port, "POST", "/query", hybrid(query))
        assert edge.status == native.status == 200, (query, edge.body)
        mine, theirs = edge.json()["results"], native.json()["results"]
        edge_ranking, native_ranking = vector_ranking(setup.fresh.port, query), vector_ranking(setup.native.port, query)
        assert sorted(edge_ranking) == sorted(native_ranking), query
        if edge_ranking != native_ranking:
            similarity = {
                r["file"]: r["score"]
                for r in json.loads(run_qmd(setup.env, setup.root, "vsearch", "--json", "-n", "100", "--min-score", "0", query))
            }
            for a, b in swapped_pairs(edge_ranking, native_ranking):
                assert a in similarity and b in similarity, (query, a, b, similarity)
                gap = abs(similarity[a] - similarity[b])
                assert gap <= NEAR_TIE, f"{query!r}: {a} and {b} swapped, {gap:.3f} apart in similarity"
            continue
        assert [r["file"] for r in mine] == [r["file"] for r in theirs], query
        for a, b in zip(mine, theirs):
            assert abs(a["score"] - b["score"]) <= 0.01 + 1e-9, (query, a, b)
            compared += 1
    # Most queries have no near-tie: the comparison is not vacuous.
    assert compared >= 5 * len(setup.queries) // 2, compared
    # Vectors made a difference: a query with no keyword hit still finds
    # documents through the model.
    semantic = request(setup.edge.port, "POST", "/query", {"searches": [{"type": "vec", "query": "raising money from investors"}]})
    assert semantic.status == 200
    assert semantic.json()["results"], semantic.body


def test_bundled_build_is_one_file_that_answers_alike(setup: Setup):
    """Pre-initialised: no folders to mount, the same answers as the
    mounted build (the same model, loaded before the snapshot)."""
    # The component, and the marker that proves the folder the build's.
    assert sorted(p.name for p in (setup.root / "bundle").iterdir()) == [".qmd-owned", "qmd-edge.wasm"]
    assert (setup.root / "bundle" / "qmd-edge.wasm").stat().st_size > 80_000_000, "the model is inside"
    assert "--dir" not in " ".join(setup.bundled.proc.args)
    for query in setup.queries:
        for body in (lex(query), hybrid(query)):
            bundled = request(setup.bundled.port, "POST", "/query", body)
            mounted = request(setup.edge.port, "POST", "/query", body)
            assert bundled.status == mounted.status == 200, (query, bundled.body)
            assert bundled.json() == mounted.json(), query
    assert request(setup.bundled.port, "GET", "/status").json() == request(setup.edge.port, "GET", "/status").json()
    # A document read through the bundle equals the mounted build's.
    doc = {"file": "qmd://eval/" + sorted(p.name for p in (setup.root / "docs").glob("*.md"))[0]}
    assert request(setup.bundled.port, "POST", "/get", doc).json() == request(setup.edge.port, "POST", "/get", doc).json()


def test_bundle_refuses_a_missing_wasmtime(setup: Setup):
    proc = subprocess.run(
        [QMD_BIN, "edge", "build", "--bundle", "--wasmtime", str(setup.root / "no-wasmtime"), "--out", str(setup.root / "b2")],
        cwd=setup.root, env=setup.env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    assert proc.returncode != 0
    assert "no-wasmtime" in proc.stderr and "wasmtime-cli 48" in proc.stderr, proc.stderr


def test_build_refuses_a_folder_that_is_not_a_build(setup: Setup):
    other = setup.root / "not-a-build"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    proc = subprocess.run(
        [QMD_BIN, "edge", "build", "--out", str(other)], cwd=setup.root, env=setup.env, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "not empty" in proc.stderr, proc.stderr
    assert (other / "notes.txt").read_text() == "mine"


def test_concurrent_requests_answer_as_sequential_ones(setup: Setup):
    bodies = [lex(q) for q in setup.queries] + [hybrid(q) for q in setup.queries[:8]]
    bodies = (bodies * 3)[:64]
    for port in (server.port for server in setup.wasm_servers()):
        sequential = [request(port, "POST", "/query", b).json() for b in bodies]
        with ThreadPoolExecutor(max_workers=64) as pool:
            concurrent = list(pool.map(lambda b: request(port, "POST", "/query", b), bodies))
        assert all(r.status == 200 for r in concurrent)
        assert [r.json() for r in concurrent] == sequential


def test_read_routes(setup: Setup):
    port = setup.edge.port
    health = request(port, "GET", "/health")
    assert health.status == 200 and health.json()["status"] == "ok"
    status = request(port, "GET", "/status").json()
    assert status["totalDocuments"] == len(list((setup.root / "docs").glob("*.md")))
    assert status["hasVectorIndex"] is True
    top = request(port, "POST", "/query", lex("CAP theorem")).json()["results"][0]
    doc = request(port, "POST", "/get", {"file": top["docid"], "lineNumbers": False})
    assert doc.status == 200
    cli = run_qmd(setup.env, setup.root, "get", top["docid"], "--no-line-numbers")
    assert doc.json()["body"].strip() in cli
    assert doc.json()["context"] == "Company handbook and engineering notes"
    sliced = request(port, "POST", "/get", {"file": top["file"] + ":2:2"}).json()
    assert sliced["body"].splitlines()[0].startswith("2: ")
    many = request(port, "POST", "/multi-get", {"pattern": "eval/*.md", "maxBytes": 100000})
    assert many.status == 200
    assert len(many.json()["documents"]) == status["totalDocuments"]


@pytest.mark.parametrize(
    "method,path,body,status,message",
    [
        ("POST", "/query", b"{not json", 400, "Request body must be JSON"),
        ("POST", "/query", b"[]", 400, "must be a JSON object"),
        ("POST", "/query", {"searches": "x"}, 400, "Missing required field: searches"),
        ("POST", "/query", {"searches": [{"type": "sql", "query": "x"}]}, 400, "Invalid search type: sql"),
        ("POST", "/query", {"searches": [{"type": "lex", "query": "x"}], "limit": "9"}, 400, "limit must be a number"),
        ("POST", "/query", {"searches": [{"type": "lex", "query": "x"}], "collections": ["nope"]}, 404, "nope"),
        ("POST", "/query", b"{" + b" " * (2 * 1024 * 1024) + b"}", 413, "Payload Too Large"),
        ("GET", "/query", None, 405, "takes POST"),
        ("GET", "/nowhere", None, 404, "Not Found"),
        ("POST", "/get", {"file": "qmd://eval/../../etc/passwd"}, 404, ""),
        ("POST", "/get", {"file": "/etc/passwd"}, 404, ""),
        ("POST", "/get", {"file": "../../../../etc/hostname"}, 404, ""),
        ("POST", "/get", {"file": "qmd://eval/%2e%2e/%2e%2e/etc/passwd"}, 404, ""),
        ("POST", "/get", {}, 400, "Missing required field: file"),
        ("POST", "/multi-get", {"pattern": "../../**/*"}, 404, ""),
    ],
)
def test_bad_requests_get_clear_4xx(setup: Setup, method: str, path: str, body: Any, status: int, message: str):
    for port in (server.port for server in setup.wasm_servers()):
        resp = request(port, method, path, body)
        assert resp.status == status, resp.body
        assert message.encode() in resp.body, resp.body
        assert b"root:" not in resp.body
        # The instance that answered did not trap, and the server goes on.
        assert request(port, "GET", "/health").status == 200


def test_code_chunking_answers_as_the_native_server(tmp_path: Path):
    """An index whose code was chunked with `--chunk-strategy auto`: the edge
    component (its grammars built in) picks each candidate's chunk as the
    native server does, under the index's strategy and either one asked."""
    root = Path(os.path.realpath(tmp_path))
    (root / "code").mkdir()
    seasons = "".join(
        f'def season_{i}(garden):\n    """Plant the seeds of season {i} in the garden beds, water them every morning '
        f'and note which ones sprout first."""\n    beds = garden.beds({i})\n    return [bed.plant() for bed in beds]\n\n\n'
        for i in range(30)
    )
    (root / "code" / "garden.py").write_text(seasons)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QMD_")}
    env.update(HOME=str(root), XDG_CACHE_HOME=str(root / "cache"), XDG_CONFIG_HOME=str(root / "config"), NO_COLOR="1")
    env["QMD_EMBED_MODEL"] = MODEL_DIR
    run_qmd(env, root, "collection", "add", str(root / "code"), "--name", "code", "--mask", "**/*.py")
    run_qmd(env, root, "embed", "--chunk-strategy", "auto")
    edge = serve_build(run_qmd(env, root, "edge", "build", "--out", str(root / "edge")), root / "edge")
    port = free_port()
    listening = re.compile(r"listening on http://127\.0\.0\.1:(\d+)/mcp")
    native = Server([QMD_BIN, "mcp", "--http", "--port", str(port), "--host", "127.0.0.1"], root, env, listening)
    try:
        lines = {}
        for strategy in [None, "auto", "regex"]:
            body = lex("season 17 seeds sprout", **({"chunkStrategy": strategy} if strategy else {}))
            answers = [request(server.port, "POST", "/query", body) for server in (edge, native)]
            assert [a.status for a in answers] == [200, 200], [a.body for a in answers]
            assert answers[0].json()["results"] == answers[1].json()["results"]
            lines[strategy] = answers[0].json()["results"][0]["snippet"]
        assert lines[None] == lines["auto"], "without the flag, chunks as the index was cut"
    finally:
        edge.stop()
        native.stop()
    assert "trap" not in edge.log().lower(), edge.log()
