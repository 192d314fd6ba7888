/* fuzz_cli_options: `warden run`'s option parsing (src/cli/run.c and
 * messages.c), as `warden run` does it before it runs anything: the input
 * is split at NUL bytes into argv (after "run").  Whatever the words, the
 * parser must not crash, leak or read past its arguments; it must end in
 * 0 (a spec and a command), -1 (--help) or 125; and a refusal must name
 * itself on stderr without echoing a control byte from the input (the
 * message quotes and escapes values).  Nothing is run: the parse touches
 * the file system only to resolve paths (workspace, bind sources). */
#include "cli/cli.h"
#include "warden.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *buf = malloc(size + 1);
	if (!buf)
		abort();
	memcpy(buf, data, size);
	buf[size] = '\0';
	char *argv[MAX_ARGS + 2];
	char run[] = "run";
	int argc = 0;
	argv[argc++] = run;
	for (char *p = buf; p < buf + size && argc < MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	/* the messages go to stderr: keep them, to check them */
	char *msg = NULL;
	size_t mlen = 0;
	FILE *mem = open_memstream(&msg, &mlen);
	/* --help prints to stdout, which the corpus replay's TAP stream owns:
	 * send it to a sink instead */
	FILE *sink = fopen("/dev/null", "w");
	FILE *saved = stderr, *saved_out = stdout;
	if (!mem || !sink)
		abort();
	stderr = mem;
	stdout = sink;
	wd_spec *spec = wd_spec_new();
	wd_cmd *cmd = wd_cmd_new();
	int rc = cli_run_prepare(argc, argv, spec, cmd);
	stderr = saved;
	stdout = saved_out;
	fclose(mem);
	fclose(sink);
	if (rc != 0 && rc != -1 && rc != 125)
		abort(); /* the only statuses bad input may give */
	if (rc == 125) {
		if (mlen == 0 || strncmp(msg, "warden: run: ", 13))
			abort(); /* a refusal says so, naming the command */
		for (size_t i = 0; i + 1 < mlen; i++)
			if ((unsigned char)msg[i] < 0x20 && msg[i] != '\n' && msg[i] != '\t')
				abort(); /* a control byte from the input reached the terminal */
	}
	free(msg);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	free(buf);
	return 0;
}
