/* cli: the warden command line, a thin front end over include/warden.h. */
#ifndef WD_CLI_H
#define WD_CLI_H

#include "warden.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Exit statuses (docs/cli.md "Exit status"; timeout(1)/env(1) conventions). */
enum {
	CLI_EXIT_PAUSED = 123,
	CLI_EXIT_TIMEOUT = 124,
	CLI_EXIT_FAILURE = 125,
	CLI_EXIT_CANNOT_EXEC = 126,
	CLI_EXIT_NOT_FOUND = 127,
};

/* `warden run`'s options and program into spec and cmd, everything it
 * does before it runs anything (the fuzz target cli_options calls it):
 * 0, -1 after --help, or an exit status (125, the message printed). */
typedef struct wd_spec wd_spec;
int cli_run_prepare(int argc, char **argv, wd_spec *spec, wd_cmd *cmd);

/* The whole command line (commands.c): argv[1] names the subcommand;
 * returns the exit status.  main.c calls it; so does the test unit-cli. */
int cli_main(int argc, char **argv);
/* The i-th subcommand's name, NULL past the last. */
const char *cli_command_name(size_t i);

/* Each subcommand gets argv with argv[0] the subcommand name. */
int cli_run(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_image(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_approve(int argc, char **argv);
int cli_audit(int argc, char **argv);
int cli_policy(int argc, char **argv);
int cli_create(int argc, char **argv);
int cli_exec(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_stop(int argc, char **argv);
int cli_start(int argc, char **argv);
int cli_rm(int argc, char **argv);
int cli_snapshot(int argc, char **argv);
int cli_update(int argc, char **argv);
int cli_logs(int argc, char **argv);
int cli_cp(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_apply(int argc, char **argv);
int cli_discard(int argc, char **argv);

/* Ask at /dev/tty whether to run a paused command once (an approver). */
struct wd_decision;
int cli_ask_tty(const wd_decision *d, void *data);
/* The working directory (--cwd, relative to the workspace; NULL: its
 * root) the command asked about will run in: the prompt shows it. */
void cli_ask_tty_cwd(const char *cwd);

/* warden run's sandbox options (workspace, isolation, limits, network,
 * workspace mode...) for another subcommand (create), plus its own: fn
 * gets each option code of opts and returns 0 (taken), -1 (not one of
 * its own) or an exit status.  Returns 0, -1 after --help, or an exit
 * status. */
struct option;
struct cli_sandbox_extra {
	const struct option *opts; /* NULL-name terminated */
	const char *shortopts;	   /* getopt's string for the whole set */
	int (*fn)(int c, const char *val, void *data);
	void *data;
	const char *usage;	 /* for --help */
	bool default_workspace;	 /* no --workspace: the current directory */
	bool *verbose;		 /* -v seen */
	bool *json;		 /* --json seen */
	const char **policy;	 /* --policy FILE (its workspace.protect) */
	const char *const *only; /* NULL, or the only run options taken (update) */
};
int cli_sandbox_options(const char *sub, int argc, char **argv, const struct cli_sandbox_extra *x,
			wd_spec *spec, int *first_arg);
int cli_serve(int argc, char **argv);
int cli_activate(int argc, char **argv);

/* Print "warden: <subcommand>: <message>" to stderr (and, after
 * cli_json_errors(true), {"status":125,"error":...} to stdout); returns
 * CLI_EXIT_FAILURE. */
/* Why the command did not start, on stderr: the set-up step (the working
 * directory CWD, when given) or execve of PROG. */
void cli_exec_failed(const char *sub, const wd_result *r, const char *prog, const char *cwd);
/* One stderr line per distinct network refusal of the command. */
void cli_net_refusals(const char *sub, const wd_result *r);
/* With --audit: one stderr line naming the log and whether the policy
 * stage was on for the command. */
void cli_audit_note(const char *sub, const wd_result *r, const char *path);
int cli_fail(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_json_errors(bool on);
/* Before a subcommand's getopt_long loop: its errors in JSON when --json
 * is among its options (before any "--": bad input is answered in the
 * form asked for), and getopt's state reset, messages off (opterr 0:
 * cli_bad_option says what is wrong). */
void cli_opts_begin(int argc, char **argv);
/* s as a JSON string on f: ASCII, every other byte escaped. */
void cli_json_string(FILE *f, const char *s);
void cli_log_handler(int level, const char *func, const char *msg, void *data);
/* A user's value for a message: quoted, control bytes escaped, cut to 80
 * bytes with the length said.  Valid until the fourth next call. */
const char *cli_quote(const char *value);
/* After getopt_long returned ':' or '?': say which argument is wrong and
 * why (a missing value is not an unknown option).  Returns 125. */
struct option;
int cli_bad_option(const char *sub, int argc, char **argv, const struct option *opts);
/* Whether a value getopt took is really "--" or one of opts: the option
 * before it was given no value. */
bool cli_looks_like_option(const char *value, const struct option *opts);
/* Docker's spellings (-v SRC:DST, -e, --network, --pids-limit, --user,
 * ...) among argv's options: a "did you mean" naming warden's option, 125;
 * 0 if none. */
int cli_docker_hints(const char *sub, int argc, char **argv);

#endif
