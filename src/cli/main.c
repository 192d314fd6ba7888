/* cli/main: the warden program's entry; the command line is commands.c's. */
#include "cli/cli.h"

#include <fcntl.h>

int
main(int argc, char **argv)
{
	/* A missing fd 0, 1 or 2 would be handed out by the next open or
	 * pipe and mistaken for stdio later: fill the gaps with /dev/null. */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return CLI_EXIT_FAILURE;
	return cli_main(argc, argv);
}
