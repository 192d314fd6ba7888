/* util/sha256 against the FIPS 180-2 examples and against libcrypto. */
#include "net/ossl.h"
#include "util/sha256.h"
#include "util/util.h"

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static void
hex_of(const char *s, size_t n, char out[65])
{
	wd_sha256_hex_of(s, n, out);
}

Test(wd_sha256, fips_examples)
{
	char h[65];
	hex_of("abc", 3, h);
	cr_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of("", 0, h);
	cr_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(two, strlen(two), h);
	cr_assert_str_eq(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

	/* a million 'a', fed in uneven pieces across block boundaries */
	struct wd_sha256 s;
	unsigned char md[32];
	char a[1000];
	memset(a, 'a', sizeof(a));
	wd_sha256_init(&s);
	size_t left = 1000000, step = 1;
	while (left) {
		size_t n = step < left ? step : left;
		wd_sha256_update(&s, a, n);
		left -= n;
		step = step * 7 % 997 + 1;
	}
	wd_sha256_final(&s, md);
	wd_sha256_hex(md, h);
	cr_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every length from 0 to 300 (each padding case: 55, 56, 63, 64 bytes and
 * their neighbours) and random splits, against libcrypto's SHA-256. */
Test(wd_sha256, matches_libcrypto)
{
	struct wd_err err = {0};
	cr_assert_eq(wd_ossl_load(&err), 0, "%s", err.msg);
	unsigned seed = 12345;
	unsigned char buf[300];
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)(rand_r(&seed) >> 7);
		for (size_t n = 0; n <= sizeof(buf); n++) {
			unsigned char want[32], got[32];
			unsigned wn = 0;
			cr_assert_eq(EVP_Digest(buf, n, want, &wn, EVP_sha256(), NULL), 1);
			struct wd_sha256 s;
			wd_sha256_init(&s);
			size_t cut = n ? (size_t)rand_r(&seed) % (n + 1) : 0;
			wd_sha256_update(&s, buf, cut);
			wd_sha256_update(&s, buf + cut, n - cut);
			wd_sha256_final(&s, got);
			cr_assert_eq(memcmp(want, got, 32), 0, "length %zu, split at %zu", n, cut);
		}
	}
}
