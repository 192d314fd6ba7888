/* policy_cli.h - shared by the policy subcommands (check.c, approve.c,
 * audit.c, policy.c) and the policy gate of `warden run` (gate.c). */
#ifndef WD_CLI_POLICY_H
#define WD_CLI_POLICY_H

#include "cli/cli.h"

#include <stdbool.h>
#include <stdio.h>

enum {
	CLI_EXIT_ALLOW = 0,
	CLI_EXIT_DENY = 126, /* refused by the policy */
};

/* Load --policy FILE or the built-in default; on error prints
 * "warden: SUB: FILE:LINE:COLUMN: ..." and returns CLI_EXIT_FAILURE. */
int cli_policy_load(const char *sub, const char *path, wd_policy **out);

/* Print one word for a human, quoted, with control characters and
 * backslashes escaped: an argument must not be able to move the cursor or
 * recolour the terminal of the person approving it. */
void cli_policy_word(FILE *f, const char *word);
/* Print text (a reason, which quotes arguments) with control characters
 * escaped as \xNN, for the same reason. */
void cli_policy_text(FILE *f, const char *text);

/* Print a decision for a human (to f). */
void cli_policy_print(FILE *f, const wd_decision *d, bool approved);

/* Options of `warden run` that belong to the policy layer. */
struct cli_policy_opts {
	const char *policy;  /* --policy FILE */
	const char *command; /* --command STRING */
	const char *audit;   /* --audit FILE */
	bool approve_tty;    /* --approve=tty */
	const char *tool;    /* --tool NAME: route and resource profile */
	/* the run's own limit options (peeked): they win over the profile */
	const char *lim_memory, *lim_pids, *lim_cpus, *lim_tmp, *lim_timeout, *lim_output;
	bool json;	       /* --json (peeked, not removed) */
	const char *workspace; /* -w/--workspace (peeked) */
	const char *env[64];   /* --setenv NAME=VALUE and --pass-env NAME (peeked) */
	size_t nenv;
	char *owned[64]; /* NAME=VALUE built for --pass-env */
	size_t nowned;
};

/* Before `warden run` parses its options: remove --policy, --command,
 * --audit and --approve=tty from argv (updating *argc), peek at the
 * workspace, environment and --json, and, for --command, append
 * "-- WORDS..." so the run's own parser sees a program.  Returns 0 or an
 * exit status (125 with a message naming the option). */
int cli_policy_extract(int *argc, char **argv, struct cli_policy_opts *o);
void cli_policy_opts_fini(struct cli_policy_opts *o);

/* The gate, after the run's options are parsed and before wd_run():
 * decide, audit the decision, then deny (print reason and advice, 126),
 * pause (ask at /dev/tty with --approve=tty, else print the id, 123) or
 * allow (set the spec's argv to the judged argv and the profile's limits
 * where the run gave none).  Returns -1 to go on and run, else an exit
 * status.  *audit and *dec are set for cli_policy_after(). */
int cli_policy_gate(struct cli_policy_opts *o, wd_spec *spec, int argc, char **argv,
		    wd_audit **audit, wd_decision **dec);
/* After the run: audit the result (result_json may be NULL) and free. */
void cli_policy_after(wd_audit *audit, wd_decision *dec, const char *result_json);

/* Whether any policy option was given: the gate is then on for this run. */
bool cli_policy_active(const struct cli_policy_opts *o);
/* The whole gated run, from the POLICY GATE marker of run.c: gate, then
 * wd_run() of the judged argv, the same output as an ungated run, and the
 * result event.  Returns the exit status; frees nothing of spec. */
int cli_policy_run(struct cli_policy_opts *o, wd_spec *spec, int argc, char **argv);

#endif
