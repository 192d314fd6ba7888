/*
 * ns_floor: the kernel's floor for a sandboxed launch, for comparison with
 * `warden run` and bubblewrap in bench/spawn.sh.
 *
 *   ns_floor PROGRAM [ARGS...]
 *
 * Creates the namespaces warden creates (user, mount, pid, net, ipc, uts,
 * cgroup) with one clone(), as warden's clone3 does; the parent writes a
 * one-id user map; the child (pid 1 there) forks PROGRAM and waits for it.
 * No mounts, no pivot_root, no seccomp, Landlock or cgroup: whatever a
 * sandbox costs above this is set-up work, not namespace creation.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int
write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

int
main(int argc, char **argv)
{
	char map[64], path[64];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
	int go[2], status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: ns_floor PROGRAM [ARGS...]\n");
		return 2;
	}
	if (pipe2(go, O_CLOEXEC) < 0)
		return 125;
	/* Like warden's clone3: the child is pid 1 of the new namespaces; the
	 * parent, still in the caller's namespace, writes its id maps. */
	pid = (pid_t)syscall(SYS_clone,
			     (long)(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
				    CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD),
			     0L, NULL, NULL, 0L);
	if (pid < 0) {
		perror("ns_floor: clone");
		return 125;
	}
	if (pid == 0) {
		char c;
		pid_t cmd;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(125);
		cmd = fork();
		if (cmd < 0)
			_exit(125);
		if (cmd == 0) {
			execv(argv[1], argv + 1);
			_exit(127);
		}
		while (waitpid(cmd, &status, 0) < 0)
			if (errno != EINTR)
				_exit(125);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	close(go[0]);
	/* One id, as warden maps it (as root: to nobody). */
	if (uid == 0)
		uid = gid = 65534;
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	write_file(path, "deny");
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "1000 %u 1\n", uid);
	if (write_file(path, map) < 0)
		return 125;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "1000 %u 1\n", gid);
	if (write_file(path, map) < 0)
		return 125;
	if (write(go[1], "x", 1) != 1)
		return 125;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 125;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
