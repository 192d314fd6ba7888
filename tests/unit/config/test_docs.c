/* The documentation and the loader are held to one another
 * (docs/network.md once documented network.deny, network.hosts and
 * network.tls_intercept, which the loader rejected):
 *
 *  1. every ```json block of docs/policy.md that is a policy document (it
 *     has "version") loads;
 *  2. every key in the key table of docs/policy.md ("| `workspace.mount` |
 *     ...") appears in one of those documents, so it was loaded too;
 *  3. every policy key that docs/network.md or docs/policy.md mentions
 *     (`network.deny`, `sandbox.require`, ...) is in that table.
 *
 * WD_SOURCE_ROOT (set by meson) says where the documents are. */
#include "config/config.h"

#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#define MAX_DOCS 16
#define MAX_KEYS 128

static char *
slurp(const char *rel)
{
	const char *root = getenv("WD_SOURCE_ROOT");
	char path[4096];
	cr_assert_not_null(root, "WD_SOURCE_ROOT is not set");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	char chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, k, m);
	fclose(f);
	fclose(m);
	return buf;
}

static int
line_of(const char *text, const char *p)
{
	int line = 1;
	for (const char *q = text; q < p; q++)
		line += *q == '\n';
	return line;
}

/* The newline before the line that closes a block opened before p: "```"
 * indented as the block may be (in a list item). */
static const char *
closing_fence(const char *p)
{
	for (const char *nl = strchr(p - 1, '\n'); nl; nl = strchr(nl + 1, '\n')) {
		const char *q = nl + 1;
		while (*q == ' ')
			q++;
		if (!strncmp(q, "```", 3))
			return nl;
	}
	return NULL;
}

/* The ```json blocks of text that are policy documents, parsed. */
static size_t
policy_blocks(const char *name, const char *text, json_t **docs, size_t cap)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, "```json\n"));) {
		const char *start = p + 8;
		const char *end = closing_fence(start);
		cr_assert_not_null(end, "%s:%d: unclosed code block", name, line_of(text, p));
		size_t len = (size_t)(end - start) + 1;
		p = end + 1;
		if (!memmem(start, len, "\"version\"", 9))
			continue; /* an example of something else (audit events) */
		char label[64];
		snprintf(label, sizeof(label), "%s:%d", name, line_of(text, start));
		struct config_policy *pol = NULL;
		struct wd_err e = {0};
		cr_expect_eq(config_load_buffer(start, len, label, &pol, &e), 0,
			     "a documented policy does not load: %s", e.msg);
		config_policy_free(pol);
		json_error_t je;
		json_t *j = json_loadb(start, len, 0, &je);
		if (j && n < cap)
			docs[n++] = j;
		else
			json_decref(j);
	}
	return n;
}

/* Whether the dotted key (upper-case components are placeholders:
 * programs.P.subcommands) is present in document j. */
static bool
has_key(json_t *j, const char *key)
{
	if (!*key)
		return true;
	if (!json_is_object(j))
		return false;
	const char *dot = strchr(key, '.');
	size_t n = dot ? (size_t)(dot - key) : strlen(key);
	const char *rest = dot ? dot + 1 : "";
	bool placeholder = true;
	for (size_t i = 0; i < n; i++)
		placeholder &= key[i] >= 'A' && key[i] <= 'Z';
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		if (placeholder || (strlen(k) == n && !strncmp(k, key, n)))
			if (has_key(v, rest))
				return true;
	}
	return false;
}

/* The keys of the table in docs/policy.md: rows "| `key` | ...". */
static size_t
table_keys(const char *text, char keys[][96], size_t cap)
{
	const char *sec = strstr(text, "\n## The policy document");
	cr_assert_not_null(sec, "docs/policy.md has no section 'The policy document'");
	const char *end = strstr(sec + 1, "\n## ");
	size_t n = 0;
	for (const char *p = sec; p && (!end || p < end); p = strchr(p + 1, '\n')) {
		if (strncmp(p, "\n| `", 4))
			continue;
		const char *k = p + 4, *e = strchr(k, '`');
		if (!e || (size_t)(e - k) >= sizeof(keys[0]) || n >= cap)
			continue;
		memcpy(keys[n], k, (size_t)(e - k));
		keys[n][e - k] = '\0';
		n++;
	}
	return n;
}

static bool
in_table(char keys[][96], size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], key))
			return true;
	return false;
}

/* Every network.x, sandbox.x, env.x, workspace.x mentioned must be a key
 * of the table (but for file names, the decision rules named
 * workspace.containment, workspace.resolve and workspace.view, and the
 * server's methods sandbox.create, sandbox.exec and sandbox.destroy). */
static void
mentioned_keys_are_in_table(const char *name, const char *text, char keys[][96], size_t n)
{
	regex_t re;
	regmatch_t m[3];
	static const char *const not_keys[] = {
	    "network.md",	 "sandbox.c",	   "workspace.c",    "workspace.containment",
	    "workspace.resolve", "workspace.view", "sandbox.create", "sandbox.exec",
	    "sandbox.destroy"};
	cr_assert_eq(regcomp(&re, "(^|[^A-Za-z0-9_/-])((network|sandbox|env|workspace)\\.[a-z_]+)",
			     REG_EXTENDED),
		     0);
	size_t found = 0;
	for (const char *p = text; regexec(&re, p, 3, m, p == text ? 0 : REG_NOTBOL) == 0;
	     p += m[0].rm_eo) {
		char key[96];
		size_t len = (size_t)(m[2].rm_eo - m[2].rm_so);
		bool skip = len >= sizeof(key);
		if (!skip) {
			memcpy(key, p + m[2].rm_so, len);
			key[len] = '\0';
		}
		for (size_t i = 0; !skip && i < WD_ARRAY_SIZE(not_keys); i++)
			skip = !strcmp(key, not_keys[i]);
		if (skip)
			continue;
		found++;
		cr_expect(in_table(keys, n, key),
			  "%s:%d: `%s` is not a key of docs/policy.md's table", name,
			  line_of(text, p + m[2].rm_so), key);
	}
	regfree(&re);
	cr_log_info("%s: %zu key mentions", name, found);
}

Test(docs, every_documented_key_loads)
{
	char *policy = slurp("docs/policy.md");
	char *network = slurp("docs/network.md");
	json_t *docs[MAX_DOCS];
	size_t ndocs = policy_blocks("docs/policy.md", policy, docs, MAX_DOCS);
	cr_expect_geq(ndocs, 2, "docs/policy.md has %zu policy examples", ndocs);
	policy_blocks("docs/network.md", network, NULL, 0);

	static char keys[MAX_KEYS][96];
	size_t nkeys = table_keys(policy, keys, MAX_KEYS);
	cr_expect_geq(nkeys, 40, "only %zu keys in the table", nkeys);
	for (size_t i = 0; i < nkeys; i++) {
		bool seen = false;
		for (size_t d = 0; d < ndocs && !seen; d++)
			seen = has_key(docs[d], keys[i]);
		cr_expect(seen,
			  "docs/policy.md: key `%s` is in the table but in no example "
			  "that is loaded",
			  keys[i]);
	}
	mentioned_keys_are_in_table("docs/network.md", network, keys, nkeys);
	mentioned_keys_are_in_table("docs/policy.md", policy, keys, nkeys);
	/* the three keys once documented but refused */
	cr_expect(in_table(keys, nkeys, "network.deny"));
	cr_expect(in_table(keys, nkeys, "network.hosts"));
	cr_expect(in_table(keys, nkeys, "network.tls_intercept"));
	for (size_t d = 0; d < ndocs; d++)
		json_decref(docs[d]);
	free(policy);
	free(network);
}
