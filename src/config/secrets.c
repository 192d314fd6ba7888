/* secrets.c - the policy's "secrets" object: the credentials a
 * run gets without the sandbox holding them, as `warden run --secret`,
 * `--inject`, `--inject-basic` and `--placeholder` say it:
 *
 *     "secrets": {
 *       "GITHUB_TOKEN": {
 *         "from": "env:GH_TOKEN",                (or "@/abs/path/to/file")
 *         "placeholder": "GITHUB_TOKEN",         (optional: a variable)
 *         "inject": ["api.github.com Authorization=Bearer {GITHUB_TOKEN}"],
 *         "inject_basic": ["github.com x-access-token:{GITHUB_TOKEN}"]
 *       }
 *     }
 *
 * The document names where a value is, never the value: a policy file is
 * read by `warden policy show`, hashed into approval ids and copied around.
 * The net module parses the rules fully when a run applies them (config
 * sits below net); what is certainly wrong is refused here, with its
 * position. */
#include "config/parse.h"

#include <string.h>

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* "DEST WHAT" as one string: a destination, one space, what to send. */
static const char *
check_rule(const char *s)
{
	const char *sp = strchr(s, ' ');
	if (!sp || sp == s || !sp[1])
		return "is not 'HOST[:PORT][/PATH] WHAT' (a destination, a space, then what to "
		       "send)";
	if (s[0] == '*' || memchr(s, '*', (size_t)(sp - s)))
		return "names a wildcard: a credential goes to one host";
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			return "holds a control character";
	return NULL;
}

static int
load_source(struct vctx *v, json_t *val, struct config_secret *sec)
{
	int rc = config_get_string(v, val, &sec->from);
	if (rc < 0)
		return rc;
	const char *f = sec->from;
	if (f[0] == '@') {
		/* relative to what?  the policy's directory and the caller's
		 * are both guesses: refuse rather than pick one */
		if (f[1] != '/' || config_check_word(f + 1))
			return vctx_fail(v, false, "\"@FILE\" needs an absolute path");
	} else if (!strncmp(f, "env:", 4)) {
		if (!f[4] || strchr(f + 4, '=') || strlen(f + 4) > 255 || config_check_word(f + 4))
			return vctx_fail(v, false, "\"env:VAR\" needs a variable name");
	} else {
		return vctx_fail(v, false, "expected \"@/path/to/file\" or \"env:VAR\"");
	}
	return 0;
}

static int
load_secret(struct vctx *v, const char *name, json_t *j, struct config_secret *sec)
{
	static const char *const known[] = {"from", "placeholder", "inject", "inject_basic", NULL};
	sec->name = wd_xstrdup(name);
	if (!name_ok(name))
		return vctx_fail(v, true,
				 "'%.64s' is not a secret name (a letter or _, then letters, "
				 "digits and _, at most 64)",
				 name);
	if (json_is_string(j))
		return load_source(v, j, sec);
	int rc = config_want_type(v, j, JSON_OBJECT, "an object or \"env:VAR\" / \"@FILE\"");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		if (!strcmp(k, "from")) {
			rc = load_source(v, val, sec);
		} else if (!strcmp(k, "placeholder")) {
			rc = config_get_string(v, val, &sec->placeholder);
			if (rc == 0 && !name_ok(sec->placeholder))
				rc = vctx_fail(v, false, "expected an environment variable name");
		} else if (!strcmp(k, "inject")) {
			rc = config_get_strv(v, val, &sec->inject, false, check_rule);
		} else if (!strcmp(k, "inject_basic")) {
			rc = config_get_strv(v, val, &sec->inject_basic, false, check_rule);
		} else {
			return vctx_unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	if (!sec->from)
		return vctx_fail(v, true, "'%s' needs \"from\": \"env:VAR\" or \"@/path\"", name);
	return 0;
}

int
config_load_secrets(struct vctx *v, json_t *j, struct config_policy *p)
{
	int rc = config_want_type(v, j, JSON_OBJECT, "an object of secrets by name");
	if (rc < 0)
		return rc;
	p->secrets = wd_xcalloc(json_object_size(j) + 1, sizeof(*p->secrets));
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		rc = load_secret(v, k, val, &p->secrets[p->nsecrets++]);
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	return 0;
}

void
config_secrets_free(struct config_policy *p)
{
	for (size_t i = 0; i < p->nsecrets; i++) {
		free(p->secrets[i].name);
		free(p->secrets[i].from);
		free(p->secrets[i].placeholder);
		config_strv_free(&p->secrets[i].inject);
		config_strv_free(&p->secrets[i].inject_basic);
	}
	free(p->secrets);
}

json_t *
config_secrets_json(const struct config_policy *p)
{
	json_t *o = json_object();
	for (size_t i = 0; i < p->nsecrets; i++) {
		const struct config_secret *s = &p->secrets[i];
		json_t *e = json_pack("{s:s}", "from", s->from);
		if (s->placeholder)
			json_object_set_new(e, "placeholder", json_string(s->placeholder));
		json_t *a = json_array();
		for (size_t k = 0; k < s->inject.n; k++)
			json_array_append_new(a, json_string(s->inject.v[k]));
		json_object_set_new(e, "inject", a);
		a = json_array();
		for (size_t k = 0; k < s->inject_basic.n; k++)
			json_array_append_new(a, json_string(s->inject_basic.v[k]));
		json_object_set_new(e, "inject_basic", a);
		json_object_set_new(o, s->name, e);
	}
	return o;
}
