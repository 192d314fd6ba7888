/* fuzz_audit_verify: the audit chain verifier over arbitrary logs.  Input:
 * the log, optionally followed by a NUL byte and a head file. */
#include "audit/audit.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, '\0', size);
	struct audit_verify r;
	if (nul)
		audit_verify_buffer(buf, (size_t)(nul - buf), nul + 1,
				    size - (size_t)(nul - buf) - 1, &r);
	else
		audit_verify_buffer(buf, size, NULL, 0, &r);
	if (!r.ok && !r.message[0])
		abort();
	return 0;
}
