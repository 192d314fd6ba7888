/* options.c - what one option word means under a program's option lists.
 *
 * The lists name options as the program spells them; the word on the
 * command line may spell them differently, and the program's own parser
 * decides what it means.  The parsers of the programs a policy allows are
 * mostly getopt_long(3) (coreutils, grep, diff), git's parse-options and
 * Python's argparse, and all three accept more than the spelling in the
 * manual:
 *
 *  - a long option may be abbreviated to any unambiguous prefix:
 *    `sort --compress-prog=sh` is --compress-program.  A word that is a
 *    proper prefix of a refused long option is refused (an ambiguous
 *    prefix is an error in the program anyway: over-matching only
 *    refuses), unless it exactly names another listed option (getopt
 *    takes an exact match first: grep's --exclude is not --exclude-from);
 *  - a long option's value is "--opt=value" or the next word;
 *  - short options cluster: `sort -bo/etc/x` is -b, then -o with the value
 *    "/etc/x"; the value of a short option is the rest of the word or,
 *    if nothing is left, the next word.  Every letter of a cluster up to
 *    the first one that takes a value is checked, so `sed -ni` is refused
 *    where -i is;
 *  - some programs have long options with one dash (find's -exec,
 *    -fprint); a word that exactly names a listed option is taken whole,
 *    before it is read as a cluster.
 *
 * Options the lists do not name are not known to take a value: a word after
 * them is judged as an operand, which errs towards judging more words as
 * paths.  The value of an unlisted "--opt=value" is judged as a path too.
 */
#include "policy/policy.h"

#include <string.h>

/* The lists that apply to a word at this position. */
struct lists {
	const struct config_strv *deny[2];
	const struct config_strv *value;
	const struct config_strv *data;
	const struct config_strv *suffix;
	const struct config_strv *chdir;
	const struct config_strv *allow; /* NULL: any option is allowed */
};

static void
lists_for(const struct config_program *pg, bool before_sub, struct lists *l)
{
	bool before = before_sub && pg->has_before;
	l->deny[0] = &pg->opts.deny;
	l->deny[1] = before ? &pg->before.deny : NULL;
	l->value = before ? &pg->before.value : &pg->opts.value;
	l->data = before ? &pg->before.data : &pg->opts.data;
	l->suffix = before ? &pg->before.suffix : &pg->opts.suffix;
	l->chdir = before ? &pg->before.chdir : &pg->opts.chdir;
	l->allow = pg->options_listed ? &pg->allow_options : NULL;
}

/* The entry of l equal to the first n bytes of s, or NULL. */
static const char *
exact(const struct config_strv *l, const char *s, size_t n)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (!strncmp(l->v[i], s, n) && l->v[i][n] == '\0')
			return l->v[i];
	return NULL;
}

static const char *
exact_deny(const struct lists *l, const char *s, size_t n)
{
	const char *d = exact(l->deny[0], s, n);
	return d ? d : exact(l->deny[1], s, n);
}

/* Whether s (n bytes, "--x...") names a listed option exactly. */
static bool
named(const struct lists *l, const char *s, size_t n)
{
	return exact_deny(l, s, n) || exact(l->value, s, n) || exact(l->data, s, n) ||
	       exact(l->suffix, s, n) || exact(l->allow, s, n);
}

/* What a long option abbreviated to s (n bytes) could stand for among the
 * listed options it is a proper prefix of. */
struct abbrev {
	const char *denied; /* the first refused one */
	bool value, data;   /* one of them takes a value (a path, data) */
	bool suffix;	    /* one of them takes a file name suffix */
	bool chdir;	    /* one of them names a directory to change into */
	bool any;	    /* it abbreviates some listed option */
	bool all_allowed;   /* every one of them is in allow_options */
};

static void
candidates(const struct lists *l, const struct config_strv *from, const char *s, size_t n,
	   struct abbrev *a, int kind)
{
	for (size_t i = 0; from && i < from->n; i++) {
		const char *o = from->v[i];
		if (o[0] != '-' || o[1] != '-' || strncmp(o, s, n) || o[n] == '\0')
			continue;
		a->any = true;
		if (kind == 0 && !a->denied)
			a->denied = o;
		a->value |= kind == 1;
		a->data |= kind == 2;
		a->suffix |= kind == 4;
		a->chdir |= kind == 5;
		/* Under allow_options an abbreviation passes only if every
		 * option it could stand for is allowed: ambiguity must not
		 * widen the list. */
		if (!exact(l->allow, o, strlen(o)))
			a->all_allowed = false;
	}
}

static void
abbreviation(const struct lists *l, const char *s, size_t n, struct abbrev *a)
{
	*a = (struct abbrev){.all_allowed = true};
	candidates(l, l->deny[0], s, n, a, 0);
	candidates(l, l->deny[1], s, n, a, 0);
	candidates(l, l->value, s, n, a, 1);
	candidates(l, l->data, s, n, a, 2);
	candidates(l, l->allow, s, n, a, 3);
	candidates(l, l->suffix, s, n, a, 4);
	candidates(l, l->chdir, s, n, a, 5);
}

static void
set_takes(const struct lists *l, const char *name, size_t n, struct policy_opt *o)
{
	if (exact(l->value, name, n))
		o->takes = POLICY_OPT_VALUE;
	else if (exact(l->data, name, n))
		o->takes = POLICY_OPT_DATA;
	o->suffix = exact(l->suffix, name, n) != NULL;
	o->chdir = exact(l->chdir, name, n) != NULL;
}

static void
long_option(const struct lists *l, const char *w, size_t n, const char *eq, struct policy_opt *o)
{
	if (named(l, w, n)) {
		o->denied = exact_deny(l, w, n);
		set_takes(l, w, n, o);
		if (l->allow && !o->denied && !exact(l->allow, w, n))
			o->unlisted = true;
	} else {
		struct abbrev a;
		/* "--" plus at least one letter: getopt_long takes any prefix */
		if (n >= 3)
			abbreviation(l, w, n, &a);
		else
			a = (struct abbrev){0};
		if (a.denied) {
			o->denied = a.denied;
			return;
		}
		o->takes = a.value ? POLICY_OPT_VALUE : a.data ? POLICY_OPT_DATA : POLICY_OPT_FLAG;
		o->suffix = a.suffix;
		/* an abbreviation that may be a directory change is taken for
		 * one: every other path is then judged from both directories */
		o->chdir = a.chdir;
		if (l->allow && !(a.any && a.all_allowed))
			o->unlisted = true;
	}
	if (o->takes != POLICY_OPT_FLAG || o->suffix)
		o->value = eq ? eq + 1 : NULL; /* a suffix alone: attached only */
	else if (eq)
		o->judge = eq + 1;
}

static void
cluster(const struct lists *l, const char *w, struct policy_opt *o)
{
	for (size_t j = 1; w[j]; j++) {
		char one[3] = {'-', w[j], '\0'};
		if (w[j] == '=') {
			/* not an option letter: judge what follows, as for
			 * "--opt=value" (errs towards refusing) */
			o->judge = w + j + 1;
			return;
		}
		if ((o->denied = exact_deny(l, one, 2)))
			return;
		set_takes(l, one, 2, o);
		if (o->suffix && o->takes == POLICY_OPT_FLAG) {
			/* an optional argument (sed -iSUFFIX): the rest of
			 * the word, never the next word */
			o->value = w + j + 1;
			if (l->allow && !exact(l->allow, one, 2))
				o->unlisted = true;
			return;
		}
		if (o->takes != POLICY_OPT_FLAG) {
			o->value = w[j + 1] ? w + j + 1 : NULL;
			if (l->allow && !exact(l->allow, one, 2))
				o->unlisted = true;
			return;
		}
		if (l->allow && !exact(l->allow, one, 2)) {
			o->unlisted = true;
			return;
		}
	}
}

void
policy_option_scan(const struct config_program *pg, bool before_sub, const char *w,
		   struct policy_opt *o)
{
	struct lists l;
	lists_for(pg, before_sub, &l);
	*o = (struct policy_opt){.takes = POLICY_OPT_FLAG};
	const char *eq = strchr(w, '=');
	size_t n = eq ? (size_t)(eq - w) : strlen(w);
	if (w[1] == '-') {
		long_option(&l, w, n, eq, o);
		return;
	}
	if (n > 2 && named(&l, w, n)) {
		/* a one-dash long option (find -exec, -name) */
		long_option(&l, w, n, eq, o);
		return;
	}
	if (n == 2 && eq && named(&l, w, n)) {
		/* "-o=x": getopt's value is "=x", argparse's "x"; marked so
		 * that a path's value is refused (decide.c, option_denied) */
		long_option(&l, w, n, eq, o);
		o->eq_short = true;
		return;
	}
	cluster(&l, w, o);
}

/* Approval patterns match words: "push" matches "push"; an option pattern
 * "--index-url" also matches "--index-url=x" and, as the program's parser
 * would take it, an abbreviation "--index=x" (pausing more, never less). */
bool
policy_option_matches(const char *want, const char *arg)
{
	if (!strcmp(arg, want))
		return true;
	if (want[0] != '-')
		return false;
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	if (!strncmp(arg, want, n) && want[n] == '\0')
		return true;
	return want[1] == '-' && arg[0] == '-' && arg[1] == '-' && n >= 3 && !strncmp(arg, want, n);
}
