/* net/ossl for builds that link OpenSSL (libwarden.so, CPUs without
 * ossl_stubs.S): nothing to load.  See net/ossl.h. */
#include "net/ossl.h"

int
wd_ossl_load(struct wd_err *err)
{
	(void)err;
	return 0;
}
