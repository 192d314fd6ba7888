/* net/ossl: one stub per OpenSSL function the program references, each a
 * jump through its slot in ossl_lazy.c (see net/ossl.h).  A stub is
 * entered with the caller's arguments in place and jumps, so the target
 * returns straight to the caller: no prototype is needed here, and the
 * compiler checked every call against OpenSSL's headers.  Hidden: the
 * stubs never interpose on the real library's symbols. */
#define OSSL_SYM(name)                                                                             \
	.globl name;                                                                               \
	.hidden name;                                                                              \
	.type name, @function;                                                                     \
	.p2align 4;                                                                                \
	name: jmp *wd_ossl_slot_##name(%rip);                                                      \
	.size name, .-name;

	.text
#include "net/ossl_syms.h"

	.section .note.GNU-stack, "", @progbits
