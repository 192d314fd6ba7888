/* Unit tests for src/workspace: what needs no mount and no
 * privilege: path normalization, names, the state directory's checks,
 * the baseline's round trip and lookups, the sync table's vacant states,
 * the spec's workspace setters and its JSON round trip. */
#include "jail/sync.h"
#include "spec/spec.h"
#include "workspace/workspace.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* clang-format off */
static const struct { const char *in, *out; } relpaths[] = {
	{"a", "a"}, {"./a//b/", "a/b"}, {"a/./b", "a/b"}, {".", NULL}, {"", NULL},
	{"/etc/passwd", NULL}, {"../x", NULL}, {"a/../b", NULL}, {"a/..", NULL},
	{"..a/b", "..a/b"},
};
/* clang-format on */

Test(ws_relpath, normalizes_or_refuses)
{
	for (size_t i = 0; i < sizeof(relpaths) / sizeof(relpaths[0]); i++) {
		char *r = ws_relpath(relpaths[i].in);
		if (!relpaths[i].out)
			cr_expect_null(r, "'%s' should be refused, got '%s'", relpaths[i].in, r);
		else
			cr_expect(r && !strcmp(r, relpaths[i].out), "'%s' -> '%s', want '%s'",
				  relpaths[i].in, r ? r : "(null)", relpaths[i].out);
		free(r);
	}
}

Test(ws_name_ok, names_and_tags)
{
	cr_expect(ws_name_ok("agent"));
	cr_expect(ws_name_ok("a1.b-c_d"));
	cr_expect(ws_name_ok("9lives"));
	cr_expect(!ws_name_ok(""));
	cr_expect(!ws_name_ok("-x"));
	cr_expect(!ws_name_ok(".x"));
	cr_expect(!ws_name_ok("a/b"));
	cr_expect(!ws_name_ok("a b"));
	cr_expect(!ws_name_ok("a@b"));
	char long_name[80];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	cr_expect(!ws_name_ok(long_name));
}

static char *
tmpdir(void)
{
	char t[] = "/tmp/wd-unit-ws.XXXXXX";
	char *d = mkdtemp(t);
	cr_assert_not_null(d);
	return strdup(d);
}

Test(ws_state_root, made_private_refused_when_open)
{
	char *d = tmpdir();
	char root[4200], out[4200];
	snprintf(root, sizeof(root), "%s/state/sub", d);
	struct wd_err e = {0};
	cr_assert_eq(ws_state_root(root, out, sizeof(out), &e), 0, "%s", e.msg);
	struct stat st;
	cr_assert_eq(stat(root, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0700, "made 0700");
	chmod(root, 0750);
	cr_expect_eq(ws_state_root(root, out, sizeof(out), &e), -EINVAL);
	cr_expect(strstr(e.msg, "chmod 700"), "%s", e.msg);
	chmod(root, 0700);
	cr_expect_eq(ws_state_root("relative/dir", out, sizeof(out), &e), -EINVAL);
	int fd = ws_state_sandboxes(root, &e);
	cr_expect_geq(fd, 0, "%s", e.msg);
	close(fd);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	cr_expect_eq(system(cmd), 0);
	free(d);
}

Test(ws_name_take, atomically_once)
{
	char *d = tmpdir();
	char root[4200], out[4200];
	snprintf(root, sizeof(root), "%s/s", d);
	struct wd_err e = {0};
	cr_assert_eq(ws_state_root(root, out, sizeof(out), &e), 0);
	int fd = ws_state_sandboxes(root, &e);
	cr_assert_geq(fd, 0);
	cr_assert_eq(mkdirat(fd, "0123456789abcdef", 0700), 0);
	cr_expect_eq(ws_name_take(root, "n1", "0123456789abcdef", &e), 0);
	cr_expect_eq(ws_name_take(root, "n1", "0123456789abcdef", &e), -EEXIST);
	cr_expect(strstr(e.msg, "already taken"));
	char id[17];
	cr_expect_eq(ws_resolve(root, "n1", id, &e), 0);
	cr_expect_str_eq(id, "0123456789abcdef");
	cr_expect_eq(ws_resolve(root, "0123", id, &e), 0, "a prefix of 4 digits");
	cr_expect_eq(ws_resolve(root, "012", id, &e), -ENOENT, "3 digits are too few");
	cr_expect_eq(ws_resolve(root, "nope", id, &e), -ENOENT);
	ws_name_release(root, "n1");
	cr_expect_eq(ws_resolve(root, "n1", id, &e), -ENOENT);
	close(fd);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	cr_expect_eq(system(cmd), 0);
	free(d);
}

Test(ws_baseline, round_trip_and_lookup)
{
	char *d = tmpdir();
	char ws[4200];
	snprintf(ws, sizeof(ws), "%s/ws", d);
	mkdir(ws, 0755);
	char p[4300];
	snprintf(p, sizeof(p), "%s/a.txt", ws);
	FILE *f = fopen(p, "w");
	fputs("x", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/sub", ws);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/sub/b", ws);
	cr_assert_eq(symlink("../a.txt", p), 0);
	int sdir = open(d, O_RDONLY | O_DIRECTORY);
	int wsfd = open(ws, O_PATH | O_DIRECTORY);
	struct wd_err e = {0};
	cr_assert_eq(ws_baseline_record(sdir, wsfd, &e), 0, "%s", e.msg);
	struct ws_baseline *b = NULL;
	cr_assert_eq(ws_baseline_load(sdir, &b, &e), 0, "%s", e.msg);
	cr_expect_eq(b->n, 3);
	const struct ws_entry *a = ws_baseline_find(b, "a.txt");
	cr_assert_not_null(a);
	cr_expect(S_ISREG(a->mode) && a->size == 1);
	cr_expect(S_ISDIR(ws_baseline_find(b, "sub")->mode));
	cr_expect(S_ISLNK(ws_baseline_find(b, "sub/b")->mode), "links recorded, not followed");
	cr_expect_null(ws_baseline_find(b, "nope"));
	struct stat st = {.st_mode = S_IFREG | 0644, .st_size = 9};
	ws_baseline_set(b, "new", &st);
	cr_expect_eq(ws_baseline_find(b, "new")->size, 9);
	ws_baseline_set(b, "a.txt", NULL);
	cr_expect_null(ws_baseline_find(b, "a.txt"));
	cr_expect_not_null(ws_baseline_find(b, "sub/b"), "the rest stays sorted and found");
	ws_baseline_free(b);
	/* a damaged file is refused, not half read */
	int fd = openat(sdir, "baseline", O_WRONLY | O_TRUNC);
	cr_assert_eq(write(fd, "WDBASE1\n\5\0\0\0ab", 14), 14);
	close(fd);
	cr_expect_eq(ws_baseline_load(sdir, &b, &e), -EINVAL);
	close(sdir);
	close(wsfd);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	cr_expect_eq(system(cmd), 0);
	free(d);
}

/* the sync table: a vacant sandbox is told its workspace once, before any
 * command; a command may be pipelined behind the attach */
Test(sync_table, vacant_attach_states)
{
	int sp[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	struct sync_chan sup, p1;
	sync_chan_init(&sup, sp[0], SYNC_SUPERVISOR, SYNC_S_SETUP);
	sync_chan_init(&p1, sp[1], SYNC_PID1, SYNC_S_SETUP);
	struct sync_msg m = {.kind = SYNC_VACANT}, r;
	int fds[SYNC_MAX_FDS], n;
	cr_assert_eq(sync_send(&p1, &m, NULL, 0), 0);
	cr_assert_eq(sync_recv(&sup, &r, fds, &n, 0), 0);
	cr_expect_eq(sup.state, SYNC_S_VACANT);
	cr_expect(!sync_allowed(&sup, SYNC_EXEC), "no command before the workspace");
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	m = (struct sync_msg){.kind = SYNC_ATTACH};
	cr_expect_eq(sync_send(&sup, &m, NULL, 0), -EPROTO, "ATTACH carries one descriptor");
	cr_assert_eq(sync_send(&sup, &m, &devnull, 1), 0);
	cr_expect(sync_allowed(&sup, SYNC_EXEC), "EXEC may follow ATTACH at once");
	cr_expect(!sync_allowed(&sup, SYNC_ATTACH), "ATTACH only once");
	cr_assert_eq(sync_recv(&p1, &r, fds, &n, 0), 0);
	cr_expect_eq(n, 1);
	close(fds[0]);
	m = (struct sync_msg){.kind = SYNC_ATTACHED};
	cr_assert_eq(sync_send(&p1, &m, NULL, 0), 0);
	cr_assert_eq(sync_recv(&sup, &r, fds, &n, 0), 0);
	cr_expect_eq(sup.state, SYNC_S_IDLE);
	cr_expect_eq(p1.state, SYNC_S_IDLE);
	close(devnull);
	close(sp[0]);
	close(sp[1]);
}

Test(spec_workspace, setters_and_json_round_trip)
{
	wd_spec *s = wd_spec_new();
	struct wd_err e = {0};
	cr_expect_eq(wd_spec_set_disk(s, 1 << 20, &e), -EINVAL, "below 32M");
	cr_expect_eq(wd_spec_set_disk(s, 64ULL << 20, &e), 0);
	cr_expect_eq(wd_spec_add_protected(s, "/abs", &e), -EINVAL);
	cr_expect_eq(wd_spec_add_protected(s, "a/../b", &e), -EINVAL);
	cr_expect_eq(wd_spec_add_protected(s, "a//b", &e), -EINVAL);
	cr_expect_eq(wd_spec_add_protected(s, "secrets/keys", &e), 0);
	cr_expect_eq(wd_spec_add_protected(s, "secrets/keys", &e), 0, "twice is once");
	cr_expect_eq(s->nprotect, 1);
	wd_spec_set_workspace_mode(s, WD_WORKSPACE_COW);
	json_t *j = spec_to_json(s);
	wd_spec *c = NULL;
	cr_assert_eq(spec_from_json(j, &c, &e), 0, "%s", e.msg);
	cr_expect_eq(c->ws_mode, WD_WORKSPACE_COW);
	cr_expect_eq(c->disk_bytes, 64ULL << 20);
	cr_expect(c->nprotect == 1 && !strcmp(c->protect[0], "secrets/keys"));
	json_object_set_new(j, "disk", json_integer(5));
	wd_spec *bad = NULL;
	cr_expect_eq(spec_from_json(j, &bad, &e), -EINVAL, "a damaged spec is bad input");
	json_decref(j);
	wd_spec_free(c);
	wd_spec_free(s);
}
