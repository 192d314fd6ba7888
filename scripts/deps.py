#!/usr/bin/env python3
"""deps.py [SOURCE_ROOT]: print warden's module graph and check its layering.

The modules and their order are the code block under "## Modules" in
docs/architecture.md, read top to bottom: a line "src/NAME ..." is a
module, and one ending "front end" is a front end. The arrows are the
`#include "MODULE/..."` lines of src/*/*.c and src/*/*.h (an include of
the module's own folder, or of "warden.h", is no arrow). Checked:

  1. the doc's modules are the folders under src/ (and the reverse), and
     src/meson.build's subdir() calls list them lowest first, the doc's
     order reversed: the map and the build cannot drift apart;
  2. every arrow points down the doc's list ("Dependencies point down the
     list"): an arrow to a module above is refused with the file:line of
     the include;
  3. a front end calls only include/warden.h and front ends below it;
  4. no cycle between modules (reported with its members; with 2 it
     cannot happen, but a cycle is named as one);
  5. inside a module, no cycle among its headers (`#include "MOD/x.h"`
     in src/MOD/*.h): a folder's headers read top-down, as src/server's
     did not when one header held all of it;
  6. the server's message layer (server_pure_sources in
     src/server/meson.build, all the fuzz target links) reaches, through
     the server's headers, none that includes the library (warden.h) or
     the server's own API (server/server.h): it knows nothing of sandboxes.

Prints the graph ("core -> jail (3: src/core/box.c:11, ...)") then each
problem; exits 1 on any, 0 otherwise.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"')
MODULE_LINE = re.compile(r"^src/([a-z0-9_]+)\s")
SUBDIR = re.compile(r"^\s*subdir\('([a-z0-9_]+)'\)")


def doc_modules(root, problems):
    """[(name, front_end, line)] from docs/architecture.md's Modules block."""
    path = os.path.join(root, "docs/architecture.md")
    mods, in_section, in_block = [], False, False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("## "):
                in_section = line.strip() == "## Modules"
                continue
            if in_section and line.startswith("```"):
                if in_block:
                    break
                in_block = True
                continue
            if in_block:
                m = MODULE_LINE.match(line)
                if m:
                    mods.append((m.group(1), line.rstrip().endswith("front end"), n))
    if not mods:
        problems.append("docs/architecture.md: no module list (a ``` block of 'src/NAME' "
                        "lines under '## Modules')")
    return mods


def meson_modules(root):
    path = os.path.join(root, "src/meson.build")
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = SUBDIR.match(line)
            if m:
                out.append((m.group(1), n))
    return out


def arrows(root, modules):
    """{(from, to): [file:line, ...]} over src/*/*.[ch]."""
    edges = {}
    for mod in sorted(modules):
        d = os.path.join(root, "src", mod)
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            rel = f"src/{mod}/{name}"
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) != mod:
                        edges.setdefault((mod, m.group(1)), []).append(f"{rel}:{n}")
    return edges


LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PURE_LIST = re.compile(r"server_pure_sources\s*=\s*files\(([^)]*)\)", re.S)


def local_includes(path):
    """[(included "x/y.h" or "warden.h", line)] of one file."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = LOCAL_INCLUDE.match(line)
            if m:
                out.append((m.group(1), n))
    return out


def header_graph(root, mod):
    """{header: [(included header of the same module, line)]} for src/MOD/*.h."""
    d = os.path.join(root, "src", mod)
    graph = {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".h"):
            graph[f"{mod}/{name}"] = [(inc, n) for inc, n in
                                      local_includes(os.path.join(d, name))
                                      if inc.startswith(mod + "/")]
    return graph


def pure_layer(root, problems):
    """Check 6: the server's message layer reaches no header of the library."""
    build = os.path.join(root, "src/server/meson.build")
    with open(build, encoding="utf-8") as f:
        m = PURE_LIST.search(f.read())
    if not m:
        problems.append("src/server/meson.build: no server_pure_sources = files(...) list")
        return
    banned = ("warden.h", "server/server.h")
    for src in re.findall(r"'([^']+)'", m.group(1)):
        path = os.path.join(root, "src/server", src)
        todo = [(inc, f"src/server/{src}:{n}") for inc, n in local_includes(path)
                if inc.startswith("server/") and inc.endswith(".h")]
        seen = set()
        while todo:
            inc, via = todo.pop()
            if inc in seen:
                continue
            seen.add(inc)
            hpath = os.path.join(root, "src", inc)
            if not os.path.exists(hpath):
                continue
            for sub, n in local_includes(hpath):
                where = f"{via} -> src/{inc}:{n}"
                if sub in banned:
                    problems.append(f"{where}: the message layer ({src}, in the fuzz target) "
                                    f"reaches {sub}; keep it to jansson and the pure headers")
                elif sub.startswith("server/"):
                    todo.append((sub, where))


def cycles(nodes, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    succ = {v: sorted(b for (a, b) in edges if a == v) for v in nodes}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = []
    doc = doc_modules(root, problems)
    order = [m for m, _, _ in doc]
    front = {m for m, fe, _ in doc if fe}
    rank = {m: i for i, m in enumerate(order)}
    folders = sorted(e for e in os.listdir(os.path.join(root, "src"))
                     if os.path.isdir(os.path.join(root, "src", e)))

    # 1. the map, the folders and the build name the same modules
    for m, _, n in doc:
        if m not in folders:
            problems.append(f"docs/architecture.md:{n}: module src/{m} has no folder under src/")
    for m in folders:
        if m not in rank:
            problems.append(f"src/{m}: a folder docs/architecture.md's module list does not name")
    build = meson_modules(root)
    want = list(reversed(order))
    got = [m for m, _ in build]
    if got != want:
        problems.append("src/meson.build: subdir() order " + " ".join(got) +
                        "; docs/architecture.md's list, lowest first, is " + " ".join(want))

    edges = arrows(root, [m for m in folders])
    print("module graph (docs/architecture.md's order, top first):")
    for m in order + [f for f in folders if f not in rank]:
        outs = sorted(((b, sites) for (a, b), sites in edges.items() if a == m),
                      key=lambda e: rank.get(e[0], -1))
        tag = " (front end)" if m in front else ""
        if not outs:
            print(f"  {m}{tag}: no arrows")
        for b, sites in outs:
            more = f", +{len(sites) - 2}" if len(sites) > 2 else ""
            print(f"  {m}{tag} -> {b} ({len(sites)}: {', '.join(sites[:2])}{more})")

    # 2, 3. arrows point down; front ends reach only front ends
    for (a, b), sites in sorted(edges.items()):
        if b not in rank:
            problems.append(f"{sites[0]}: src/{a} includes {b}/, which is no module "
                            "of docs/architecture.md")
        elif a in rank and rank[b] < rank[a]:
            problems.append(f"{sites[0]}: upward arrow {a} -> {b} ({b} is above {a} in "
                            f"docs/architecture.md; {len(sites)} include(s))")
        if a in front and b not in front:
            problems.append(f"{sites[0]}: front end {a} includes {b}/ (a front end calls "
                            "include/warden.h only)")

    # 4. cycles
    for comp in cycles(order + [f for f in folders if f not in rank], edges):
        problems.append("cycle between modules: " + " <-> ".join(comp))

    # 5. no cycle among a module's own headers
    nheaders = 0
    for mod in folders:
        graph = header_graph(root, mod)
        nheaders += len(graph)
        hedges = {(h, inc): [n] for h, incs in graph.items() for inc, n in incs}
        for comp in cycles(sorted(graph), hedges):
            problems.append("cycle between headers of src/" + mod + ": " +
                            " <-> ".join(f"src/{h}" for h in comp))
        for h, incs in graph.items():
            if any(inc == h for inc, _ in incs):
                problems.append(f"src/{h}: includes itself")

    # 6. the server's message layer knows nothing of the library
    if "server" in folders:
        pure_layer(root, problems)

    for p in problems:
        print("deps: " + p)
    if problems:
        print(f"layering: {len(problems)} problem(s)")
        return 1
    print(f"layering: {len(order)} modules, {len(edges)} arrows, all pointing down; "
          f"{nheaders} headers, no cycle among a module's own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
