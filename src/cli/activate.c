/* cli/activate: warden activate --socket PATH --workspace DIR [--token-file FILE]
 *                                [--policy FILE] [--tenant NAME]
 *
 * Activate a `warden serve --await-activation` (a warm pod claimed by a
 * tenant): one server.activate call on the server's unix socket, as its
 * owner (docs/server.md, docs/kubernetes.md).  The token is never an
 * argument (argv is readable in /proc by every process): --token-file -
 * reads it here and sends it over the socket; --token-file FILE is
 * checked here and its path sent, for the server to read and watch (a
 * Secret mounted in the pod rotates it). */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: warden activate --socket PATH --workspace DIR [OPTIONS]\n"
    "\n"
    "Activate a server started with `warden serve --await-activation`: give it\n"
    "the tenant's workspace and token, once.  Only the server's owner, on its\n"
    "unix socket, may; a second activation is refused.\n"
    "\n"
    "      --socket PATH      the server's --socket\n"
    "  -w, --workspace DIR    the tenant's workspace (a directory the server sees)\n"
    "      --token-file FILE  the bearer token for the server's --listen: a file only\n"
    "                         you can read, which the server reads and watches (a new\n"
    "                         token in it is in force at once), or - for standard\n"
    "                         input (sent once); required when the server has --listen\n"
    "  -p, --policy FILE      the tenant's policy (default: the server's)\n"
    "      --tenant NAME      a name for the server's log (A-Z a-z 0-9 . _ -)\n";

enum { OPT_SOCKET = 256, OPT_TOKEN_FILE, OPT_TENANT, OPT_HELP };

static const struct option long_opts[] = {
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"workspace", required_argument, NULL, 'w'},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"policy", required_argument, NULL, 'p'},
    {"tenant", required_argument, NULL, OPT_TENANT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* The token file as --token-file of warden serve takes it: a regular
 * file only its owner can read, trailing whitespace trimmed (the server
 * checks the token itself). */
static int
read_token(const char *path, char *buf, size_t cap)
{
	/* "-": standard input, a pipe from whoever holds the token
	 * (kubectl exec -i ... < FILE), which no one else can read */
	if (!strcmp(path, "-")) {
		size_t got = 0;
		ssize_t r;
		while (got < cap - 1 && (r = read(0, buf + got, cap - 1 - got)) != 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return cli_fail("activate", "--token-file -: %s", strerror(errno));
			got += (size_t)r;
		}
		if (got == cap - 1)
			return cli_fail("activate", "--token-file -: over 4 KiB");
		while (got > 0 && strchr("\n\r \t", buf[got - 1]))
			got--;
		buf[got] = '\0';
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return cli_fail("activate", "--token-file: %s: %s", cli_quote(path), strerror(e));
	}
	ssize_t n = -1;
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		return cli_fail("activate",
				"--token-file: %s must be a regular file only you can read "
				"(mode %04o)",
				cli_quote(path), (unsigned)(st.st_mode & 07777));
	}
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0 || (size_t)n == cap - 1)
		return cli_fail("activate", "--token-file: %s: unreadable or over 4 KiB",
				cli_quote(path));
	while (n > 0 && strchr("\n\r \t", buf[n - 1]))
		n--;
	buf[n] = '\0';
	return 0;
}

/* A path the server reads: absolute (the server's working directory is
 * not the caller's). */
static char *
absolute(const char *p)
{
	if (p[0] == '/')
		return strdup(p);
	char *r = realpath(p, NULL);
	return r ? r : NULL;
}

/* An absolute path for p without resolving its links: a Secret's file is
 * TOKEN -> ..data/TOKEN, and its rotation swaps ..data; the server must
 * watch the name, not where it pointed once. */
static char *
absolute_name(const char *p)
{
	if (p[0] == '/')
		return strdup(p);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	size_t n = strlen(cwd) + strlen(p) + 2;
	char *r = malloc(n);
	if (r)
		snprintf(r, n, "%s/%s", cwd, p);
	free(cwd);
	return r;
}

static int
call(const char *sock, json_t *params)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof(sa.sun_path))
		return cli_fail("activate", "--socket: %s: path too long", cli_quote(sock));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return cli_fail("activate", "--socket: %s: %s", cli_quote(sock), strerror(e));
	}
	json_t *msg = json_pack("{s:s, s:i, s:s, s:O}", "jsonrpc", "2.0", "id", 1, "method",
				"server.activate", "params", params);
	char *text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	size_t len = strlen(text), off = 0;
	text = realloc(text, len + 2);
	text[len++] = '\n';
	while (off < len) {
		/* MSG_NOSIGNAL: a server that refused the connection closes
		 * it, and that is a message (below), not SIGPIPE */
		ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	explicit_bzero(text, len);
	free(text);
	/* one line back; the server answers at once (the activation runs on
	 * its loop), so a minute is a server that is not serving */
	char buf[8192];
	size_t got = 0;
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 60000) <= 0)
			break;
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	json_error_t je;
	json_t *ans = memchr(buf, '\n', got) ? json_loads(buf, JSON_DISABLE_EOF_CHECK, &je) : NULL;
	if (!ans)
		return cli_fail("activate",
				"--socket: %s: no answer (a connection the server refused: not "
				"its owner, or from a sandbox)",
				cli_quote(sock));
	json_t *res = json_object_get(ans, "result");
	const char *why =
	    json_string_value(json_object_get(json_object_get(ans, "error"), "message"));
	int rc;
	if (res) {
		const char *ws = json_string_value(json_object_get(res, "workspace"));
		char *esc = wd_esc_text(ws ? ws : "", ws ? strlen(ws) : 0, 0, 0);
		printf("activated: workspace %s\n", esc);
		free(esc);
		rc = 0;
	} else {
		rc = cli_fail("activate", "%s", why ? why : "the server's answer is not one");
	}
	json_decref(ans);
	return rc;
}

int
cli_activate(int argc, char **argv)
{
	const char *sock = NULL, *ws = NULL, *token_file = NULL, *policy = NULL, *tenant = NULL;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:w:p:", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET:
			sock = optarg;
			break;
		case 'w':
			ws = optarg;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case OPT_TENANT:
			tenant = optarg;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_bad_option("activate", argc, argv, long_opts);
		}
	}
	if (optind < argc)
		return cli_fail("activate",
				"unexpected argument %s (warden activate takes only "
				"options)",
				cli_quote(argv[optind]));
	if (!sock || !ws)
		return cli_fail("activate", "--socket PATH and --workspace DIR are required (see "
					    "warden activate --help)");
	char token[4097];
	int rc;
	if (token_file && (rc = read_token(token_file, token, sizeof(token))))
		return rc;
	char *aws = absolute(ws), *apol = policy ? absolute(policy) : NULL;
	if (!aws || (policy && !apol)) {
		int e = errno;
		free(aws);
		return cli_fail("activate", "%s: %s: %s", !aws ? "--workspace" : "--policy",
				cli_quote(!aws ? ws : policy), strerror(e));
	}
	json_t *params = json_pack("{s:s}", "workspace", aws);
	char *atok = token_file && strcmp(token_file, "-") ? absolute_name(token_file) : NULL;
	if (token_file && strcmp(token_file, "-") && !atok) {
		int e = errno;
		free(aws);
		free(apol);
		json_decref(params);
		explicit_bzero(token, sizeof(token));
		return cli_fail("activate", "--token-file: %s: %s", cli_quote(token_file),
				strerror(e));
	}
	if (atok)
		json_object_set_new(params, "token_file", json_string(atok));
	else if (token_file)
		json_object_set_new(params, "token", json_string(token));
	free(atok);
	if (apol)
		json_object_set_new(params, "policy", json_string(apol));
	if (tenant)
		json_object_set_new(params, "tenant", json_string(tenant));
	explicit_bzero(token, sizeof(token));
	free(aws);
	free(apol);
	rc = call(sock, params);
	json_decref(params);
	return rc;
}
