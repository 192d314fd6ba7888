/* gen-seccomp: compile the jail's seccomp rule table to BPF at build time.
 *
 *     gen-seccomp OUTPUT.c
 *
 * Builds the filter with libseccomp (seccomp_rules.c), exports it as raw
 * BPF, puts the hand-written prelude in front and writes a C file defining
 * jail_seccomp_prog and jail_seccomp_rule_count (see seccomp.h).  The jail
 * then loads the program with one seccomp(2) call: nothing to compile,
 * allocate or link at run time.  libseccomp's pseudo-code rendering goes
 * into the output as a comment so a reviewer can read what was compiled.
 *
 * It also renders the same table as an OCI seccomp profile (JSON), which
 * the gvisor level hands to runsc: there the command's system calls are
 * gVisor's, and runsc --oci-seccomp makes its sentry apply the profile to
 * them (jail_seccomp_oci, see seccomp.h).
 *
 * A native build tool: the filter is for the architecture the build runs
 * on, which is the one warden runs on (no cross-compilation support). */
#include "jail/seccomp_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel refuses longer programs */

static char *
slurp_fd(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	char *buf = malloc((size_t)end + 1);
	if (!buf)
		return NULL;
	size_t got = 0;
	while (got < (size_t)end) {
		ssize_t n = read(fd, buf + got, (size_t)end - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
	return buf;
}

/* libseccomp 2.5.4 has no seccomp_export_bpf_mem (2.6 does): export to a
 * memfd and read it back.  The pseudo-code has no _mem form at all. */
static char *
export_filter(scmp_filter_ctx ctx, int pfc, size_t *len)
{
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
	if (!pfc) {
		size_t n = 0;
		if (seccomp_export_bpf_mem(ctx, NULL, &n) < 0 || n == 0)
			return NULL;
		char *buf = malloc(n);
		if (buf && seccomp_export_bpf_mem(ctx, buf, &n) == 0) {
			*len = n;
			return buf;
		}
		free(buf);
		return NULL;
	}
#endif
	int fd = memfd_create(pfc ? "seccomp-pfc" : "seccomp-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	int rc = pfc ? seccomp_export_pfc(ctx, fd) : seccomp_export_bpf(ctx, fd);
	char *out = rc == 0 ? slurp_fd(fd, len) : NULL;
	close(fd);
	return out;
}

/* One program: the prelude, then libseccomp's rendering of the table.
 * Returns the instruction count, or 0 after printing why. */
static size_t
build(unsigned flags, struct sock_filter *prog, char **pfc, unsigned *nsys)
{
	scmp_filter_ctx ctx;
	int rc = jail_seccomp_build(&ctx, nsys, flags);
	if (rc < 0) {
		fprintf(stderr, "gen-seccomp: building the filter: %s\n", strerror(-rc));
		return 0;
	}
	size_t bpf_len = 0, pfc_len = 0;
	char *bpf = export_filter(ctx, 0, &bpf_len);
	*pfc = export_filter(ctx, 1, &pfc_len);
	seccomp_release(ctx);
	if (!bpf || !*pfc || bpf_len == 0 || bpf_len % sizeof(struct sock_filter)) {
		fprintf(stderr, "gen-seccomp: exporting the filter failed\n");
		return 0;
	}
	size_t n = jail_seccomp_prelude(prog, MAX_INSNS, (uint32_t)seccomp_arch_native());
	size_t nlib = bpf_len / sizeof(struct sock_filter);
	if (n == 0 || n + nlib > MAX_INSNS) {
		fprintf(stderr, "gen-seccomp: program too long (%zu + %zu)\n", n, nlib);
		free(bpf);
		return 0;
	}
	memcpy(prog + n, bpf, bpf_len);
	free(bpf);
	n += nlib;
	/* The program must end in a return: BPF has no fall-off-the-end. */
	if (BPF_CLASS(prog[n - 1].code) != BPF_RET) {
		fprintf(stderr, "gen-seccomp: program does not end in a return\n");
		return 0;
	}
	return n;
}

static void
emit(FILE *f, const char *name, const char *count_name, const char *what,
     const struct sock_filter *prog, size_t n, char *pfc, unsigned nsys)
{
	fprintf(f, "/* %s: %s.\n *\n", name, what);
	fprintf(f,
		" * %zu instructions: the %zu-instruction prelude (personality,\n"
		" * syscalls above %d refused with ENOSYS), then libseccomp's program:\n *\n",
		n, jail_seccomp_prelude((struct sock_filter[16]){{0}}, 16, 0), JAIL_SECCOMP_MAX_NR);
	for (char *line = strtok(pfc, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(f, " *   %s\n", line);
	fprintf(f, " */\nstatic const struct sock_filter %s_insns[%zu] = {\n", name, n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\t{ 0x%04x, %3u, %3u, 0x%08x },\n", prog[i].code, prog[i].jt,
			prog[i].jf, prog[i].k);
	fprintf(f, "};\n\n");
	/* sock_fprog's pointer is not const; the instructions stay in
	 * read-only memory anyway, the cast goes through uintptr_t. */
	fprintf(f,
		"const struct sock_fprog %s = {\n"
		"\t.len = %zu,\n"
		"\t.filter = (struct sock_filter *)(uintptr_t)%s_insns,\n"
		"};\n\n"
		"const unsigned %s = %u;\n\n",
		name, n, name, count_name, nsys);
}

/* ---- the OCI profile ---- */

struct oci {
	FILE *f;
	unsigned rules;
};

static const char *
oci_op(enum scmp_compare op)
{
	switch (op) {
	case SCMP_CMP_NE:
		return "SCMP_CMP_NE";
	case SCMP_CMP_LT:
		return "SCMP_CMP_LT";
	case SCMP_CMP_LE:
		return "SCMP_CMP_LE";
	case SCMP_CMP_EQ:
		return "SCMP_CMP_EQ";
	case SCMP_CMP_GE:
		return "SCMP_CMP_GE";
	case SCMP_CMP_GT:
		return "SCMP_CMP_GT";
	case SCMP_CMP_MASKED_EQ:
		return "SCMP_CMP_MASKED_EQ";
	default:
		return NULL;
	}
}

/* One refusal as an OCI rule (a JSON object, as one C string literal).
 * Only EPERM refusals: Debian 12's runsc (2022-12) ignores errnoRet and
 * answers EPERM for every SCMP_ACT_ERRNO rule, and an ENOSYS refusal
 * answered EPERM breaks the caller's fallback (glibc's clone3 -> clone);
 * the ENOSYS ones (clone3, openat2) name calls that gVisor does not
 * implement anyway, so they fail with ENOSYS there already. */
static int
oci_rule(void *data, int err, int nr, unsigned nargs, const struct scmp_arg_cmp *cmp)
{
	struct oci *o = data;
	if (err != EPERM)
		return 0;
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	if (!name)
		return 0; /* no name on this architecture: nothing to match */
	fprintf(o->f,
		"\t\"{\\\"names\\\":[\\\"%s\\\"],\\\"action\\\":\\\"SCMP_ACT_ERRNO\\\","
		"\\\"errnoRet\\\":%d",
		name, err);
	free(name);
	if (nargs) {
		fprintf(o->f, ",\\\"args\\\":[");
		for (unsigned i = 0; i < nargs; i++) {
			const char *op = oci_op(cmp[i].op);
			if (!op)
				return -EINVAL;
			fprintf(o->f,
				"%s{\\\"index\\\":%u,\\\"value\\\":%llu,\\\"valueTwo\\\":%llu,"
				"\\\"op\\\":\\\"%s\\\"}",
				i ? "," : "", cmp[i].arg, (unsigned long long)cmp[i].datum_a,
				(unsigned long long)cmp[i].datum_b, op);
		}
		fprintf(o->f, "]");
	}
	fprintf(o->f, "}\",\n");
	o->rules++;
	return 0;
}

static int
emit_oci(FILE *f)
{
	struct oci o = {.f = f};
	unsigned nsys = 0;
	fprintf(f, "/* jail_seccomp_oci: the table's EPERM refusals as OCI seccomp rules. */\n"
		   "const char *const jail_seccomp_oci[] = {\n");
	int rc = jail_seccomp_walk(0, oci_rule, &o, &nsys);
	if (rc < 0) {
		fprintf(stderr, "gen-seccomp: OCI profile: %s\n", strerror(-rc));
		return rc;
	}
	fprintf(f, "\tNULL,\n};\n");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-seccomp OUTPUT.c\n");
		return 2;
	}
	const char *path = argv[1];
	static struct sock_filter prog[MAX_INSNS], prog_nonet[MAX_INSNS];
	char *pfc = NULL, *pfc_nonet = NULL;
	unsigned nsys = 0, nsys_nonet = 0;
	size_t n = build(0, prog, &pfc, &nsys);
	size_t n_nonet = build(JAIL_SECCOMP_NO_INET, prog_nonet, &pfc_nonet, &nsys_nonet);
	if (!n || !n_nonet)
		return 1;

	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "gen-seccomp: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f, "/* Generated by gen-seccomp from src/jail/seccomp_rules.c: do not edit. */\n"
		   "#include \"jail/seccomp.h\"\n\n#include <stddef.h>\n#include <stdint.h>\n\n");
	emit(f, "jail_seccomp_prog", "jail_seccomp_rule_count", "the jail's filter", prog, n, pfc,
	     nsys);
	emit(f, "jail_seccomp_prog_nonet", "jail_seccomp_nonet_rule_count",
	     "the same, and socket()/socketpair() for AF_UNIX only", prog_nonet, n_nonet, pfc_nonet,
	     nsys_nonet);
	free(pfc);
	free(pfc_nonet);
	if (emit_oci(f) < 0) {
		fclose(f);
		unlink(path);
		return 1;
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "gen-seccomp: %s: %s\n", path, strerror(errno));
		unlink(path);
		return 1;
	}
	return 0;
}
