/* config.c - load and validate the policy document.
 *
 * The document is parsed by jansson with JSON_REJECT_DUPLICATES (a second
 * "git" entry silently replacing the first would be a policy nobody
 * reviewed).  Then one validation walk converts it into struct
 * config_policy, refusing unknown keys (a misspelt "deny_optons" must not
 * silently allow everything), wrong types and bad values.  Each refusal
 * names the file, the line and column of the offending key or value (via
 * locate.c) and the member's path: "p.json:7:9: programs.git.subcomands:
 * unknown key".
 */
#include "config/parse.h"
#include "util/sha256.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int
load_tool(struct vctx *v, const char *name, json_t *j, struct config_tool *t)
{
	static const char *const known[] = {"class", "profile", "description", "image", NULL};
	int rc;
	t->name = wd_xstrdup(name);
	if (!*name || config_check_word(name))
		return vctx_fail(v, true, "'%.80s' is not a tool name", name);
	if ((rc = config_want_type(v, j, JSON_OBJECT, "an object")) < 0)
		return rc;
	bool have_class = false;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		if (!strcmp(k, "class")) {
			have_class = true;
			rc = config_want_type(v, val, JSON_STRING, "a string");
			if (rc == 0) {
				const char *c = json_string_value(val);
				if (!strcmp(c, "blocked"))
					t->klass = CONFIG_TOOL_BLOCKED;
				else if (!strcmp(c, "direct"))
					t->klass = CONFIG_TOOL_DIRECT;
				else if (!strcmp(c, "sandbox"))
					t->klass = CONFIG_TOOL_SANDBOX;
				else
					rc = vctx_fail(
					    v, false,
					    "'%.40s' is not a tool class (blocked, direct, "
					    "sandbox)",
					    c);
			}
		} else if (!strcmp(k, "profile")) {
			rc = config_get_string(v, val, &t->profile);
		} else if (!strcmp(k, "description")) {
			rc = config_get_string(v, val, &t->description);
		} else if (!strcmp(k, "image")) {
			/* the form only, as sandbox.image: whether it is stored is
			 * known where the tool runs (125 there, naming the key) */
			if ((rc = config_get_string(v, val, &t->image)) == 0 &&
			    !config_image_ref_ok(t->image))
				rc = vctx_fail(v, false,
					       "expected an image name ([a-z0-9][a-z0-9._-]*, at "
					       "most 64 bytes) or sha256:HEX");
		} else {
			rc = vctx_unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	if (!have_class)
		return vctx_fail(v, true, "tool '%s' needs a \"class\" (blocked, direct, sandbox)",
				 name);
	return 0;
}

static int
cmp_program(const void *a, const void *b)
{
	return strcmp(((const struct config_program *)a)->name,
		      ((const struct config_program *)b)->name);
}
static int
cmp_tool(const void *a, const void *b)
{
	return strcmp(((const struct config_tool *)a)->name, ((const struct config_tool *)b)->name);
}
static int
cmp_profile(const void *a, const void *b)
{
	return strcmp(((const struct config_profile *)a)->name,
		      ((const struct config_profile *)b)->name);
}

/* Profiles first: tools refer to them. */
static int
load_profiles(struct vctx *v, json_t *profiles, struct config_policy *p)
{
	int rc;
	p->profiles = wd_xcalloc(config_nbuiltin_profiles + 1, sizeof(*p->profiles));
	for (size_t i = 0; i < config_nbuiltin_profiles; i++) {
		p->profiles[i] = (struct config_profile){
		    .name = wd_xstrdup(config_builtin_profiles[i].name),
		    .builtin = true,
		    .lim = config_builtin_profiles[i].lim,
		};
	}
	p->nprofiles = config_nbuiltin_profiles;
	if (!profiles)
		return 0;
	vctx_push_key(v, "profiles");
	if ((rc = config_want_type(v, profiles, JSON_OBJECT, "an object")) < 0)
		return rc;
	p->profiles = wd_xrealloc(p->profiles, (p->nprofiles + json_object_size(profiles) + 1) *
						   sizeof(*p->profiles));
	const char *k;
	json_t *val;
	json_object_foreach(profiles, k, val)
	{
		vctx_push_key(v, k);
		if (config_profile_find(p, k))
			return vctx_fail(v, true, "profile '%s' is built in; choose another name",
					 k);
		struct config_profile *pr = &p->profiles[p->nprofiles++];
		memset(pr, 0, sizeof(*pr));
		if ((rc = config_load_profile(v, k, val, pr)) < 0)
			return rc;
		qsort(p->profiles, p->nprofiles, sizeof(*p->profiles), cmp_profile);
		vctx_pop(v);
	}
	vctx_pop(v);
	return 0;
}

static int
load_programs(struct vctx *v, json_t *val, struct config_policy *p)
{
	int rc = config_want_type(v, val, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	p->programs = wd_xcalloc(json_object_size(val) + 1, sizeof(*p->programs));
	const char *k;
	json_t *v2;
	json_object_foreach(val, k, v2)
	{
		vctx_push_key(v, k);
		rc = config_load_program(v, k, false, v2, &p->programs[p->nprograms++]);
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	qsort(p->programs, p->nprograms, sizeof(*p->programs), cmp_program);
	return 0;
}

static int
load_tools(struct vctx *v, json_t *val, struct config_policy *p)
{
	int rc = config_want_type(v, val, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	p->tools = wd_xcalloc(json_object_size(val) + 1, sizeof(*p->tools));
	const char *k;
	json_t *v2;
	json_object_foreach(val, k, v2)
	{
		vctx_push_key(v, k);
		struct config_tool *t = &p->tools[p->ntools++];
		if ((rc = load_tool(v, k, v2, t)) < 0)
			return rc;
		if (t->profile && !config_profile_find(p, t->profile)) {
			vctx_push_key(v, "profile");
			return vctx_fail(v, false, "unknown profile '%.80s'", t->profile);
		}
		if (t->klass == CONFIG_TOOL_SANDBOX && !t->profile)
			t->profile = wd_xstrdup("shell_commands");
		/* an image is where a sandbox tool runs: on a blocked or direct
		 * tool it would say something the route never does */
		if (t->image && t->klass != CONFIG_TOOL_SANDBOX) {
			vctx_push_key(v, "image");
			return vctx_fail(v, false, "only a sandbox tool runs in an image");
		}
		vctx_pop(v);
	}
	qsort(p->tools, p->ntools, sizeof(*p->tools), cmp_tool);
	return 0;
}

static int
load_approvals(struct vctx *v, json_t *val, struct config_policy *p)
{
	static const char *const ak[] = {"ttl", "max_state_entries", NULL};
	int rc = config_want_type(v, val, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *v2;
	json_object_foreach(val, k, v2)
	{
		vctx_push_key(v, k);
		if (!strcmp(k, "max_state_entries")) {
			/* the bound of the state walk on every pause and retry
			 * (util/tree.c): below 1,000 a small project could be
			 * approved never; above 100,000,000 one pause could walk
			 * for minutes on the host */
			if (!json_is_integer(v2) || json_integer_value(v2) < 1000 ||
			    json_integer_value(v2) > 100000000)
				return vctx_fail(v, false,
						 "expected a whole number from 1000 to 100000000");
			p->approval_max_state_entries = (uint64_t)json_integer_value(v2);
			vctx_pop(v);
			continue;
		}
		if (strcmp(k, "ttl"))
			return vctx_unknown_key(v, k, ak);
		if (!json_is_integer(v2) || json_integer_value(v2) <= 0 ||
		    json_integer_value(v2) > 7 * 86400)
			return vctx_fail(v, false, "expected whole seconds from 1 to 604800");
		p->approval_ttl_s = (uint64_t)json_integer_value(v2);
		vctx_pop(v);
	}
	return 0;
}

static int
load_audit(struct vctx *v, json_t *val, struct config_policy *p)
{
	static const char *const ak[] = {"path", NULL};
	int rc = config_want_type(v, val, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *v2;
	json_object_foreach(val, k, v2)
	{
		vctx_push_key(v, k);
		if (strcmp(k, "path"))
			return vctx_unknown_key(v, k, ak);
		if ((rc = config_get_string(v, v2, &p->audit_path)) < 0)
			return rc;
		if (!p->audit_path[0])
			return vctx_fail(v, false, "must not be empty");
		vctx_pop(v);
	}
	return 0;
}

static int
load_member(struct vctx *v, const char *k, json_t *val, struct config_policy *p)
{
	static const char *const known[] = {"version",	"workspace", "programs", "tools",
					    "profiles", "approvals", "audit",	 "network",
					    "sandbox",	"env",	     "secrets",	 NULL};
	if (!strcmp(k, "version")) {
		if (!json_is_integer(val))
			return vctx_fail(v, false, "expected an integer, got %s",
					 config_type_name(val));
		if (json_integer_value(val) != CONFIG_VERSION)
			return vctx_fail(v, false, "unsupported version %lld (this warden reads 1)",
					 (long long)json_integer_value(val));
		p->version = CONFIG_VERSION;
		return 0;
	}
	if (!strcmp(k, "profiles"))
		return 0; /* done first */
	if (!strcmp(k, "workspace"))
		return config_load_workspace(v, val, p);
	if (!strcmp(k, "programs"))
		return load_programs(v, val, p);
	if (!strcmp(k, "tools"))
		return load_tools(v, val, p);
	if (!strcmp(k, "approvals"))
		return load_approvals(v, val, p);
	if (!strcmp(k, "audit"))
		return load_audit(v, val, p);
	if (!strcmp(k, "network"))
		return config_load_network(v, val, &p->net);
	if (!strcmp(k, "sandbox"))
		return config_load_sandbox(v, val, &p->sandbox);
	if (!strcmp(k, "env"))
		return config_load_env(v, val, &p->env_deny);
	if (!strcmp(k, "secrets"))
		return config_load_secrets(v, val, p);
	return vctx_unknown_key(v, k, known);
}

static int
load_root(struct vctx *v, json_t *root, struct config_policy *p)
{
	int rc;
	if (!json_is_object(root))
		return vctx_fail(v, false, "the policy must be a JSON object, got %s",
				 config_type_name(root));
	if (!json_object_get(root, "version"))
		return vctx_fail(v, false, "missing \"version\": 1");
	if ((rc = load_profiles(v, json_object_get(root, "profiles"), p)) < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(root, k, val)
	{
		vctx_push_key(v, k);
		if ((rc = load_member(v, k, val, p)) < 0)
			return rc;
		vctx_pop(v);
	}
	if (!p->mount)
		p->mount = wd_xstrdup("/workspace");
	if (!p->approval_ttl_s)
		p->approval_ttl_s = 600;
	if (!p->approval_max_state_entries)
		p->approval_max_state_entries = CONFIG_MAX_STATE_ENTRIES;

	/* "cat, diff, find, ..." for the advice of a refused program. */
	size_t need = 1;
	for (size_t i = 0; i < p->nprograms; i++)
		need += strlen(p->programs[i].name) + 2;
	p->allowed_names = wd_xmalloc(need);
	p->allowed_names[0] = '\0';
	for (size_t i = 0; i < p->nprograms; i++) {
		if (i)
			strcat(p->allowed_names, ", ");
		strcat(p->allowed_names, p->programs[i].name);
	}
	return 0;
}

int
config_load_buffer(const char *buf, size_t len, const char *name, struct config_policy **out,
		   struct wd_err *err)
{
	json_error_t je;
	if (len > CONFIG_MAX_FILE)
		return wd_err_set(err, WD_E_INVAL, "%s:1:1: policy larger than %u bytes", name,
				  CONFIG_MAX_FILE);
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s", name, je.line < 1 ? 1 : je.line,
				  je.column < 1 ? 1 : je.column, je.text);
	struct vctx v = {.name = name, .text = buf, .len = len, .err = err};
	struct config_policy *p = wd_xcalloc(1, sizeof(*p));
	p->source = wd_xstrdup(name);
	int rc = load_root(&v, root, p);
	json_decref(root);
	if (rc < 0) {
		config_policy_free(p);
		return rc;
	}
	json_t *eff = config_policy_to_json(p);
	char *canon = json_dumps(eff, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(eff);
	if (!canon)
		abort();
	wd_sha256_hex_of(canon, strlen(canon), p->digest);
	free(canon);
	*out = p;
	return 0;
}

/* The file is opened O_NONBLOCK and must be a regular file: a FIFO given
 * to --policy used to block warden forever in open(), a device would be
 * read without end.  O_NONBLOCK does not change reads
 * of a regular file. */
int
config_load_file(const char *path, struct config_policy **out, struct wd_err *err)
{
	const char *preset = config_preset_name(path);
	if (preset)
		return config_load_preset(preset, out, err);
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int rc = wd_err_sys(err, errno, "policy %s", path);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "policy %s", path);
	if (!S_ISREG(st.st_mode))
		return wd_err_set(err, WD_E_INVAL, "policy %s: not a regular file", path);
	if ((uint64_t)st.st_size > CONFIG_MAX_FILE)
		return wd_err_set(err, WD_E_INVAL, "%s:1:1: policy larger than %u bytes", path,
				  CONFIG_MAX_FILE);
	wd_autofree char *buf = wd_xmalloc((size_t)st.st_size + 1);
	size_t off = 0;
	for (;;) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wd_err_sys(err, errno, "read policy %s", path);
		if (n == 0)
			break;
		off += (size_t)n;
		if (off > (size_t)st.st_size)
			return wd_err_set(err, WD_E_INVAL, "policy %s: file grew while reading",
					  path);
	}
	return config_load_buffer(buf, off, path, out, err);
}

int
config_load_default(struct config_policy **out, struct wd_err *err)
{
	size_t n = 0;
	for (size_t i = 0; config_default_json_parts[i]; i++)
		n += strlen(config_default_json_parts[i]);
	wd_autofree char *json = wd_xmalloc(n + 1);
	json[0] = '\0';
	for (size_t i = 0, o = 0; config_default_json_parts[i]; i++) {
		size_t k = strlen(config_default_json_parts[i]);
		memcpy(json + o, config_default_json_parts[i], k + 1);
		o += k;
	}
	return config_load_buffer(json, n, "<built-in>", out, err);
}

void
config_policy_free(struct config_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nprograms; i++)
		config_program_fini(&p->programs[i]);
	free(p->programs);
	free(p->sandbox.image);
	for (size_t i = 0; i < p->nwprograms; i++)
		config_program_fini(&p->wprograms[i]);
	free(p->wprograms);
	for (size_t i = 0; i < p->ntools; i++) {
		free(p->tools[i].name);
		free(p->tools[i].profile);
		free(p->tools[i].image);
		free(p->tools[i].description);
	}
	free(p->tools);
	for (size_t i = 0; i < p->nprofiles; i++)
		free(p->profiles[i].name);
	free(p->profiles);
	config_strv_free(&p->net.allow);
	config_strv_free(&p->net.deny);
	config_strv_free(&p->net.hosts);
	config_strv_free(&p->net.ranges);
	free(p->net.ports);
	free(p->net.upstream_ca);
	config_strv_free(&p->env_deny);
	config_strv_free(&p->wprotect);
	config_secrets_free(p);
	free(p->source);
	free(p->mount);
	free(p->audit_path);
	free(p->allowed_names);
	free(p);
}

static const struct config_program *
find_in(const struct config_program *v, size_t n, const char *name, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *s = v[mid].name;
		int c = strncmp(s, name, len);
		if (c == 0 && s[len] != '\0')
			c = 1;
		if (c == 0)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct config_program *
config_program_find(const struct config_policy *p, const char *name, size_t len)
{
	return find_in(p->programs, p->nprograms, name, len);
}

const struct config_program *
config_wprogram_find(const struct config_policy *p, const char *rel)
{
	return find_in(p->wprograms, p->nwprograms, rel, strlen(rel));
}

const struct config_tool *
config_tool_find(const struct config_policy *p, const char *name)
{
	for (size_t i = 0; i < p->ntools; i++)
		if (!strcmp(p->tools[i].name, name))
			return &p->tools[i];
	return NULL;
}

const struct config_profile *
config_profile_find(const struct config_policy *p, const char *name)
{
	for (size_t i = 0; i < p->nprofiles; i++)
		if (!strcmp(p->profiles[i].name, name))
			return &p->profiles[i];
	return NULL;
}
