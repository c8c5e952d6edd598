#!/usr/bin/env python3
"""Import circles between the files of the workspace's crates.

Every `crate::`, `super::` and `self::` path in a file (in `use` trees,
braces expanded, and inline) is resolved to the file that defines the
longest module it names; files that import one another in a circle are a
strongly connected group. A circle listed in KNOWN is reported but
allowed; any other fails the run. KNOWN is empty: the last circles (the
model code's) went in issue M, and none may come back.
Test modules (`#[cfg(test)] mod … { … }` and `tests.rs` files) are left
out: a test may import what it tests from anywhere.

    python3 scripts/module-cycles.py        # exit 1 on a circle not in KNOWN
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["core/src", "core/base/src", "core/models/src", "host/src", "web/src", "web/site/src", "web/site/filter/src", "web/grammars/src", "tests/src"]

# Circles allowed while they are taken apart, as sets of files (a circle
# within one of these, as it shrinks, is allowed). None today.
KNOWN: list[set[str]] = []

USE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
INLINE = re.compile(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+")
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
COMMENT = re.compile(r"//[^\n]*")


def module_files(src):
    """Module path (tuple of names) -> file, for one crate's src folder."""
    out = {}
    for folder, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs") or name == "tests.rs" or name.endswith("_tests.rs"):
                continue
            parts = os.path.relpath(os.path.join(folder, name), src)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            out[tuple(parts)] = os.path.join(folder, name)
    return out


def without_tests(text):
    """The text with `#[cfg(test)] mod x { … }` blocks cut out (braces counted)."""
    while True:
        found = TEST_MOD.search(text)
        if not found:
            return text
        depth, at = 1, found.end()
        while at < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
        text = text[: found.start()] + text[at:]


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases dropped)."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree.split("as")[0] if "::" in tree else tree]
    head, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [path for part in parts if part for path in expand(head + part)]


def resolve(path, here, modules):
    """The file defining the longest module `path` names, seen from module `here`."""
    names = path.split("::")
    if names[0] == "crate":
        base, rest = (), names[1:]
    else:
        base = list(here)
        rest = names
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super" and base:
                base.pop()
            rest = rest[1:]
        base = tuple(base)
    for n in range(len(rest), -1, -1):
        target = base + tuple(rest[:n])
        if target in modules:
            return modules[target]
    return None


def edges(src):
    modules = module_files(src)
    graph = {file: set() for file in modules.values()}
    for here, file in modules.items():
        ancestors = {modules[here[:n]] for n in range(len(here)) if here[:n] in modules}
        with open(file, encoding="utf-8") as f:
            text = COMMENT.sub("", without_tests(f.read()))
        paths = [p for tree in USE.findall(text) for p in expand(tree)]
        paths += INLINE.findall(USE.sub("", text))
        for path in paths:
            target = resolve(path.replace("::self", ""), here, modules)
            # A module naming its own ancestors (a `mod.rs` or `lib.rs`
            # above it) reads its container, not a sibling.
            if target and target != file and target not in ancestors:
                graph[file].add(target)
    return graph


def circles(graph):
    """Strongly connected groups of more than one file (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    out.append(group)
    return out


def main():
    os.chdir(ROOT)
    new = []
    for src in CRATES:
        if not os.path.isdir(src):
            continue
        for group in circles(edges(src)):
            known = any(group <= circle for circle in KNOWN)
            print(("known (issue M): " if known else "NEW: ") + " <-> ".join(sorted(group)))
            if not known:
                new.append(group)
    if new:
        print(f"{len(new)} new import circle(s): make the imports go one way (a lower module for what both use)")
        return 1
    print("no import circles beyond the known ones" if KNOWN else "no import circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
