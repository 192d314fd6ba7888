/* fuzz_tokenize: the command tokenizer.  Beyond not crashing, an accepted
 * command must survive a round trip: its words, each single-quoted and
 * joined with spaces, must tokenize to the same words. */
#include "policy/policy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_words w, w2;
	struct policy_refusal r;
	policy_words_init(&w);
	policy_words_init(&w2);
	if (policy_tokenize((const char *)data, size, &w, &r) == 0) {
		if (w.argc < 1 || w.argv[w.argc] != NULL)
			abort();
		/* re-quote: 'word' with ' written as '\'' */
		size_t cap = 4 * size + 16, o = 0;
		char *q = malloc(cap);
		if (!q)
			abort();
		for (int i = 0; i < w.argc; i++) {
			if (i)
				q[o++] = ' ';
			q[o++] = '\'';
			for (const char *p = w.argv[i]; *p; p++) {
				if (*p == '\'') {
					memcpy(q + o, "'\\''", 4);
					o += 4;
				} else {
					q[o++] = *p;
				}
			}
			q[o++] = '\'';
		}
		if (policy_tokenize(q, o, &w2, &r) != 0 || w2.argc != w.argc)
			abort();
		for (int i = 0; i < w.argc; i++)
			if (strcmp(w.argv[i], w2.argv[i]))
				abort();
		free(q);
	} else {
		if (!r.rule || strncmp(r.rule, "shell.", 6) || !r.what || r.offset > size)
			abort();
	}
	policy_words_fini(&w);
	policy_words_fini(&w2);
	return 0;
}
