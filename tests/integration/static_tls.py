#!/usr/bin/env python3
"""The static thread-local storage of warden's programs and library stays
small.

Every process start zeroes its static TLS block (ld.so), and so does every
pthread_create (the proxy's threads, the server's), in pages touched for
the first time: a 64 KiB `static __thread` buffer in two workspace
functions made it 128 KiB, 32 page faults at every `warden run` and every
thread, copied into each sandbox's pid 1 (docs/performance.md).  A buffer
that size belongs on the heap or the stack of the function that needs it.

  static_tls.py ELF...     exit 1 naming each file whose PT_TLS is larger
"""
import struct
import sys

LIMIT = 16384  # bytes: warden's own thread-locals are a few hundred
PT_TLS = 7


def tls_size(path):
    """p_memsz of the ELF64 file's PT_TLS header, 0 without one"""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            raise ValueError("%s: not an ELF64 file" % path)
        end = "<" if head[5] == 1 else ">"
        phoff, = struct.unpack_from(end + "Q", head, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, = struct.unpack_from(end + "I", table, i * phentsize)
        if p_type == PT_TLS:
            return struct.unpack_from(end + "Q", table, i * phentsize + 40)[0]
    return 0


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for p in paths:
        n = tls_size(p)
        print("%s: static TLS %d bytes (limit %d)" % (p, n, LIMIT))
        if n > LIMIT:
            print("FAIL %s: static TLS of %d bytes: a large __thread or _Thread_local "
                  "buffer (nm -S --size-sort on the objects finds it)" % (p, n))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
