/* core/report: a change set or an apply report (WD_DIFF_JSON) as types,
 * so that a front end reads the files, their results and the ignored
 * entries through accessors and embeds the rest whole, never parsing the
 * library's text itself.
 *
 * The text is util/json.h's: a byte of a name that is not UTF-8 is the
 * escape "\udcXX", which a strict parser (jansson) refuses.  Strings in a
 * report come from C strings, so a real NUL is never in one: "\udcXX" is
 * read as NUL and the two hex digits (jw_surrogates_to_nul), and undone after parsing into
 * the bytes (for the accessors) and into the visible text \xNN (for the
 * JSON a strict parser reads, wd_report_json). */
#include "core/core.h"
#include "util/json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

struct wd_report {
	json_t *root; /* strings in visible form */
	size_t nfiles;
	char **path;	     /* nfiles, the bytes as they were */
	const char **result; /* nfiles, NULL in a diff; into root */
	size_t nignored;
};

/* m in visible form if it is a string that holds an escaped byte, else
 * NULL. */
static json_t *
visible_string(json_t *m)
{
	if (!json_is_string(m) || !memchr(json_string_value(m), 0, json_string_length(m)))
		return NULL;
	wd_autofree char *v = jw_nul_undo(json_string_value(m), json_string_length(m), false);
	if (!v)
		return NULL; /* a "\u0000" of the text's own: kept as it is */
	json_t *j = json_string(v);
	if (!j)
		abort(); /* what is left is what jansson read: UTF-8 */
	return j;
}

/* Every string of v in visible form. */
static void
visible(json_t *v)
{
	const char *k;
	json_t *m, *vis;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
		{
			if ((vis = visible_string(m)))
				json_object_set_new(v, k, vis);
			else
				visible(m);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			if ((vis = visible_string(m)))
				json_array_set_new(v, i, vis);
			else
				visible(m);
		}
	}
}

WD_API int
wd_report_new(const char *text, wd_report **out, struct wd_err *err)
{
	if (!text || !out)
		return wd_err_set(err, WD_E_INVAL, "report: no text");
	size_t n = 0;
	wd_autofree char *t = jw_surrogates_to_nul(text, strlen(text), &n);
	json_error_t je;
	json_t *root = json_loadb(t, n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
	json_t *files = json_object_get(root, "files");
	if (!json_is_object(root) || !json_is_array(files)) {
		json_decref(root);
		return wd_err_set(err, WD_E_INVAL,
				  "report: not a change set or an apply report (%d:%d: %s)",
				  je.line, je.column, root ? "no \"files\" list" : je.text);
	}
	wd_report *r = wd_xcalloc(1, sizeof(*r));
	r->nfiles = json_array_size(files);
	r->path = wd_xcalloc(r->nfiles + 1, sizeof(char *));
	r->result = wd_xcalloc(r->nfiles + 1, sizeof(char *));
	for (size_t i = 0; i < r->nfiles; i++) {
		json_t *p = json_object_get(json_array_get(files, i), "path");
		r->path[i] = json_is_string(p)
				 ? jw_nul_undo(json_string_value(p), json_string_length(p), true)
				 : NULL;
		if (!r->path[i])
			r->path[i] = wd_xstrdup(""); /* a "\u0000" of the text's own */
	}
	r->nignored = json_array_size(json_object_get(root, "ignored"));
	visible(root);
	/* after visible(): the results point into the tree as it stays */
	for (size_t i = 0; i < r->nfiles; i++)
		r->result[i] =
		    json_string_value(json_object_get(json_array_get(files, i), "result"));
	r->root = root;
	*out = r;
	return 0;
}

WD_API void
wd_report_free(wd_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nfiles; i++)
		free(r->path[i]);
	free(r->path);
	free(r->result);
	json_decref(r->root);
	free(r);
}

WD_API size_t
wd_report_files(const wd_report *r)
{
	return r ? r->nfiles : 0;
}

WD_API const char *
wd_report_path(const wd_report *r, size_t i)
{
	return r && i < r->nfiles ? r->path[i] : NULL;
}

WD_API const char *
wd_report_result(const wd_report *r, size_t i)
{
	return r && i < r->nfiles ? r->result[i] : NULL;
}

WD_API size_t
wd_report_ignored(const wd_report *r)
{
	return r ? r->nignored : 0;
}

WD_API char *
wd_report_json(const wd_report *r, size_t max_files)
{
	if (!r)
		return NULL;
	json_t *c = json_deep_copy(r->root);
	json_t *files = json_object_get(c, "files");
	while (max_files && json_array_size(files) > max_files)
		json_array_remove(files, json_array_size(files) - 1);
	char *text = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(c);
	if (!text)
		abort(); /* a tree jansson holds is one it can write */
	return text;
}
