/* net/ossl: the slots behind ossl_stubs.S and their loader (net/ossl.h). */
#include "net/ossl.h"

#include <dlfcn.h>
#include <openssl/opensslv.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The headers compiled against name the soname loaded. */
_Static_assert(OPENSSL_VERSION_MAJOR == 3, "ossl_lazy.c loads libssl.so.3");
#define OSSL_SONAME "libssl.so.3"

typedef void (*ossl_fn)(void);

__attribute__((noreturn)) static void
ossl_unloaded(void)
{
	static const char m[] = "warden: internal error: an OpenSSL function was called before "
				"wd_ossl_load() (net/ossl.h)\n";
	(void)!write(2, m, sizeof(m) - 1);
	abort();
}

/* One slot per stub; ossl_stubs.S jumps through wd_ossl_slot_NAME. */
#define OSSL_SYM(name) ossl_fn wd_ossl_slot_##name = ossl_unloaded;
#include "net/ossl_syms.h"
#undef OSSL_SYM

static const struct {
	const char *name;
	ossl_fn *slot;
} syms[] = {
#define OSSL_SYM(name) {#name, &wd_ossl_slot_##name},
#include "net/ossl_syms.h"
#undef OSSL_SYM
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];

static void
load(void)
{
	/* RTLD_LOCAL: nothing of OpenSSL's joins the global scope; dlsym on
	 * the handle searches libssl and its dependency libcrypto. */
	void *h = dlopen(OSSL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(load_error, sizeof(load_error), "%s", e ? e : "dlopen failed");
		return;
	}
	ossl_fn found[WD_ARRAY_SIZE(syms)];
	for (size_t i = 0; i < WD_ARRAY_SIZE(syms); i++) {
		void *p = dlsym(h, syms[i].name);
		if (!p) {
			snprintf(load_error, sizeof(load_error), "%s has no %s", OSSL_SONAME,
				 syms[i].name);
			return; /* no slot filled: all or nothing */
		}
		memcpy(&found[i], &p, sizeof(p));
	}
	for (size_t i = 0; i < WD_ARRAY_SIZE(syms); i++)
		*syms[i].slot = found[i];
}

int
wd_ossl_load(struct wd_err *err)
{
	pthread_once(&once, load);
	if (load_error[0])
		return wd_err_set(
		    err, WD_E_UNSUPPORTED,
		    "the egress proxy needs OpenSSL 3 (%s, Debian package libssl3): %s",
		    OSSL_SONAME, load_error);
	return 0;
}
