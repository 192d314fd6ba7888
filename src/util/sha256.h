/* util/sha256: SHA-256 without libcrypto (see sha256.c for why). */
#ifndef WD_UTIL_SHA256_H
#define WD_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct wd_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes fed so far */
	unsigned char buf[64];
	size_t fill;
};

void wd_sha256_init(struct wd_sha256 *s);
void wd_sha256_update(struct wd_sha256 *s, const void *data, size_t n);
void wd_sha256_final(struct wd_sha256 *s, unsigned char out[32]);
/* 32 bytes as 64 lowercase hex digits and a NUL */
void wd_sha256_hex(const unsigned char md[32], char out[65]);
/* the digest of buf, in hex */
void wd_sha256_hex_of(const void *buf, size_t len, char out[65]);

#endif
