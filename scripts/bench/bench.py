#!/usr/bin/env python3
"""Measures the qmd binary on a corpus; prints a Markdown report.

Called by scripts/bench.sh, which prepares the corpus and an isolated home.
Python 3.11 standard library only.
"""

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

QUERIES = [
    "tar",
    "git commit",
    "list files recursively",
    "compress directory",
    "docker container logs",
    "文件",
    "ssh key",
    "find files by name",
    "kill process",
    "network interfaces",
    "disk usage",
    "change file permissions",
    "python virtual environment",
    "http request",
    "curl",
    "ffmpeg convert video",
    "压缩",
    "ファイル",
    "파일",
    "archivo",
    "fichier",
    "datei",
    "install package",
    "mount drive",
    "regex replace",
    "print working directory",
    "environment variable",
    "systemctl restart service",
    "show git log",
    "unzip",
]
GREP_WORDS = ["tar", "commit", "docker"]
TARGETS = {"index": 10_000.0, "search": 30.0, "open": 5.0}


def child_cpu_ms():
    """User + system CPU of all waited-for children so far, in ms."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Qmd:
    def __init__(self, binary, home):
        self.binary = binary
        self.home = home
        self.env = dict(os.environ)
        for var in ("INDEX_PATH", "QMD_CONFIG_DIR"):
            self.env.pop(var, None)
        self.env.update(
            XDG_CACHE_HOME=os.path.join(home, "cache"),
            XDG_CONFIG_HOME=os.path.join(home, "config"),
            HOME=home,
            NO_COLOR="1",
        )

    @property
    def index_dir(self):
        return os.path.join(self.home, "cache", "qmd", "index.qmdx")

    def reset_index(self):
        """Forgets index and collections; keeps the compiled component."""
        shutil.rmtree(self.index_dir, ignore_errors=True)
        shutil.rmtree(os.path.join(self.home, "config", "qmd"), ignore_errors=True)

    def timed(self, args, capture=False):
        """Wall milliseconds of one run; fails loudly on a non-zero exit."""
        out = subprocess.PIPE if capture else subprocess.DEVNULL
        cpu = child_cpu_ms()
        start = time.perf_counter()
        proc = subprocess.run([self.binary, *args], env=self.env, cwd=self.home, stdin=subprocess.DEVNULL,
                              stdout=out, stderr=subprocess.PIPE)
        ms = (time.perf_counter() - start) * 1000
        self.last_cpu_ms = child_cpu_ms() - cpu
        if proc.returncode != 0:
            raise SystemExit(f"qmd {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
        return ms, (proc.stdout.decode() if capture else None)

    def peak(self, args):
        """(wall ms, peak RSS KiB, method, stdout) of one run; CPU ms in last_cpu_ms."""
        cmd = [self.binary, *args]
        cpu = child_cpu_ms()
        if os.access("/usr/bin/time", os.X_OK):
            start = time.perf_counter()
            proc = subprocess.run(["/usr/bin/time", "-v", *cmd], env=self.env, cwd=self.home,
                                  stdin=subprocess.DEVNULL, capture_output=True)
            ms = (time.perf_counter() - start) * 1000
            err = proc.stderr.decode(errors="replace")
            self.last_cpu_ms = child_cpu_ms() - cpu
            if proc.returncode != 0:
                raise SystemExit(f"qmd {' '.join(args)} exited {proc.returncode}: {err}")
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
            return ms, int(m.group(1)) if m else None, "/usr/bin/time -v", proc.stdout.decode()
        # No GNU time: poll the child's VmHWM (its high-water mark) in /proc.
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=self.env, cwd=self.home, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        hwm = 0
        status = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            try:
                with open(status) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm = max(hwm, int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.005)
        ms = (time.perf_counter() - start) * 1000
        out, err = proc.communicate()
        self.last_cpu_ms = child_cpu_ms() - cpu
        if proc.returncode != 0:
            raise SystemExit(f"qmd {' '.join(args)} exited {proc.returncode}: {err.decode(errors='replace')}")
        return ms, hwm, "polling /proc/<pid>/status VmHWM", out.decode()


def percentile(values, p):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def repeat(qmd, args, runs, cpu=None):
    """Wall ms of each run; CPU ms appended to `cpu` when given."""
    samples = []
    for _ in range(runs):
        samples.append(qmd.timed(args)[0])
        if cpu is not None:
            cpu.append(qmd.last_cpu_ms)
    return samples


def shell_ms(command, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def du_bytes(path):
    apparent = allocated = 0
    for root, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(root, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


def corpus_stats(path):
    files = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            if name.endswith(".md"):
                files += 1
                size += os.lstat(os.path.join(root, name)).st_size
    return files, size


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fmt_ms(ms):
    return f"{ms:,.1f} ms" if ms < 1000 else f"{ms / 1000:,.2f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qmd", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--home", required=True, help="empty directory for the isolated XDG dirs")
    ap.add_argument("--index-runs", type=int, default=3)
    ap.add_argument("--open-runs", type=int, default=20)
    ap.add_argument("--query-runs", type=int, default=3, help="per query; the first is a warm-up")
    args = ap.parse_args()

    qmd = Qmd(args.qmd, args.home)
    load_before = os.getloadavg()
    files, text_bytes = corpus_stats(args.corpus)
    rows = []  # (measurement, value, ratio-or-"", target-or-"")

    # The first command in a fresh cache compiles the component to native
    # code (once per machine and qmd build); keep it out of every other number.
    log("first run: compiling the component")
    first_ms, _ = qmd.timed(["status"])

    # (a) full index, fresh index each run.
    log(f"indexing {files} files, {args.index_runs} run(s)")
    index_runs = []
    for _ in range(args.index_runs):
        qmd.reset_index()
        ms, rss, method, out = qmd.peak(["collection", "add", args.corpus, "--name", "tldr"])
        indexed = re.search(r"Indexed: (\d+) new", out)
        index_runs.append((ms, rss, int(indexed.group(1)) if indexed else None, qmd.last_cpu_ms))
    index_ms = statistics.median(r[0] for r in index_runs)
    index_cpu = statistics.median(r[3] for r in index_runs)
    peak_kib = max(r[1] or 0 for r in index_runs)
    indexed_docs = index_runs[-1][2]

    # (b) index size.
    apparent, allocated = du_bytes(qmd.index_dir)

    # (c) process start vs engine open.
    log("open cost")
    version_cpu = []
    version = repeat(qmd, ["--version"], args.open_runs, version_cpu)
    ls = repeat(qmd, ["ls"], args.open_runs)
    status = repeat(qmd, ["status"], args.open_runs)
    nohit = repeat(qmd, ["search", "zzqqxxnotaword"], args.open_runs)
    base = statistics.median(version)

    # (d) search.
    log(f"searching {len(QUERIES)} queries x {args.query_runs}")
    plain, as_json, per_query, search_cpu = [], [], [], []
    for q in QUERIES:
        cpu = []
        samples = repeat(qmd, ["search", q], args.query_runs, cpu)[1:]
        search_cpu += cpu[1:]
        plain += samples
        _, out = qmd.timed(["search", "--json", "-n", "20", q], capture=True)
        hits = json.loads(out)
        top = hits[0]["file"] if hits else "(no hits)"
        js = [qmd.timed(["search", "--json", "-n", "20", q])[0] for _ in range(args.query_runs - 1)]
        as_json += js
        per_query.append((q, len(hits), top, statistics.median(samples), statistics.median(js)))

    # No-op update: every file unchanged.
    log("no-op update")
    noop_ms, _ = qmd.timed(["update"])
    noop_cpu = qmd.last_cpu_ms

    # (e) grep baseline.
    log("grep baseline")
    grep = []
    for w in GREP_WORDS:
        head = shell_ms(f"grep -rl -- {w} {args.corpus} | head", args.query_runs)
        full = shell_ms(f"grep -rl -- {w} {args.corpus} | wc -l", args.query_runs)
        grep.append((w, head, full))

    def ratio(ms):
        return f"{ms / base:,.1f}×"

    def verdict(ms, target):
        return f"≤ {fmt_ms(target)}: {'met' if ms <= target else 'missed'}"

    med = statistics.median
    rows.append(("process start: `qmd --version` (median)", fmt_ms(base), "1.0×", ""))
    rows.append(("process start: CPU time of `qmd --version` (median)", fmt_ms(med(version_cpu)), "", ""))
    rows.append(("first command in a fresh cache (component compile)", fmt_ms(first_ms), ratio(first_ms), ""))
    rows.append((f"(a) full index: `collection add`, {indexed_docs:,} docs (median of {len(index_runs)})",
                 fmt_ms(index_ms), ratio(index_ms), verdict(index_ms, TARGETS["index"])))
    rows.append(("(a) CPU time (user + sys) of that index run (median)", fmt_ms(index_cpu), "", ""))
    rows.append(("(a) peak RSS while indexing (max over runs)", f"{peak_kib / 1024:,.1f} MiB", "", ""))
    rows.append(("(b) index size on disk (apparent / allocated)",
                 f"{apparent / 2**20:,.1f} / {allocated / 2**20:,.1f} MiB", "", ""))
    rows.append(("(c) `qmd ls` (median)", fmt_ms(med(ls)), ratio(med(ls)), ""))
    rows.append(("(c) open cost = `qmd ls` − `qmd --version`", fmt_ms(med(ls) - base), "",
                 verdict(med(ls) - base, TARGETS["open"])))
    rows.append(("(c) `qmd status` (median)", fmt_ms(med(status)), ratio(med(status)), ""))
    rows.append(("(c) `qmd search <no such word>` (median)", fmt_ms(med(nohit)), ratio(med(nohit)), ""))
    rows.append(("(c) open + empty search = that − `qmd --version`", fmt_ms(med(nohit) - base), "",
                 verdict(med(nohit) - base, TARGETS["open"])))
    for label, samples in (("`qmd search q`", plain), ("`qmd search --json -n 20 q`", as_json)):
        rows.append((f"(d) {label}, median of {len(samples)}", fmt_ms(med(samples)), ratio(med(samples)),
                     verdict(med(samples), TARGETS["search"])))
        p90 = percentile(samples, 90)
        rows.append((f"(d) {label}, p90", fmt_ms(p90), ratio(p90), verdict(p90, TARGETS["search"])))
    rows.append(("(d) CPU time (user + sys) of one `qmd search q` (median)", fmt_ms(med(search_cpu)),
                 f"{med(search_cpu) / max(med(version_cpu), 0.001):,.1f}× CPU", ""))
    rows.append(("no-op `qmd update` (nothing changed): wall / CPU", f"{fmt_ms(noop_ms)} / {fmt_ms(noop_cpu)}",
                 ratio(noop_ms), ""))
    for w, head, full in grep:
        rows.append((f"(e) `grep -rl {w} <corpus> | head` (median)", fmt_ms(head), ratio(head), ""))
        rows.append((f"(e) `grep -rl {w} <corpus>`, full scan (median)", fmt_ms(full), ratio(full), ""))

    load_after = os.getloadavg()
    version_text = subprocess.run([args.qmd, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Binary: `{version_text}` ({args.qmd})  ",
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}  ",
        f"Load average (1/5/15 min) before: {'/'.join(f'{x:.2f}' for x in load_before)}, "
        f"after: {'/'.join(f'{x:.2f}' for x in load_after)}  ",
        f"Corpus: {files:,} `.md` files, {text_bytes / 2**20:,.1f} MiB of text ({args.corpus})  ",
        f"Peak RSS measured with {method}; wall times with `time.perf_counter` around each process.",
        "",
        "| measurement | value | × `--version` | aim |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| {a.replace('|', chr(92) + '|')} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += [
        "",
        "Index runs (wall / peak RSS): "
        + ", ".join(f"{fmt_ms(ms)} / {(rss or 0) / 1024:,.0f} MiB" for ms, rss, _, _ in index_runs),
        "",
        "| query | hits (`-n 20`) | top hit | `search` median | `search --json -n 20` median |",
        "|---|---:|---|---:|---:|",
    ]
    lines += [f"| `{q}` | {h} | `{t}` | {fmt_ms(a)} | {fmt_ms(b)} |" for q, h, t, a, b in per_query]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
