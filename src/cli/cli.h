/* cli: the warden command line, a thin front end over include/warden.h. */
#ifndef WD_CLI_H
#define WD_CLI_H

#include "warden.h"

#include <stdbool.h>

/* Exit statuses (DESIGN.md §10, timeout(1)/env(1) conventions). */
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

/* Each subcommand gets argv with argv[0] the subcommand name. */
int cli_run(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_approve(int argc, char **argv);
int cli_audit(int argc, char **argv);
int cli_policy(int argc, char **argv);
int cli_serve(int argc, char **argv);

/* Print "warden: <subcommand>: <message>" to stderr (and, after
 * cli_json_errors(true), {"status":125,"error":...} to stdout); returns
 * CLI_EXIT_FAILURE. */
int cli_fail(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_json_errors(bool on);
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
