/* server/base.h - the small helpers every part of src/server uses
 * (base.c): allocation that aborts, the clock, an error in a wd_err.
 * The lowest of the server's headers: it includes none of them, nor the
 * library's (struct wd_err is warden.h's, left incomplete here). */
#ifndef WD_SERVER_BASE_H
#define WD_SERVER_BASE_H

#include <stddef.h>
#include <stdint.h>

struct wd_err;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* an image digest: "sha256:" and 64 hex digits, and the NUL */
#define SRV_DIGEST_LEN 72
#define SRV_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* allocation aborts on failure: a server out of memory cannot answer */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) SRV_PRINTF(1, 2);
uint64_t now_ns(void);
/* Fill err (bad input, errno e) and return -e. */
int err_set(struct wd_err *err, int e, const char *fmt, ...) SRV_PRINTF(3, 4);

#endif
