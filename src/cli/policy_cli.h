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

/* The controlling terminal, read and written: where a human is asked,
 * never the command's stdin (which may be the model's own pipe).  NULL
 * when there is none. */
FILE *cli_tty_open(void);
/* Print question on the terminal, read the answer and close it: true for
 * "y", "Y" or "yes". */
bool cli_tty_yes(FILE *tty, const char *question);
/* Print len bytes of text (what the human decides on) on the terminal,
 * with a note when it is taller than the screen, then as cli_tty_yes. */
bool cli_tty_ask(FILE *tty, const char *text, size_t len, const char *question);

/* Print a decision for a human (to f). */
void cli_policy_print(FILE *f, const wd_decision *d, bool approved);

#endif
