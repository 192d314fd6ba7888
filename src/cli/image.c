/* cli/image: warden image build, import, export, ls, inspect, rm.  Parse and
 * print over the wd_image_* calls of include/warden.h. */
#include "cli/cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char image_usage[] =
    "usage: warden image build NAME [--packages LIST] [--suite SUITE] [--from NAME]\n"
    "                          [--env NAME=VALUE] [--user NAME] [-f RECIPE] [--json]\n"
    "       warden image import NAME PATH [--tag TAG] [--json]\n"
    "       warden image export NAME DIR [--entrypoint WORD]... [--cmd WORD]...\n"
    "                          [--user USER] [--workdir DIR] [--env NAME=VALUE]...\n"
    "                          [--label KEY=VALUE]... [--add TREE] [--tag TAG] [--json]\n"
    "       warden image ls [--json]\n"
    "       warden image inspect NAME [--json]\n"
    "       warden image rm NAME... [--json]\n"
    "\n"
    "An image is a root filesystem built from Debian packages with mmdebstrap (the\n"
    "host's apt sources), stored read-only under the state directory; warden run\n"
    "--image NAME (or the policy's sandbox.image) runs in its /usr and /etc instead\n"
    "of the host's.\n"
    "\n"
    "build:\n"
    "  -p, --packages LIST   packages beyond Debian's essential set (commas or blanks)\n"
    "      --suite SUITE     the Debian suite (default: bookworm)\n"
    "      --from NAME       start from an image's recipe: its suite, packages and env\n"
    "      --env NAME=VALUE  a variable every command in the image gets\n"
    "      --user NAME       the name of the sandbox user (uid 1000) in the image\n"
    "  -f, --file RECIPE     a recipe: KEY = VALUE lines (suite, packages, env, from,\n"
    "                        user)\n"
    "      --json            print the image's metadata as JSON\n"
    "import: PATH is an OCI image layout (a directory; --tag chooses the image in\n"
    "it, default its only tagged one) or a docker save tarball (a file).  Device\n"
    "nodes, FIFOs, sockets, files past 4 GiB and more than 1,000,000 entries are\n"
    "refused.  The image config's Env joins the image's env; User and WorkingDir\n"
    "are recorded (inspect shows them).\n"
    "export: writes the image as a new OCI image layout DIR (it must not exist),\n"
    "reproducibly (the same image, the same manifest digest).\n"
    "      --entrypoint WORD  a word of the config's Entrypoint (repeat for more)\n"
    "      --cmd WORD         a word of its Cmd (repeat for more)\n"
    "      --user USER        its User (default: the image's, if it has one)\n"
    "      --workdir DIR      its WorkingDir\n"
    "      --env NAME=VALUE   a variable of its Env, over the image's (and PATH)\n"
    "      --label KEY=VALUE  a label (org.opencontainers.image.*, ...)\n"
    "      --add TREE         TREE's files as a second layer, owned by root\n"
    "      --tag TAG          the image's tag in DIR (default: NAME)\n"
    "NAME and the image's digest (sha256:HEX) both name it; an image still used by a\n"
    "running sandbox or a session is not removed.\n";

enum {
	OPT_SUITE = 256,
	OPT_FROM,
	OPT_ENV,
	OPT_JSON,
	OPT_ENTRYPOINT,
	OPT_CMD,
	OPT_USER,
	OPT_WORKDIR,
	OPT_LABEL,
	OPT_ADD,
};

/* A string of image.json as a human reads it: quoted (git's
 * core.quotePath) when it holds a control byte or the like; image.json is
 * data from the store, an imported image's could hold anything. */
static void
put(const char *s)
{
	char *q = wd_esc_path(s ? s : "?");
	fputs(q, stdout);
	free(q);
}

static void
print_meta(json_t *m)
{
	const char *d = json_string_value(json_object_get(m, "digest"));
	json_t *names = json_object_get(m, "names");
	size_t i;
	json_t *v;
	printf("sha256:%.12s ", d && strspn(d, "0123456789abcdef") == 64 ? d : "?");
	json_array_foreach(names, i, v)
	{
		printf("%s", i ? "," : "");
		put(json_string_value(v));
	}
	if (!json_array_size(names))
		printf("-");
	const char *suite = json_string_value(json_object_get(m, "suite"));
	printf("  ");
	put(suite);
	printf("  %.1f MB  %zu packages",
	       (double)json_integer_value(json_object_get(m, "size_bytes")) / 1e6,
	       json_array_size(json_object_get(m, "installed")));
	json_t *pk = json_object_get(m, "packages");
	if (json_array_size(pk)) {
		printf(" (");
		json_array_foreach(pk, i, v)
		{
			const char *p = json_string_value(v);
			printf("%s", i ? " " : "");
			put(p);
		}
		printf(")");
	}
	printf("\n");
}

static int
show(const char *sub, const char *json_text, bool json, bool detail)
{
	if (json) {
		fputs(json_text, stdout);
		fputc('\n', stdout);
		return 0;
	}
	json_t *j = json_loads(json_text, 0, NULL);
	if (!j)
		return cli_fail(sub, "cannot read the image's metadata");
	if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v) print_meta(v);
	} else {
		print_meta(j);
		if (detail) {
			const char *d = json_string_value(json_object_get(j, "digest"));
			printf("digest: sha256:");
			put(d);
			printf("\n");
			const char *p = json_string_value(json_object_get(j, "path"));
			if (p) {
				printf("path: ");
				put(p);
				printf("\n");
			}
			size_t i;
			json_t *v;
			const char *fields[] = {"source", "user", "workdir"};
			for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
				const char *fv = json_string_value(json_object_get(j, fields[k]));
				if (fv) {
					printf("%s: ", fields[k]);
					put(fv);
					printf("\n");
				}
			}
			json_array_foreach(json_object_get(j, "env"), i, v)
			{
				printf("env: ");
				put(json_string_value(v));
				printf("\n");
			}
			json_array_foreach(json_object_get(j, "installed"), i, v)
			{
				printf("installed: ");
				put(json_string_value(v));
				printf("\n");
			}
		}
	}
	json_decref(j);
	return 0;
}

static int
image_build(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"packages", required_argument, NULL, 'p'},
	    {"suite", required_argument, NULL, OPT_SUITE},
	    {"from", required_argument, NULL, OPT_FROM},
	    {"env", required_argument, NULL, OPT_ENV},
	    {"user", required_argument, NULL, OPT_USER},
	    {"file", required_argument, NULL, 'f'},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *sub = "image build";
	wd_image_recipe *r = wd_image_recipe_new();
	struct wd_err e = {0};
	bool json = false;
	int c, rc = 0;
	optind = 1;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "p:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (wd_image_recipe_add_packages(r, optarg, &e) < 0)
				rc = cli_fail(sub, "--packages: %s", e.msg);
			break;
		case OPT_SUITE:
			if (wd_image_recipe_set_suite(r, optarg, &e) < 0)
				rc = cli_fail(sub, "--suite: %s", e.msg);
			break;
		case OPT_FROM:
			if (wd_image_recipe_set_from(r, optarg, &e) < 0)
				rc = cli_fail(sub, "--from: %s", e.msg);
			break;
		case OPT_ENV:
			if (wd_image_recipe_add_env(r, optarg, &e) < 0)
				rc = cli_fail(sub, "--env: %s", e.msg);
			break;
		case OPT_USER:
			if (wd_image_recipe_set_user(r, optarg, &e) < 0)
				rc = cli_fail(sub, "--user: %s", e.msg);
			break;
		case 'f':
			if (wd_image_recipe_load(r, optarg, &e) < 0)
				rc = cli_fail(sub, "%s", e.msg);
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(image_usage, stdout);
			wd_image_recipe_free(r);
			return 0;
		default:
			rc = cli_bad_option(sub, argc, argv, opts);
		}
	}
	if (rc == 0 && optind != argc - 1)
		rc = cli_fail(sub, optind >= argc
				       ? "no image name given (warden image build NAME ...)"
				       : "one image name, then options");
	char *out = NULL;
	wd_ctx *ctx = NULL;
	if (rc == 0) {
		if (wd_ctx_new(&ctx, &e) < 0 || wd_image_build(ctx, argv[optind], r, &out, &e) < 0)
			rc = cli_fail(sub, "%s", e.msg);
		else
			rc = show(sub, out, json, false);
	}
	free(out);
	wd_ctx_free(ctx);
	wd_image_recipe_free(r);
	return rc;
}

static int
image_import(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"tag", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *sub = "image import", *tag = NULL;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			tag = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(image_usage, stdout);
			return 0;
		default:
			return cli_bad_option(sub, argc, argv, opts);
		}
	}
	if (optind != argc - 2)
		return cli_fail(sub, "give an image name and an OCI layout or docker save tarball "
				     "(warden image import NAME PATH)");
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *out = NULL;
	int rc;
	if (wd_ctx_new(&ctx, &e) < 0 ||
	    wd_image_import(ctx, argv[optind], argv[optind + 1], tag, &out, &e) < 0)
		rc = cli_fail(sub, "%s", e.msg);
	else
		rc = show(sub, out, json, false);
	free(out);
	wd_ctx_free(ctx);
	return rc;
}

static int
image_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"entrypoint", required_argument, NULL, OPT_ENTRYPOINT},
	    {"cmd", required_argument, NULL, OPT_CMD},
	    {"user", required_argument, NULL, OPT_USER},
	    {"workdir", required_argument, NULL, OPT_WORKDIR},
	    {"env", required_argument, NULL, OPT_ENV},
	    {"label", required_argument, NULL, OPT_LABEL},
	    {"add", required_argument, NULL, OPT_ADD},
	    {"tag", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *sub = "image export", *add = NULL, *tag = NULL;
	bool json = false;
	int c, rc = 0;
	json_t *cfg = json_object();
	optind = 1;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *eq = optarg ? strchr(optarg, '=') : NULL;
		switch (c) {
		case OPT_ENTRYPOINT:
		case OPT_CMD: {
			const char *k = c == OPT_CMD ? "Cmd" : "Entrypoint";
			if (!json_object_get(cfg, k))
				json_object_set_new(cfg, k, json_array());
			json_array_append_new(json_object_get(cfg, k), json_string(optarg));
			break;
		}
		case OPT_USER:
		case OPT_WORKDIR:
			if (!*optarg || strlen(optarg) > 4096)
				rc = cli_fail(sub, "--%s: empty or longer than 4096 bytes",
					      c == OPT_USER ? "user" : "workdir");
			else
				json_object_set_new(cfg, c == OPT_USER ? "User" : "WorkingDir",
						    json_string(optarg));
			break;
		case OPT_ENV:
			if (!eq || eq == optarg) {
				rc = cli_fail(sub, "--env %s: expected NAME=VALUE",
					      cli_quote(optarg));
				break;
			}
			if (!json_object_get(cfg, "Env"))
				json_object_set_new(cfg, "Env", json_array());
			json_array_append_new(json_object_get(cfg, "Env"), json_string(optarg));
			break;
		case OPT_LABEL: {
			if (!eq || eq == optarg) {
				rc = cli_fail(sub, "--label %s: expected KEY=VALUE",
					      cli_quote(optarg));
				break;
			}
			if (!json_object_get(cfg, "Labels"))
				json_object_set_new(cfg, "Labels", json_object());
			char *k = strndup(optarg, (size_t)(eq - optarg));
			json_object_set_new(json_object_get(cfg, "Labels"), k, json_string(eq + 1));
			free(k);
			break;
		}
		case OPT_ADD:
			add = optarg;
			break;
		case 't':
			tag = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(image_usage, stdout);
			json_decref(cfg);
			return 0;
		default:
			rc = cli_bad_option(sub, argc, argv, opts);
		}
	}
	if (rc == 0 && optind != argc - 2)
		rc = cli_fail(sub, "give an image name and a directory to create (warden image "
				   "export NAME DIR)");
	/* a value that is no UTF-8 cannot be in the config (JSON strings) */
	char *text = rc == 0 ? json_dumps(cfg, JSON_COMPACT) : NULL;
	if (rc == 0 && !text)
		rc = cli_fail(sub, "an option's value is not UTF-8");
	json_decref(cfg);
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *out = NULL;
	if (rc == 0) {
		if (wd_ctx_new(&ctx, &e) < 0 || wd_image_export(ctx, argv[optind], argv[optind + 1],
								tag, text, add, &out, &e) < 0)
			rc = cli_fail(sub, "%s", e.msg);
		else if (json) {
			fputs(out, stdout);
			fputc('\n', stdout);
		} else {
			json_t *j = json_loads(out, 0, NULL);
			const char *m = json_string_value(json_object_get(j, "manifest"));
			printf("%s ", m ? m : "?");
			put(json_string_value(json_object_get(j, "path")));
			printf(" (%zu layers, %.1f MB)\n",
			       json_array_size(json_object_get(j, "layers")),
			       (double)json_integer_value(json_object_get(j, "size_bytes")) / 1e6);
			json_decref(j);
		}
	}
	free(text);
	free(out);
	wd_ctx_free(ctx);
	return rc;
}

/* ls, inspect, rm: NAMES... and --json */
static int
image_simple(const char *verb, int argc, char **argv)
{
	char sub[32];
	snprintf(sub, sizeof(sub), "image %s", verb);
	bool json = false;
	int nnames = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(image_usage, stdout);
			return 0;
		} else if (argv[i][0] == '-')
			return cli_fail(sub, "unknown option %s (see warden image --help)",
					cli_quote(argv[i]));
		else
			nnames++;
	}
	bool ls = !strcmp(verb, "ls"), inspect = !strcmp(verb, "inspect");
	if (ls && nnames)
		return cli_fail(sub, "takes no name (warden image inspect NAME shows one)");
	if (inspect && nnames != 1)
		return cli_fail(sub, "one image name, please");
	if (!ls && !inspect && !nnames)
		return cli_fail(sub, "no image name given");
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0)
		return cli_fail(sub, "%s", e.msg);
	char *out = NULL;
	int rc = 0;
	if (ls) {
		rc = wd_image_list(ctx, &out, &e) < 0 ? cli_fail(sub, "%s", e.msg)
						      : show(sub, out, json, false);
	} else {
		for (int i = 1; i < argc; i++) {
			if (argv[i][0] == '-')
				continue;
			if (inspect) {
				rc = wd_image_inspect(ctx, argv[i], &out, &e) < 0
					 ? cli_fail(sub, "%s", e.msg)
					 : show(sub, out, json, true);
			} else if (wd_image_remove(ctx, argv[i], &e) < 0) {
				rc = cli_fail(sub, "%s", e.msg);
			} else if (json) {
				json_t *j = json_pack("{s:s, s:b}", "image", argv[i], "removed", 1);
				char *t = json_dumps(j, JSON_COMPACT);
				printf("%s\n", t);
				free(t);
				json_decref(j);
			}
		}
	}
	free(out);
	wd_ctx_free(ctx);
	return rc;
}

int
cli_image(int argc, char **argv)
{
	if (argc < 2) {
		int rc = cli_fail("image", "expected a subcommand (build, import, export, ls, "
					   "inspect, rm)");
		fputs(image_usage, stderr);
		return rc;
	}
	const char *verb = argv[1];
	if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
		fputs(image_usage, stdout);
		return 0;
	}
	if (!strcmp(verb, "build"))
		return image_build(argc - 1, argv + 1);
	if (!strcmp(verb, "import"))
		return image_import(argc - 1, argv + 1);
	if (!strcmp(verb, "export"))
		return image_export(argc - 1, argv + 1);
	if (!strcmp(verb, "ls") || !strcmp(verb, "inspect") || !strcmp(verb, "rm"))
		return image_simple(verb, argc - 1, argv + 1);
	return cli_fail("image", "unknown subcommand %s (build, import, export, ls, inspect, rm)",
			cli_quote(verb));
}
