/* supervise/keeper_table.h: the cgroup keeper's set of watched directories.
 *
 * The keeper (keeper.c) hears "+DIR" when a sandbox's cgroup directory is
 * made and "-DIR" when it is removed, for the whole life of the program:
 * a server makes and destroys sandboxes for days.  The set must therefore
 * reuse what removals free and cost O(1) a message.  It used to be an
 * append-only list of names searched from the start on every removal:
 * at 5,000 live sandboxes the keeper took a fifth of the machine's CPU
 * (perf, bench/density.py), and after ~5,800 sandboxes over a server's
 * life the list was full and later cgroups were no longer watched at all.
 *
 * Everything lives in one anonymous mapping the caller makes
 * (KT_MAP_SIZE; pages are touched only as they are used) and nothing here
 * allocates, takes a lock or touches thread-local storage: the keeper is
 * a raw clone that may share the program's memory and must not (see
 * keeper.c).  Functions carry KT_FN, which the includer defines (the
 * keeper's no-canary attribute, or nothing in a unit test).
 *
 *   arena  records in insertion order: a 16-bit length (bit 15 set once
 *          the record is removed), the name's bytes, a NUL
 *   slot   an open-addressing index (linear probing) of arena offsets + 1;
 *          0 is an empty slot, KT_TOMB a removed one
 *
 * When the arena is full or tombstones crowd the index, kt_rebuild moves
 * the live records to the front (their order kept) and indexes them
 * again: O(live) once in a while, never per message. */
#ifndef WD_SUPERVISE_KEEPER_TABLE_H
#define WD_SUPERVISE_KEEPER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef KT_FN
#define KT_FN
#endif

#define KT_ARENA (4u << 20)				     /* bytes of records */
#define KT_SLOTS (1u << 18)				     /* index slots, a power of two */
#define KT_MAP_SIZE (KT_ARENA + KT_SLOTS * sizeof(uint32_t)) /* the caller's mapping */
#define KT_MAX_NAME 4095				     /* a path: longer is not a cgroup */
#define KT_TOMB UINT32_MAX
#define KT_DEAD 0x8000u

struct kt {
	char *arena;
	uint32_t *slot;
	size_t len;  /* arena bytes in use */
	size_t live; /* records not removed */
	size_t used; /* slots not empty: live records and tombstones */
	size_t dead; /* arena bytes of removed records */
};

/* The table over a fresh (zeroed) mapping of KT_MAP_SIZE bytes. */
KT_FN __attribute__((unused)) static void
kt_init(struct kt *t, void *map)
{
	t->arena = map;
	t->slot = (uint32_t *)(void *)((char *)map + KT_ARENA);
	t->len = t->live = t->used = t->dead = 0;
}

KT_FN __attribute__((unused)) static uint32_t
kt_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

KT_FN __attribute__((unused)) static unsigned
kt_rec_len(const struct kt *t, size_t off)
{
	uint16_t v;
	memcpy(&v, t->arena + off, sizeof(v));
	return v;
}

/* The slot holding name, or -1. */
KT_FN __attribute__((unused)) static long
kt_find(const struct kt *t, const char *name, size_t n)
{
	uint32_t mask = KT_SLOTS - 1, i = kt_hash(name, n) & mask;
	for (uint32_t probes = 0; probes < KT_SLOTS; probes++, i = (i + 1) & mask) {
		uint32_t s = t->slot[i];
		if (s == 0)
			return -1;
		if (s != KT_TOMB && kt_rec_len(t, s - 1) == n && !memcmp(t->arena + s + 1, name, n))
			return (long)i;
	}
	return -1;
}

/* Index the record at off (its name known absent). */
KT_FN __attribute__((unused)) static void
kt_index(struct kt *t, size_t off)
{
	unsigned n = kt_rec_len(t, off);
	uint32_t mask = KT_SLOTS - 1, i = kt_hash(t->arena + off + 2, n) & mask;
	while (t->slot[i] != 0 && t->slot[i] != KT_TOMB)
		i = (i + 1) & mask;
	if (t->slot[i] == 0)
		t->used++;
	t->slot[i] = (uint32_t)off + 1;
}

/* Drop removed records and tombstones: the live records moved to the
 * front in their order, the index made again from them. */
KT_FN __attribute__((unused)) static void
kt_rebuild(struct kt *t)
{
	size_t to = 0;
	for (size_t off = 0; off < t->len;) {
		unsigned v = kt_rec_len(t, off);
		size_t size = 2 + (v & ~KT_DEAD) + 1;
		if (!(v & KT_DEAD)) {
			if (to != off)
				memmove(t->arena + to, t->arena + off, size);
			to += size;
		}
		off += size;
	}
	t->len = to;
	t->dead = 0;
	memset(t->slot, 0, KT_SLOTS * sizeof(uint32_t));
	t->used = 0;
	for (size_t off = 0; off < t->len; off += 2 + kt_rec_len(t, off) + 1)
		kt_index(t, off);
}

/* Watch name (n bytes, no NUL needed); a name already watched is kept
 * once.  false when there is no room even after a rebuild (more live
 * cgroups than KT_SLOTS / 2: another warden's sweep removes what a dead
 * program left, cgroup_sweep_stale). */
KT_FN __attribute__((unused)) static bool
kt_add(struct kt *t, const char *name, size_t n)
{
	if (n == 0 || n > KT_MAX_NAME)
		return false;
	if (kt_find(t, name, n) >= 0)
		return true;
	size_t size = 2 + n + 1;
	/* a rebuild only where it frees something: a table full of live
	 * names would otherwise be rebuilt on every add it refuses */
	if ((t->len + size > KT_ARENA || t->used + 1 > KT_SLOTS / 2) &&
	    (t->dead > 0 || t->used > t->live))
		kt_rebuild(t);
	if (t->len + size > KT_ARENA || t->used + 1 > KT_SLOTS / 2)
		return false;
	uint16_t v = (uint16_t)n;
	memcpy(t->arena + t->len, &v, sizeof(v));
	memcpy(t->arena + t->len + 2, name, n);
	t->arena[t->len + 2 + n] = '\0';
	kt_index(t, t->len);
	t->len += size;
	t->live++;
	return true;
}

/* Forget name; a name not watched is no error. */
KT_FN __attribute__((unused)) static void
kt_del(struct kt *t, const char *name, size_t n)
{
	long i = kt_find(t, name, n);
	if (i < 0)
		return;
	size_t off = t->slot[i] - 1;
	uint16_t v = (uint16_t)(kt_rec_len(t, off) | KT_DEAD);
	memcpy(t->arena + off, &v, sizeof(v));
	t->slot[i] = KT_TOMB;
	t->live--;
	t->dead += 2 + (v & ~KT_DEAD) + 1;
}

/* The live names in the order they were added: *off starts at 0; each
 * call returns the next NUL-terminated name, or NULL at the end. */
KT_FN __attribute__((unused)) static const char *
kt_next(const struct kt *t, size_t *off)
{
	while (*off < t->len) {
		size_t at = *off;
		unsigned v = kt_rec_len(t, at);
		*off = at + 2 + (v & ~KT_DEAD) + 1;
		if (!(v & KT_DEAD))
			return t->arena + at + 2;
	}
	return NULL;
}

#endif
