/* cli: the warden command line, a thin front end over include/warden.h. */
#ifndef WD_CLI_H
#define WD_CLI_H

#include "warden.h"

/* Exit statuses (DESIGN.md §10, timeout(1)/env(1) conventions). */
enum {
	CLI_EXIT_PAUSED = 123,
	CLI_EXIT_TIMEOUT = 124,
	CLI_EXIT_FAILURE = 125,
	CLI_EXIT_CANNOT_EXEC = 126,
	CLI_EXIT_NOT_FOUND = 127,
};

/* Each subcommand gets argv with argv[0] the subcommand name. */
int cli_run(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_approve(int argc, char **argv);
int cli_audit(int argc, char **argv);
int cli_policy(int argc, char **argv);

/* Print "warden: <subcommand>: <message>" to stderr; returns CLI_EXIT_FAILURE. */
int cli_fail(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_log_handler(int level, const char *func, const char *msg, void *data);

#endif
