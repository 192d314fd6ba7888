/* wd-ignore ROOT: warden's ignore matcher (files/ignore.c) as `git
 * check-ignore --no-index -z --stdin` is called: NUL-terminated paths
 * (relative to ROOT) on stdin, the ignored ones NUL-terminated on stdout,
 * in order.  A directory is one by lstat.  For tests/integration/ignore_git.py,
 * which compares the two on a generated corpus. */
#include "files/files.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: wd-ignore ROOT <paths\n");
		return 125;
	}
	int root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		perror(argv[1]);
		return 125;
	}
	struct ws_ignore *ig = ws_ignore_new(root);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getdelim(&line, &cap, '\0', stdin)) > 0) {
		if (line[n - 1] == '\0')
			n--;
		line[n] = '\0';
		struct stat st;
		bool dir =
		    fstatat(root, line, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
		if (ws_ignore_match(ig, line, dir))
			fwrite(line, 1, (size_t)n + 1, stdout);
	}
	free(line);
	ws_ignore_free(ig);
	close(root);
	return 0;
}
