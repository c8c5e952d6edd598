#!/usr/bin/env python3
"""Embedding speed of qmd next to sentence-transformers (PyTorch fp32) on
the same machine, the same texts and the same model shape; prints a
Markdown report. Run by scripts/bench-gpu.sh (see there for the set-up).

Measures, each in the same run:
- qmd `embed` chunks/s on the GPU and on the CPU at 1 and N threads, with
  the peak RSS of each run;
- sentence-transformers texts/s on the GPU (batch 64 and 256) and on the
  CPU with N threads (skipped, and said so, where PyTorch is missing);
- the worst cosine between qmd's GPU and CPU vectors of the same texts;
- one CLI `vsearch` with `auto`, `QMD_DEVICE=cpu` and `QMD_DEVICE=gpu`;
- the MCP server's peak RSS with the embedding model loaded.
Python 3.11 standard library, plus torch/sentence-transformers if present.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = ["compress a directory", "list open network ports", "convert a video to gif", "show disk usage"]


def run_measured(cmd, env, cwd=None):
    """Runs cmd; returns (seconds, peak RSS in MiB, stdout)."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "s = time.perf_counter() - t\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "print(f'\\n@@ {s} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr)\n"
        "sys.exit(r.returncode)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe, *cmd], env=env, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    secs, rss_kib = re.findall(r"@@ (\S+) (\d+)", r.stderr)[-1]
    return float(secs), int(rss_kib) / 1024, r.stdout


def texts_of(corpus, count):
    pages = sorted(Path(corpus).rglob("*.md"))[:count]
    return pages, [p.read_text(encoding="utf-8", errors="replace") for p in pages]


class Qmd:
    """The qmd binary with a private home, and one index per name."""

    def __init__(self, binary, model, work):
        self.binary, self.work = binary, Path(work)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "QMD_", "RAYON_"))}
        self.env.update(HOME=str(self.work / "home"), QMD_EMBED_MODEL=str(model), NO_COLOR="1")

    def env_with(self, **extra):
        env = dict(self.env)
        env.update({k: str(v) for k, v in extra.items() if v is not None})
        return env

    def run(self, args, **extra):
        return run_measured([self.binary, *args], self.env_with(**extra))

    def collection(self, index, pages):
        folder = self.work / f"docs-{index}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for i, page in enumerate(pages):
            shutil.copy(page, folder / f"{i:05d}-{page.name}")
        self.run(["--index", index, "collection", "add", str(folder), "--name", "pages"])

    def embed(self, index, **extra):
        secs, rss, out = self.run(["--index", index, "embed", "-f"], **extra)
        chunks = int(re.search(r"Embedded (\d+) chunks", out).group(1))
        return chunks / secs, chunks, rss, secs


def sentence_transformers_rates(model_dir, texts, threads):
    """texts/s of sentence-transformers fp32: GPU at batch 64 and 256, CPU."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer, models
    except ImportError as e:
        return {"error": f"sentence-transformers not available ({e})"}
    rates = {}
    modules = [
        models.Transformer(str(model_dir), max_seq_length=256),
        models.Pooling(384, "mean"),
        models.Normalize(),
    ]
    torch.set_num_threads(threads)
    devices = ["cuda"] if torch.cuda.is_available() else []
    for device in devices + ["cpu"]:
        model = SentenceTransformer(modules=modules, device=device)
        batches = [64, 256] if device == "cuda" else [32]
        sample = texts if device == "cuda" else texts[: max(64, len(texts) // 8)]
        for batch in batches:
            model.encode(sample[:batch], batch_size=batch)  # warm-up
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            model.encode(sample, batch_size=batch)
            if device == "cuda":
                torch.cuda.synchronize()
            rates[f"{device} batch {batch}"] = len(sample) / (time.perf_counter() - start)
    return rates


def worst_cosine(embed_bin, model_dir, texts):
    data = json.dumps(texts)
    vectors = {}
    for device in ["cpu", "gpu"]:
        r = subprocess.run([embed_bin, str(model_dir), device], input=data, capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip().splitlines()[-1:]
        vectors[device] = json.loads(r.stdout)
    worst = min(sum(a * b for a, b in zip(u, v)) for u, v in zip(vectors["cpu"], vectors["gpu"]))
    return worst, []


def vsearch_latency(qmd, index, runs, **extra):
    times = []
    for query in QUERIES * runs:
        secs, _, _ = qmd.run(["--index", index, "vsearch", query, "-n", "5"], **extra)
        times.append(secs)
    return statistics.median(times)


def mcp_peak_rss(qmd, index):
    """Starts `qmd mcp`, asks one query (the model loads), reads VmHWM."""
    proc = subprocess.Popen(
        [qmd.binary, "--index", index, "mcp"],
        env=qmd.env_with(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )

    def call(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            return json.loads(proc.stdout.readline())

    try:
        call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        call({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "query", "arguments": {"searches": [{"type": "vec", "query": QUERIES[0]}], "limit": 5}}})
        status = Path(f"/proc/{proc.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024
    finally:
        proc.kill()
        proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--qmd", required=True)
    parser.add_argument("--embed-bin", required=True, help="qmd-embed, for the GPU/CPU cosine")
    parser.add_argument("--model", required=True, help="a MiniLM-shaped model directory")
    parser.add_argument("--corpus", required=True, help="a folder of tldr pages")
    parser.add_argument("--gpu-pages", type=int, default=4000)
    parser.add_argument("--cpu-pages", type=int, default=400)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--skip-gpu", action="store_true", help="a machine without a GPU: CPU rows only")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="qmd-gpu-bench.")
    qmd = Qmd(args.qmd, args.model, work)
    rows = []

    def row(what, value, note=""):
        rows.append((what, value, note))
        print(f"  {what}: {value} {note}", file=sys.stderr, flush=True)

    pages, texts = texts_of(args.corpus, max(args.gpu_pages, args.cpu_pages))
    qmd.collection("cpu", pages[: args.cpu_pages])
    one = qmd.embed("cpu", QMD_DEVICE="cpu", RAYON_NUM_THREADS=1)
    all_threads = qmd.embed("cpu", QMD_DEVICE="cpu", RAYON_NUM_THREADS=args.threads)
    row("qmd embed, CPU, 1 thread", f"{one[0]:.1f} chunks/s", f"({one[1]} chunks, peak RSS {one[2]:.0f} MiB)")
    row(f"qmd embed, CPU, {args.threads} threads", f"{all_threads[0]:.1f} chunks/s",
        f"({all_threads[0] / one[0]:.2f}× 1 thread, peak RSS {all_threads[2]:.0f} MiB)")
    if not args.skip_gpu:
        qmd.collection("gpu", pages[: args.gpu_pages])
        gpu = qmd.embed("gpu", QMD_DEVICE="gpu")
        row("qmd embed, GPU", f"{gpu[0]:.1f} chunks/s", f"({gpu[1]} chunks in {gpu[3]:.1f} s, peak RSS {gpu[2]:.0f} MiB)")
        worst, error = worst_cosine(args.embed_bin, args.model, texts[:200])
        row("worst cosine, qmd GPU vs CPU vectors (200 pages)", f"{worst:.7f}" if worst is not None else "n/a",
            " ".join(error))
    st = sentence_transformers_rates(args.model, texts[: args.gpu_pages], args.threads)
    if "error" in st:
        row("sentence-transformers", "n/a", st["error"])
    for name, rate in st.items():
        if name == "error":
            continue
        ours = all_threads[0] if name.startswith("cpu") else (None if args.skip_gpu else gpu[0])
        ratio = f"(qmd = {ours / rate:.2f}×)" if ours else ""
        row(f"sentence-transformers fp32, {name}" + (f", {args.threads} threads" if name.startswith("cpu") else ""),
            f"{rate:.1f} texts/s", ratio)
    index = "cpu"
    for label, device in [("auto", None), ("QMD_DEVICE=cpu", "cpu")] + ([] if args.skip_gpu else [("QMD_DEVICE=gpu", "gpu")]):
        row(f"CLI vsearch, {label} (median of {len(QUERIES) * 3})",
            f"{vsearch_latency(qmd, index, 3, QMD_DEVICE=device) * 1000:.0f} ms")
    row("MCP server peak RSS, embedding model loaded", f"{mcp_peak_rss(qmd, index):.0f} MiB")

    print("| measure | value | |")
    print("|---|---:|---|")
    for what, value, note in rows:
        print(f"| {what} | {value} | {note} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
