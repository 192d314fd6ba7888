/* net/ossl: OpenSSL (libssl, libcrypto) loaded when a run first needs it.
 *
 * Statically linked, OpenSSL's tables cost every launch of warden
 * relocations over ~380 KB and a CPUID probe: 0.39 ms of the 3.1 ms that
 * `warden run -- /bin/true` added over bare exec (bench/spawn.sh, 150
 * alternating runs: +2.74 ms without it), though most runs have no
 * network and never call it.  So the CLI and the monitor do not link it:
 * each OpenSSL function they reference (the proxy's, and the ones the
 * static libldns.a references) is a one-instruction stub that jumps
 * through a slot (ossl_stubs.S), and wd_ossl_load() fills the slots from
 * libssl.so.3 once.  Until then a slot points at a function that says so
 * and aborts: a call before the load is a bug, never a silent no-op.
 *
 * Call wd_ossl_load() before the first OpenSSL call on a path: the proxy
 * does, in net_proxy_new().  libwarden.so (and builds on other CPUs than
 * x86-64) link OpenSSL as before; there wd_ossl_load() returns 0. */
#ifndef WD_NET_OSSL_H
#define WD_NET_OSSL_H

#include "util/util.h"

/* 0, or WD_E_UNSUPPORTED naming what is missing (the library or a symbol). */
int wd_ossl_load(struct wd_err *err);

#endif
