/* The cgroup keeper's set of watched directories (supervise/keeper_table.h):
 * what a long-lived server's keeper must keep true over hundreds of
 * thousands of sandboxes made and destroyed. */
#include "supervise/keeper_table.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static struct kt t;
static void *map;

static void
setup(void)
{
	map = mmap(NULL, KT_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(map != MAP_FAILED);
	kt_init(&t, map);
}

static void
teardown(void)
{
	munmap(map, KT_MAP_SIZE);
}

/* a sandbox's cgroup directory in one of four v1 hierarchies */
static size_t
name(char *buf, size_t cap, unsigned long id, int h)
{
	static const char *const hier[] = {"memory", "pids", "cpu", "cpuacct"};
	int n = snprintf(buf, cap, "/sys/fs/cgroup/%s/warden/%016lx", hier[h % 4], id);
	return (size_t)n;
}

static bool
has(const char *s)
{
	return kt_find(&t, s, strlen(s)) >= 0;
}

TestSuite(keeper_table, .init = setup, .fini = teardown);

Test(keeper_table, add_find_remove)
{
	cr_assert(kt_add(&t, "/a/b", 4));
	cr_assert(kt_add(&t, "/a/bc", 5));
	cr_assert(kt_add(&t, "/a/b", 4), "a name added twice is kept once");
	cr_assert_eq(t.live, 2);
	cr_assert(has("/a/b") && has("/a/bc") && !has("/a"));
	kt_del(&t, "/a/b", 4);
	kt_del(&t, "/nowhere", 8); /* not watched: no error */
	cr_assert(!has("/a/b") && has("/a/bc"));
	cr_assert_eq(t.live, 1);
	cr_assert(!kt_add(&t, "", 0), "an empty name is refused");
	char *long_name = malloc(KT_MAX_NAME + 2);
	memset(long_name, 'x', KT_MAX_NAME + 1);
	cr_assert(!kt_add(&t, long_name, KT_MAX_NAME + 1), "a name longer than a path is refused");
	cr_assert(kt_add(&t, long_name, KT_MAX_NAME), "a name of KT_MAX_NAME bytes is kept");
	cr_assert(kt_find(&t, long_name, KT_MAX_NAME) >= 0);
	free(long_name);
}

/* What a server's life does: sandboxes made and destroyed, many at once
 * live.  The append-only list this replaces was full after ~5,800
 * sandboxes, and every later one went unwatched. */
Test(keeper_table, a_long_life_reuses_what_removals_free)
{
	enum { LIVE = 5000, MADE = 200000 };
	char buf[128];
	for (unsigned long id = 0; id < MADE; id++) {
		for (int h = 0; h < 4; h++) {
			size_t n = name(buf, sizeof(buf), id, h);
			cr_assert(kt_add(&t, buf, n), "sandbox %lu, hierarchy %d: not watched", id,
				  h);
		}
		if (id >= LIVE) /* the oldest goes: LIVE stay live */
			for (int h = 0; h < 4; h++) {
				size_t n = name(buf, sizeof(buf), id - LIVE, h);
				kt_del(&t, buf, n);
			}
	}
	cr_assert_eq(t.live, 4 * LIVE);
	/* exactly the live ones, in the order they were made */
	size_t at = 0, seen = 0;
	const char *s;
	while ((s = kt_next(&t, &at))) {
		unsigned long id = MADE - LIVE + seen / 4;
		name(buf, sizeof(buf), id, (int)(seen % 4));
		cr_assert_str_eq(s, buf);
		seen++;
	}
	cr_assert_eq(seen, 4 * LIVE);
	name(buf, sizeof(buf), MADE - LIVE - 1, 0);
	cr_assert(!has(buf), "a destroyed sandbox's directory is forgotten");
	name(buf, sizeof(buf), MADE - 1, 3);
	cr_assert(has(buf));
}

Test(keeper_table, full_is_said_and_nothing_is_lost)
{
	char buf[128];
	unsigned long id = 0;
	while (kt_add(&t, buf, name(buf, sizeof(buf), id, 0)))
		id++;
	/* the arena or the index, whichever is full first (the index is kept
	 * at most half full); either holds over 20,000 v1 sandboxes */
	size_t rec = 2 + name(buf, sizeof(buf), 0, 0) + 1;
	unsigned long want = KT_ARENA / rec < KT_SLOTS / 2 ? KT_ARENA / rec : KT_SLOTS / 2;
	cr_assert_eq(id, want, "full at %lu names, not %lu", id, want);
	cr_assert_gt(id, 4 * 20000);
	cr_assert(has("/sys/fs/cgroup/memory/warden/0000000000000000"));
	name(buf, sizeof(buf), id - 1, 0);
	cr_assert(has(buf));
	/* one removed: room for one more */
	kt_del(&t, buf, strlen(buf));
	name(buf, sizeof(buf), id, 0);
	cr_assert(kt_add(&t, buf, strlen(buf)));
	cr_assert(has(buf));
}
