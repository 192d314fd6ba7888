/* cli/commands: the subcommand table, warden's usage and the dispatch
 * (cli_main); main.c is only the program's entry, so the unit test
 * unit-cli runs the whole command line in-process. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
    {"run", cli_run, "run a command in a fresh sandbox"},
    {"create", cli_create, "make a session: a sandbox kept between commands"},
    {"exec", cli_exec, "run a command in a session"},
    {"ls", cli_ls, "list sessions"},
    {"stop", cli_stop, "end a session's processes, keep its files"},
    {"start", cli_start, "bring a stopped session back"},
    {"rm", cli_rm, "remove a session and its files"},
    {"update", cli_update, "change a session's limits, network rules, ports, secrets"},
    {"cp", cli_cp, "copy files into or out of a session (SESSION:PATH)"},
    {"logs", cli_logs, "list a session's detached commands, print their output"},
    {"snapshot", cli_snapshot, "keep, list (ls) and remove (rm) copies of a session's files"},
    {"diff", cli_diff, "show a cow session's changes"},
    {"apply", cli_apply, "write a cow session's changes into the real directory"},
    {"discard", cli_discard, "drop a cow session's changes"},
    {"check", cli_check, "print the policy decision for a command, run nothing"},
    {"approve", cli_approve, "record a single-use approval for a paused command"},
    {"audit", cli_audit, "verify an audit trail (audit verify FILE)"},
    {"policy", cli_policy, "print the effective policy (policy show)"},
    {"image", cli_image, "build, list, inspect and remove images (environments)"},
    {"doctor", cli_doctor, "report which isolation levels this host can run"},
    {"serve", cli_serve, "serve MCP and JSON-RPC (stdio, a unix socket, HTTP)"},
    {"activate", cli_activate, "give a warm server (serve --await-activation) its tenant"},
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: warden COMMAND [OPTIONS] ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'warden COMMAND --help' describes each command's options.\n");
}

const char *
cli_command_name(size_t i)
{
	return i < sizeof(commands) / sizeof(commands[0]) ? commands[i].name : NULL;
}

int
cli_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("warden 0.1.0\n");
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	/* quoted and escaped: an escape sequence typed (or pasted) as the
	 * command word must not reach the terminal */
	fprintf(stderr, "warden: unknown command %s\n", cli_quote(argv[1]));
	usage(stderr);
	return CLI_EXIT_FAILURE;
}
