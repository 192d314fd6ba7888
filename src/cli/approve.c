/* cli/approve: warden approve ID [--ttl SECONDS] [--audit FILE] [--json] [--yes]
 * Record a single-use approval for a paused command. */
#include "cli/policy_cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: warden approve ID [--ttl SECONDS] [--audit FILE] [--json]\n"
    "\n"
    "Approve, once, the paused command with this id (or a unique prefix of 8+ digits).\n"
    "The approval covers exactly that argv, working directory, environment, workspace,\n"
    "policy, system (the --image, or the host) and the state of the files the command\n"
    "can read (any change before the retry pauses it again); re-running the identical\n"
    "command consumes it.  It expires after --ttl seconds (default: the policy's\n"
    "approvals.ttl, 600).  At a terminal it first shows the command the id stands\n"
    "for and asks; nothing is recorded unless the answer is yes.\n"
    "\n"
    "  --ttl SECONDS   lifetime of the approval (1 to 604800)\n"
    "  --audit FILE    log approval.granted here (default: the log of the pause)\n"
    "  --json          the grant as one JSON object: id, argv, cwd, workspace,\n"
    "                  system, state, policy, policy_source, rule, reason, ttl, granted,\n"
    "                  expires\n"
    "  -y, --yes       grant without asking (what a script without a terminal does)\n";

enum { OPT_TTL = 256, OPT_AUDIT, OPT_JSON, OPT_HELP, OPT_YES = 'y' };

static const struct option long_opts[] = {
    {"ttl", required_argument, NULL, OPT_TTL}, {"audit", required_argument, NULL, OPT_AUDIT},
    {"json", no_argument, NULL, OPT_JSON},     {"help", no_argument, NULL, OPT_HELP},
    {"yes", no_argument, NULL, OPT_YES},       {NULL, 0, NULL, 0},
};

/* The one waiting command whose id starts with id, or NULL (none, or more
 * than one: the grant then says which). */
static json_t *
waiting(json_t *all, const char *id)
{
	size_t i, n = strlen(id);
	json_t *e, *found = NULL;
	json_array_foreach(all, i, e)
	{
		const char *full = json_string_value(json_object_get(e, "id"));
		if (!full || strncasecmp(full, id, n))
			continue;
		if (found)
			return NULL;
		found = e;
	}
	return found;
}

static void
field(FILE *f, const char *name, json_t *v)
{
	fprintf(f, "\n  %-10s ", name);
	cli_policy_word(f, json_is_string(v) ? json_string_value(v) : "");
}

/* Why ask before granting: the id is what the model hands the human ("run
 * warden approve 3f2a9c01, it only lists the files"), and a grant by id
 * alone approved whatever that id was paused for, the summary shown only
 * after it was recorded.  At a terminal the human reads the command the
 * id stands for (every word escaped: the model chose them) and nothing is
 * recorded unless the answer is yes.  Asked on /dev/tty, and only when
 * stdin is a terminal: a script's approve (stdin a pipe or a file) grants
 * as before, as does --yes.  1 grant, 0 declined; shown gets the whole id
 * of what was shown, so that the grant is of that one (a prefix could
 * stand for another pause made in between). */
static int
confirm(const char *id, char shown[static 65])
{
	if (!isatty(0))
		return 1;
	char *list = NULL;
	struct wd_err e = {0};
	if (wd_approval_list(&list, &e) < 0)
		return 1; /* the grant reads the same store and says why */
	json_t *all = json_loads(list, 0, NULL);
	free(list);
	json_t *w = waiting(all, id);
	if (!w) {
		json_decref(all);
		return 1; /* unknown or ambiguous: the grant refuses it, naming why */
	}
	FILE *tty = cli_tty_open();
	if (!tty) {
		json_decref(all);
		return 1;
	}
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	if (!f)
		abort();
	fprintf(f, "warden: approve: the command %s waits for:\n  argv:     ",
		json_string_value(json_object_get(w, "id")));
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(w, "argv"), i, a)
	{
		fputc(' ', f);
		cli_policy_word(f, json_is_string(a) ? json_string_value(a) : "");
	}
	/* the environment the request sets is covered by the id and changes
	 * what runs (HOME, XDG_CONFIG_HOME: which config git reads) */
	fprintf(f, "\n  %-10s", "env:");
	json_t *env = json_object_get(w, "env");
	json_array_foreach(env, i, a)
	{
		fputc(' ', f);
		cli_policy_word(f, json_is_string(a) ? json_string_value(a) : "");
	}
	if (!json_array_size(env))
		fputs(" (none set by the request)", f);
	field(f, "cwd:", json_object_get(w, "cwd"));
	field(f, "workspace:", json_object_get(w, "workspace"));
	field(f, "system:", json_object_get(w, "system"));
	/* what else the id covers: the files as they are now */
	json_t *st = json_object_get(w, "state");
	fprintf(f, "\n  %-10s ", "state:");
	json_t *bound = json_object_get(st, "bound");
	if (json_is_integer(bound)) {
		fprintf(f,
			"more than %lld entries, the policy's approvals.max_state_entries: no "
			"approval can cover it",
			(long long)json_integer_value(bound));
	} else if (json_is_false(json_object_get(st, "complete"))) {
		fputs("not all of it could be read (", f);
		cli_policy_word(f, json_string_value(json_object_get(st, "unseen")));
		fputs("): no approval can cover it", f);
	} else {
		fprintf(f,
			"the files it can read as they are now (%lld entries); a change to any "
			"before the retry pauses it again",
			(long long)json_integer_value(json_object_get(st, "entries")));
		const char *where = json_string_value(json_object_get(st, "where"));
		if (where && strcmp(where, "workspace") != 0) {
			/* a live sandbox's or session's own: it runs there,
			 * with that sandbox's home, and nowhere else */
			fprintf(f, "\n  %-10s ", "in:");
			cli_policy_word(f, where);
		}
	}
	field(f, "rule:", json_object_get(w, "rule"));
	fprintf(f, "\n  %-10s ", "reason:");
	cli_policy_text(f, json_string_value(json_object_get(w, "reason")));
	snprintf(shown, 65, "%s", json_string_value(json_object_get(w, "id")));
	if (fclose(f) != 0 || !text)
		abort();
	bool yes = cli_tty_ask(tty, text, tlen, "\nApprove this exact command, once? [y/N] ");
	free(text);
	json_decref(all);
	return yes;
}

int
cli_approve(int argc, char **argv)
{
	const char *audit_path = NULL;
	uint64_t ttl = 0;
	struct wd_err e = {0};
	bool json = false, yes = false;
	int c;

	cli_opts_begin(argc, argv);
	while ((c = getopt_long(argc, argv, "y", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_TTL:
			if (wd_parse_u64(optarg, &ttl) < 0 || ttl < 1 || ttl > 604800)
				return cli_fail(
				    "approve",
				    "--ttl: invalid value '%s': expected seconds from 1 "
				    "to 604800",
				    optarg);
			break;
		case OPT_AUDIT:
			audit_path = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_YES:
			yes = true;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_bad_option("approve", argc, argv, long_opts);
		}
	}
	if (optind + 1 != argc)
		return cli_fail("approve", "expected one approval id (usage: warden approve ID "
					   "[--ttl SECONDS] [--audit FILE] [--json] [--yes])");
	char shown[65] = "";
	if (!yes && !confirm(argv[optind], shown)) {
		fprintf(stderr, "warden: approve: not approved; nothing recorded\n");
		return 1;
	}
	wd_audit *audit = NULL;
	if (audit_path && wd_audit_open(audit_path, &audit, &e) < 0)
		return cli_fail("approve", "--audit: %s", e.msg);
	char *summary = NULL;
	const char *id = shown[0] ? shown : argv[optind];
	int rc = json ? wd_approval_grant_json(id, (unsigned)ttl, audit, &summary, &e)
		      : wd_approval_grant(id, (unsigned)ttl, audit, &summary, &e);
	wd_audit_close(audit);
	if (rc < 0)
		return cli_fail("approve", "%s", e.msg);
	printf("%s\n", summary);
	free(summary);
	return 0;
}
