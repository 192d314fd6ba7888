/* cli/human: what a human at the command line is shown and asked, for
 * every subcommand: a policy loaded with its error as the CLI says it,
 * argv words and text escaped (a model chose them), and the terminal's
 * yes-or-no with what it is about.  Apart from check.c so that the
 * escapers' fuzz target links them without the rest of the CLI. */
#include "cli/policy_cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int
cli_policy_load(const char *sub, const char *path, wd_policy **out)
{
	struct wd_err e = {0};
	if (wd_policy_load(path, out, &e) < 0)
		return cli_fail(sub, "%s", e.msg);
	return 0;
}

void
cli_policy_word(FILE *f, const char *word)
{
	char *vis = wd_esc_text(word, strlen(word), WD_ESC_WORD, 0);
	fputs(vis, f);
	free(vis);
}

void
cli_policy_text(FILE *f, const char *text)
{
	char *vis = wd_esc_text(text, strlen(text), 0, 0);
	fputs(vis, f);
	free(vis);
}

FILE *
cli_tty_open(void)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "r+");
	if (!f)
		close(fd);
	return f;
}

static struct winsize
tty_size(FILE *tty)
{
	struct winsize ws = {0};
	if (ioctl(fileno(tty), TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
		ws = (struct winsize){.ws_row = 24, .ws_col = 80}; /* a terminal's default */
	return ws;
}

/* The rows text takes at a terminal cols wide, each character one column
 * (the text is escaped, so a wide character is rare; counting it as one
 * underestimates by a little). */
static size_t
screen_rows(const char *text, size_t len, size_t cols)
{
	size_t rows = 1, col = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\n') {
			rows++;
			col = 0;
		} else if ((((unsigned char)text[i]) & 0xc0) != 0x80 && ++col > cols) {
			rows++;
			col = 1;
		}
	}
	return rows;
}

bool
cli_tty_ask(FILE *tty, const char *text, size_t len, const char *question)
{
	fwrite(text, 1, len, tty);
	/* A model can make what is shown longer than the screen (a hundred
	 * long words): its start, the argv, then scrolls off and the human
	 * sees only what is under it.  Say so next to the question. */
	struct winsize ws = tty_size(tty);
	size_t rows = screen_rows(text, len, ws.ws_col);
	if (rows + 3 > ws.ws_row)
		fprintf(tty,
			"\n  note:      this is %zu lines at this terminal's width and its start "
			"has scrolled off: scroll back and read it all before you answer",
			rows);
	return cli_tty_yes(tty, question);
}

bool
cli_tty_yes(FILE *tty, const char *question)
{
	fputs(question, tty);
	fflush(tty);
	char line[64] = "";
	bool yes = false;
	if (fgets(line, sizeof(line), tty))
		yes = !strcmp(line, "y\n") || !strcmp(line, "yes\n") || !strcmp(line, "Y\n");
	fclose(tty);
	return yes;
}
