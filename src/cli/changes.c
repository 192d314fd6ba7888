/* cli/changes: warden diff, apply, discard: a cow session's
 * change set, shown, written into the real directory, or dropped. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_STAT = 3000,
	OPT_JSON,
	OPT_NAMES,
	OPT_HELP,
	OPT_EXPECT,
	OPT_ALL,
};

/* clang-format off */
static const struct option opts[] = {
    {"stat", no_argument, NULL, OPT_STAT},
    {"json", no_argument, NULL, OPT_JSON},
    {"name-status", no_argument, NULL, OPT_NAMES},
    {"help", no_argument, NULL, OPT_HELP},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"all", no_argument, NULL, OPT_ALL},
    {NULL, 0, NULL, 0},
};
/* clang-format on */

/* SANDBOX [PATH...] with the options of sub (allowed: which of opts;
 * expect: NULL where --expect is not one of them). */
static int
args(const char *sub, const char *usage, int argc, char **argv, unsigned allowed, unsigned *flags,
     const char **ref, int *first, const char **expect)
{
	int c;
	cli_opts_begin(argc, argv);
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == OPT_HELP) {
			fputs(usage, stdout);
			return -1;
		}
		if (c == ':' || c == '?')
			return cli_bad_option(sub, argc, argv, opts);
		if (c == OPT_EXPECT) {
			if (!expect)
				return cli_fail(sub, "unknown option --expect (warden %s --help)",
						sub);
			/* checked here so that a typo says which option */
			if (strlen(optarg) != 64 || strspn(optarg, "0123456789abcdef") != 64)
				return cli_fail(sub,
						"--expect %s: not a change set digest (64 hex "
						"digits: the \"digest\" of warden diff --json)",
						cli_quote(optarg));
			*expect = optarg;
			continue;
		}
		unsigned bit = c == OPT_STAT   ? WD_DIFF_STAT
			       : c == OPT_JSON ? WD_DIFF_JSON
			       : c == OPT_ALL  ? WD_DIFF_ALL
					       : WD_DIFF_NAMES;
		if (!(allowed & bit))
			return cli_fail(sub, "unknown option %s (warden %s --help)",
					cli_quote(argv[optind - 1]), sub);
		*flags |= bit;
	}
	if ((*flags & WD_DIFF_JSON) && (*flags & (WD_DIFF_STAT | WD_DIFF_NAMES)))
		return cli_fail(sub, "--json and --stat/--name-status are exclusive");
	if (optind >= argc)
		return cli_fail(sub, "no sandbox given (usage: warden %s SANDBOX [PATH...])", sub);
	*ref = argv[optind];
	*first = optind + 1;
	return 0;
}

static int
fail(const char *sub, wd_ctx *ctx, const struct wd_err *e)
{
	wd_ctx_free(ctx);
	return cli_fail(sub, "%s", e->msg);
}

int
cli_diff(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden diff SANDBOX [PATH...] [--stat | --json | --name-status] [--all]\n\n"
	    "Show what a cow session changed in its workspace (or at or below PATHs): a line\n"
	    "per file (added, modified, deleted, renamed, mode; links and directories too),\n"
	    "then unified diffs, binary files named.  Conflicts (files the host changed\n"
	    "since the session first saw them) and protected paths are marked.  What the\n"
	    "real directory's .gitignore files (and .git/info/exclude) ignore is one line\n"
	    "per top-level directory, with counts and bytes.\n\n"
	    "      --all                list ignored changes as any other (apply --all\n"
	    "                           applies them)\n"
	    "      --stat               git's diffstat instead of the diffs\n"
	    "      --json               the file list: status, type, modes, sizes, SHA-256\n"
	    "      --name-status        the lines only, no diffs\n";
	unsigned flags = 0;
	const char *ref;
	int first, rc = args("diff", usage, argc, argv,
			     WD_DIFF_STAT | WD_DIFF_JSON | WD_DIFF_NAMES | WD_DIFF_ALL, &flags,
			     &ref, &first, NULL);
	if (rc)
		return rc < 0 ? 0 : rc;
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *out = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 ||
	    wd_session_diff(ctx, ref, (const char *const *)(argv + first), (size_t)(argc - first),
			    flags, &out, &e) < 0)
		return fail("diff", ctx, &e);
	fputs(out, stdout);
	free(out);
	wd_ctx_free(ctx);
	return 0;
}

int
cli_apply(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden apply SANDBOX [PATH...] [--all] [--expect DIGEST] [--json]\n\n"
	    "Write a cow session's changes (or those at or below PATHs) into the real\n"
	    "directory: each file atomically (a temporary file renamed over it), modes kept\n"
	    "(set-id bits dropped).  A file the host changed since the session first saw it\n"
	    "is a conflict, and a protected path (.git, .envrc, ...) is refused: then\n"
	    "nothing at all is written (name the other PATHs to apply them).  The session\n"
	    "is frozen from warden diff through apply; each file is re-hashed as it is\n"
	    "copied and must be what the diff showed.  Ignored changes (the real\n"
	    "directory's .gitignore) stay in the session unless --all.\n\n"
	    "      --all                apply ignored changes too (the set warden diff --all\n"
	    "                           shows; its digest is not the default's)\n"
	    "      --expect DIGEST      apply only the change set reviewed: the digest of\n"
	    "                           warden diff (its first line, or \"digest\" in --json);\n"
	    "                           any other set applies nothing (status 125)\n"
	    "      --json               the report as JSON\n\n"
	    "Exit status: 0 applied; 1 conflicts or protected paths, nothing applied;\n"
	    "125 bad input or warden failed (nothing half-written).\n";
	unsigned flags = 0;
	const char *ref;
	const char *expect = NULL;
	int first, rc = args("apply", usage, argc, argv, WD_DIFF_JSON | WD_DIFF_ALL, &flags, &ref,
			     &first, &expect);
	if (rc)
		return rc < 0 ? 0 : rc;
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *rep = NULL;
	if (wd_ctx_new(&ctx, &e) < 0)
		return fail("apply", ctx, &e);
	rc = wd_session_apply(ctx, ref, (const char *const *)(argv + first), (size_t)(argc - first),
			      expect, flags, &rep, &e);
	if (rc < 0)
		return fail("apply", ctx, &e);
	if (rep)
		fputs(rep, (flags & WD_DIFF_JSON) || rc == 0 ? stdout : stderr);
	if ((flags & WD_DIFF_JSON) && rep && rep[0] && rep[strlen(rep) - 1] != '\n')
		fputc('\n', stdout);
	if (rc == 1 && !(flags & WD_DIFF_JSON))
		fprintf(stderr, "warden: apply: nothing applied: conflicts or protected paths "
				"(above); apply the other paths by naming them\n");
	free(rep);
	wd_ctx_free(ctx);
	return rc;
}

int
cli_discard(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden discard SANDBOX [PATH...] [--json]\n\n"
	    "Drop a cow session's changes (or those at or below PATHs): the session sees the\n"
	    "real directory's files again.  The real directory is not touched.\n";
	unsigned flags = 0;
	const char *ref;
	int first,
	    rc = args("discard", usage, argc, argv, WD_DIFF_JSON, &flags, &ref, &first, NULL);
	if (rc)
		return rc < 0 ? 0 : rc;
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0)
		return fail("discard", ctx, &e);
	rc = wd_session_discard(ctx, ref, (const char *const *)(argv + first),
				(size_t)(argc - first), &e);
	if (rc < 0)
		return fail("discard", ctx, &e);
	if (flags & WD_DIFF_JSON)
		printf("{\"discarded\":%d}\n", rc);
	else
		fprintf(stderr, "warden: discard: %d change%s dropped\n", rc, rc == 1 ? "" : "s");
	wd_ctx_free(ctx);
	return 0;
}
