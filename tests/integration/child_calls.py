#!/usr/bin/env python3
"""No sanitizer interceptor after clone (docs/threat-model.md, "Raw clones").

A sandbox's pid 1, the command's process, the cgroup keeper and the idmap
holder are raw clones of a possibly multithreaded program.  In a
sanitizer build every libc function the runtime intercepts (recvmsg,
close, dup2, epoll_wait, clock_gettime, ...) may take a lock of the
runtime's (TSan's fd table allocates under a StaticSpinMutex), and a
raw clone copies such a lock held when another thread had it: two pid 1s
of api-concurrent under TSan spun in sched_yield inside
__interceptor_recvmsg -> StaticSpinMutex::Lock until the 600 s timeout.

So: walk the call graph of libwarden's objects (objdump -dr) from each
entry point that runs after a raw clone, and fail on any reachable call
to a function that libtsan or libasan exports (an interceptor), except
the memory and string functions, whose interceptors only check shadow
ranges and take no lock.  Each finding names the chain of calls.

    child_calls.py OBJDIR [OBJDIR...]

exit 0: clean; 1: findings; 77: no objdump or no sanitizer runtime here.
"""
import os
import re
import shutil
import subprocess
import sys

# Entry points that run after a raw clone (their callers' code before the
# clone is the supervisor's).
ROOTS = [
    "jail_pid1_main",  # jail/pid1.c: the sandbox's pid 1 (supervise/local.c)
    "jail_exec_main",  # jail/exec.c: the command's process, cloned by pid 1
    "keeper_main",  # supervise/keeper.c
    "keeper_entry",
    "holder_main",  # jail/hostpath.c: the idmap holder
]

# Interceptors that take no lock of the runtime: they check the shadow
# of the ranges given (TSan ignores it after jail_child_sanitizer) and
# call the real function.
LOCK_FREE = {
    "memcpy", "memset", "memmove", "memcmp", "memchr", "strlen", "strnlen",
    "strcmp", "strncmp", "bcmp",
}


def runtime_symbols():
    """Names libtsan and libasan define: what they intercept."""
    names = set()
    found = 0
    for lib in ("libtsan.so", "libasan.so"):
        path = subprocess.run(["gcc", "-print-file-name=" + lib], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):
            continue
        found += 1
        out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TWi":
                names.add(f[2].split("@")[0])
    return names if found else None


def libc_name(sym):
    """__read_chk -> read, __open_2 -> open (fortified wrappers call the
    function inside libc, but a sanitizer build calls it directly)."""
    m = re.fullmatch(r"__(\w+?)_chk", sym) or re.fullmatch(r"__(\w+?)_2", sym)
    return m.group(1) if m else sym


def parse(obj):
    """Functions of one object: {key: set of callee references}, where a
    key is (obj, name) for a local symbol and name for a global one."""
    table = subprocess.run(["objdump", "-t", obj], capture_output=True, text=True,
                           check=True).stdout
    local, defined = set(), set()
    for line in table.splitlines():
        m = re.match(r"^[0-9a-f]+ (.)(.{6}) (\S+)\s+[0-9a-f]+\s+(?:\.hidden )?(\S+)$", line)
        if not m or "F" not in m.group(2):
            continue
        (local if m.group(1) == "l" else defined).add(m.group(4))
    dis = subprocess.run(["objdump", "-dr", "-w", "--no-show-raw-insn", obj],
                         capture_output=True, text=True, check=True).stdout
    funcs, sections = {}, {}
    cur = section = None
    for line in dis.splitlines():
        m = re.match(r"^Disassembly of section (\S+):", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            name = m.group(1)
            cur = (obj, name) if name in local or name not in defined else name
            funcs.setdefault(cur, set())
            sections.setdefault(section, []).append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"R_X86_64_\w+\s+([^\s+-]+)", line)
        if m:
            funcs[cur].add(m.group(1))
            continue
        m = re.search(r"\b(?:call|jmp)\s+[0-9a-f]+ <([^+>]+)", line)
        if m:
            funcs[cur].add(m.group(1))
    return funcs, sections, local


def main():
    if not shutil.which("objdump") or not shutil.which("nm"):
        print("child_calls: objdump/nm (binutils) not installed")
        return 77
    runtime = runtime_symbols()
    if runtime is None:
        print("child_calls: neither libtsan nor libasan is installed (gcc's runtimes)")
        return 77
    objs = []
    for d in sys.argv[1:]:
        for root, _, files in os.walk(d):
            objs += [os.path.join(root, f) for f in files if f.endswith(".o")]
    if not objs:
        print("child_calls: no objects under", sys.argv[1:])
        return 1
    funcs, sections, locals_of = {}, {}, {}
    sanitized = False
    for o in sorted(objs):
        f, s, loc = parse(o)
        funcs.update(f)
        for k, v in s.items():
            sections.setdefault((o, k), []).extend(v)
        locals_of[o] = loc
        # instrumentation, not jail/exec.c's weak reference to TSan's switch
        if any(r.startswith(("__tsan_func_entry", "__tsan_read", "__asan_"))
               for callees in f.values() for r in callees):
            sanitized = True
    allowed = set(LOCK_FREE)
    if not sanitized:
        # jail/pid1.c's non-sanitizer branch starts the command with glibc's
        # clone() (CLONE_VM|CLONE_VFORK on a stack of its own): no runtime
        # is in that program, and its sanitizer branch makes a raw clone.
        allowed.add("clone")

    def resolve(obj, ref):
        if ref.startswith(".text"):
            return sections.get((obj, ref), [])
        if ref in locals_of.get(obj, ()):
            return [(obj, ref)]
        return [ref]

    missing = [r for r in ROOTS if r not in funcs and not any(
        k[1] == r for k in funcs if isinstance(k, tuple))]
    if len(missing) == len(ROOTS):
        print("child_calls: none of the entry points found:", ", ".join(ROOTS))
        return 1
    seen, findings = {}, {}
    stack = []
    for r in ROOTS:
        for k in funcs:
            if k == r or (isinstance(k, tuple) and k[1] == r):
                seen.setdefault(k, None)
                stack.append(k)
    while stack:
        k = stack.pop()
        obj = k[0] if isinstance(k, tuple) else next(
            (o for (o, _sec), v in sections.items() if k in v), None)
        for ref in sorted(funcs.get(k, ())):
            for t in resolve(obj, ref):
                if t in funcs:
                    if t not in seen:
                        seen[t] = k
                        stack.append(t)
                    continue
                if not isinstance(t, str) or t.startswith((".", "__tsan_", "__asan_",
                                                           "__ubsan_", "__sanitizer_")):
                    continue
                name = libc_name(t)
                if name in runtime and name not in allowed:
                    findings.setdefault((name, t), k)

    def chain(k):
        out = []
        while k is not None:
            out.append(k[1] if isinstance(k, tuple) else k)
            k = seen.get(k)
        return " <- ".join(out)

    print(f"child_calls: {len(seen)} functions reachable after clone from "
          f"{', '.join(r for r in ROOTS if r not in missing)}"
          f" ({'sanitized' if sanitized else 'unsanitized'} objects)")
    for (name, sym), k in sorted(findings.items()):
        print(f"intercepted call after clone: {sym}"
              f"{' (' + name + ')' if name != sym else ''} in {chain(k)}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
