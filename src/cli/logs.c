/* cli/logs: warden logs SESSION [ID]: a session's detached commands
 * (exec --detach) and their output.
 *
 * The output is the sandbox's: a model chooses every byte of it, and a
 * terminal obeys escape sequences (retitle, rewrite the clipboard, erase
 * what the human read).  So it is escaped (wd_esc_text, newlines and
 * tabs kept) unless --raw is given and stdout is not a terminal: raw bytes
 * go to a file or a pipe only. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char logs_usage[] =
    "usage: warden logs SESSION [--json]\n"
    "       warden logs SESSION ID [--follow] [--tail N] [--raw]\n"
    "\n"
    "Without ID: list the session's detached commands (warden exec --detach): id,\n"
    "state, exit status, age, command.  With ID: print that command's output\n"
    "(~/.warden/detached-ID.log in the session), escaped for the terminal.\n"
    "\n"
    "  -f, --follow    keep printing as the output grows, until the command ends\n"
    "  -n, --tail N    only the last N lines (of at most the last 1 MiB)\n"
    "      --raw       the bytes as written, unescaped (refused when stdout is a\n"
    "                  terminal: the sandbox chose them)\n"
    "      --json      the list as a JSON array\n"
    "\n"
    "Exit status: 0; 125 bad input, no such session or command, or the session\n"
    "is not running.\n";

enum { OPT_L_RAW = 3000, OPT_L_JSON, OPT_L_HELP };

static const struct option logs_opts[] = {
    {"follow", no_argument, NULL, 'f'},	     {"tail", required_argument, NULL, 'n'},
    {"raw", no_argument, NULL, OPT_L_RAW},   {"json", no_argument, NULL, OPT_L_JSON},
    {"help", no_argument, NULL, OPT_L_HELP}, {NULL, 0, NULL, 0},
};

#define CHUNK (1u << 20)

static void
put(const char *data, size_t len, bool raw)
{
	if (raw) {
		fwrite(data, 1, len, stdout);
	} else {
		char *t = wd_esc_text(data, len, WD_ESC_LINES, 0);
		fputs(t, stdout);
		free(t);
	}
	fflush(stdout);
}

/* Where the last n lines of data[0..len) start. */
static size_t
tail_start(const char *data, size_t len, uint64_t n)
{
	size_t i = len;
	if (i && data[i - 1] == '\n')
		i--;
	while (i > 0) {
		if (data[i - 1] == '\n' && --n == 0)
			return i;
		i--;
	}
	return 0;
}

int
cli_logs(int argc, char **argv)
{
	bool follow = false, raw = false, json = false, tail = false;
	uint64_t tail_n = 0;
	int c;
	cli_opts_begin(argc, argv);
	while ((c = getopt_long(argc, argv, ":fn:", logs_opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			follow = true;
			break;
		case 'n':
			if (wd_parse_u64(optarg, &tail_n) < 0 || tail_n > 1000000)
				return cli_fail("logs",
						"--tail: invalid value %s: expected a number of "
						"lines from 0 to 1000000",
						cli_quote(optarg));
			tail = true;
			break;
		case OPT_L_RAW:
			raw = true;
			break;
		case OPT_L_JSON:
			json = true;
			break;
		case OPT_L_HELP:
			fputs(logs_usage, stdout);
			return 0;
		default:
			return cli_bad_option("logs", argc, argv, logs_opts);
		}
	}
	if (optind >= argc)
		return cli_fail("logs", "no session given (usage: warden logs SESSION [ID])");
	const char *ref = argv[optind++];
	const char *idarg = optind < argc ? argv[optind++] : NULL;
	if (optind < argc)
		return cli_fail("logs", "unexpected argument %s", cli_quote(argv[optind]));
	uint64_t id = 0;
	if (idarg && (wd_parse_u64(idarg, &id) < 0 || id == 0 || id > 0xffffffffu))
		return cli_fail("logs",
				"ID: invalid value %s: expected the number of a detached command "
				"(warden logs %s lists them)",
				cli_quote(idarg), cli_quote(ref));
	if (!idarg && (follow || tail || raw))
		return cli_fail("logs", "--%s needs an ID (warden logs SESSION ID)",
				follow ? "follow"
				: tail ? "tail"
				       : "raw");
	if (idarg && json)
		return cli_fail("logs", "--json lists the commands: give no ID");
	/* raw bytes of the sandbox's choice never reach a terminal */
	if (raw && isatty(1))
		return cli_fail("logs", "--raw: refused with stdout on a terminal (the output is "
					"the sandbox's: escape sequences would drive it); redirect "
					"it to a file or a pipe");
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0)
		return cli_fail("logs", "%s", e.msg);
	int rc = 0;
	if (!idarg) {
		char *list = NULL;
		if (wd_session_logs(ctx, ref, json, &list, &e) < 0)
			rc = cli_fail("logs", "%s", e.msg);
		else
			fputs(list, stdout);
		free(list);
		wd_ctx_free(ctx);
		return rc;
	}
	uint64_t off = 0, size = 0;
	int status = -1;
	char *data = NULL;
	size_t len = 0;
	/* its size first, then where --tail starts */
	if (wd_session_log_read(ctx, ref, (unsigned)id, 0, 0, &data, &len, &size, &status, &e) <
	    0) {
		rc = cli_fail("logs", "%s", e.msg);
		goto out;
	}
	free(data);
	data = NULL;
	if (tail) {
		off = size > CHUNK ? size - CHUNK : 0;
		if (wd_session_log_read(ctx, ref, (unsigned)id, off, CHUNK, &data, &len, &size,
					&status, &e) < 0) {
			rc = cli_fail("logs", "%s", e.msg);
			goto out;
		}
		size_t from = tail_n ? tail_start(data, len, tail_n) : len;
		put(data + from, len - from, raw);
		off += len;
		free(data);
		data = NULL;
	}
	for (;;) {
		if (wd_session_log_read(ctx, ref, (unsigned)id, off, CHUNK, &data, &len, &size,
					&status, &e) < 0) {
			rc = cli_fail("logs", "%s", e.msg);
			goto out;
		}
		if (len)
			put(data, len, raw);
		off += len;
		free(data);
		data = NULL;
		if (off < size)
			continue; /* more than one chunk */
		if (!follow || status >= 0)
			break;
		/* the log is a file the sandbox writes: no event to wait for
		 * from here, so look again shortly, as tail -f does */
		poll(NULL, 0, 200);
	}
out:
	free(data);
	wd_ctx_free(ctx);
	return rc;
}
