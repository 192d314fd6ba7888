/* util/sha256: SHA-256 (FIPS 180-4, section 6.2) for the policy digest,
 * the audit trail's hash chain and approval ids.
 *
 * Why not libcrypto's: those three run on every `warden run` that has a
 * policy, and libcrypto is loaded only when a run needs it (net/ossl.c: its
 * relocations cost every launch ~0.4 ms, measured with bench/spawn.sh).
 * The inputs here are short (a policy, one audit line), where a portable
 * implementation is as fast as an accelerated one; bulk hashing of file
 * contents (workspace changes) stays with libcrypto.  Checked against the
 * FIPS 180-2 examples and against libcrypto on random inputs
 * (tests/unit/util). */
#include "util/sha256.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* a macro, not a function: an -O0 function is not inlined into the
 * optimised compress() below */
#define ror(x, n) ((uint32_t)((x) >> (n)) | (uint32_t)((x) << (32 - (n))))

/* The block function optimised in unoptimised builds too (gcc; clang has
 * no such attribute): the debug trees the sanitizers run in (-O0) hashed
 * at 23 MB/s under ASan+UBSan, against 90-110 MB/s this way and 285 MB/s
 * in a release build (32 MiB, this machine).  62 % of unit-audit's time
 * under ASan was compress() and ror(), four 16 MiB audit lines hashed a
 * few times each, which took it past its 30 s timeout at load. */
#if !defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
#define HOT_UNOPTIMISED __attribute__((optimize("O2")))
#else
#define HOT_UNOPTIMISED
#endif

HOT_UNOPTIMISED static void
compress(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int t = 0; t < 64; t++) {
		uint32_t t1 =
		    k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
}

void
wd_sha256_init(struct wd_sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

void
wd_sha256_update(struct wd_sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	s->len += n;
	if (s->fill) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->buf + s->fill, p, take);
		s->fill += take;
		p += take;
		n -= take;
		if (s->fill < 64)
			return;
		compress(s->h, s->buf);
		s->fill = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		compress(s->h, p);
	if (n) {
		memcpy(s->buf, p, n);
		s->fill = n;
	}
}

void
wd_sha256_final(struct wd_sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->len * 8;
	/* the padding: a 1 bit, zeros to 56 bytes mod 64, the length in bits */
	s->buf[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->buf + s->fill, 0, 64 - s->fill);
		compress(s->h, s->buf);
		s->fill = 0;
	}
	memset(s->buf + s->fill, 0, 56 - s->fill);
	for (int i = 0; i < 8; i++)
		s->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress(s->h, s->buf);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

void
wd_sha256_hex(const unsigned char md[32], char out[65])
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

void
wd_sha256_hex_of(const void *buf, size_t len, char out[65])
{
	struct wd_sha256 s;
	unsigned char md[32];
	wd_sha256_init(&s);
	wd_sha256_update(&s, buf, len);
	wd_sha256_final(&s, md);
	wd_sha256_hex(md, out);
}
