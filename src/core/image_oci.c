/* core/image_oci: what import reads besides the layers.  An OCI image
 * layout's config (Env, User, WorkingDir: image_oci_config), and a
 * `docker save` tarball turned into an OCI image layout (our own reader
 * of the tar: image_docker_to_oci), which umoci then unpacks as any
 * layout (image_build.c).
 *
 * Every name in the archive or the layout's JSON is data: a member is
 * looked up by name in a table, its bytes copied into blobs/sha256/HEX
 * under the digest computed here, so no name from the file ever becomes
 * a path on the host.  Digests read from JSON are checked to be sha256
 * and 64 hex digits before they name a blob. */
#include "core/core.h"
#include "util/escape.h"
#include "util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/image-internal.h"

/* A JSON file of the layout or the archive: at most this many bytes
 * (a manifest or a config is a few KiB; a bigger one is no image's). */
#define META_MAX (4U << 20)
/* Members of a docker save tarball: a few per layer.  Past this, it is
 * no docker save output, and the table would grow without bound. */
#define ARCHIVE_MAX_MEMBERS 100000

static bool
digest_ok(const char *d)
{
	return d && !strncmp(d, "sha256:", 7) && strlen(d + 7) == 64 &&
	       strspn(d + 7, "0123456789abcdef") == 64;
}

static json_t *
load_json(const char *path, struct wd_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		wd_err_sys(err, errno, "%s", path);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)META_MAX) {
		wd_err_set(err, WD_E_INVAL, "%s is not a regular file of at most %u bytes", path,
			   META_MAX);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	return j;
}

/* blobs/sha256/HEX of layout for digest d ("sha256:HEX") */
static json_t *
load_blob(const char *layout, const char *d, const char *what, struct wd_err *err)
{
	if (!digest_ok(d)) {
		wd_err_set(err, WD_E_INVAL, "%s/index.json: the %s's digest is not sha256:HEX",
			   layout, what);
		return NULL;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, d + 7);
	return load_json(p, err);
}

/* The manifest index.json of layout tags as tag: a new object, or NULL
 * with err set. */
static json_t *
load_manifest(const char *layout, const char *tag, struct wd_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/index.json", layout);
	json_t *idx = load_json(p, err);
	if (!idx)
		return NULL;
	const char *md = NULL;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(idx, "manifests"), i, m)
	{
		const char *t = json_string_value(json_object_get(
		    json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
		if (t && !strcmp(t, tag))
			md = json_string_value(json_object_get(m, "digest"));
	}
	json_t *man = md ? load_blob(layout, md, "manifest", err) : NULL;
	if (!md)
		wd_err_set(err, WD_E_INVAL, "%s names no image tagged '%s'", p, tag);
	json_decref(idx);
	return man;
}

json_t *
image_oci_config(const char *layout, const char *tag, struct wd_err *err)
{
	json_t *man = load_manifest(layout, tag, err);
	if (!man)
		return NULL;
	json_t *cfg = load_blob(
	    layout, json_string_value(json_object_get(json_object_get(man, "config"), "digest")),
	    "config", err);
	json_decref(man);
	if (!cfg)
		return NULL;
	json_t *c = json_object_get(cfg, "config");
	json_t *out = json_is_object(c) ? json_incref(c) : json_object();
	json_decref(cfg);
	return out;
}

/* A numeric field of a tar header: octal digits, or GNU's base-256
 * (the first byte's high bit set) for sizes past 8 GiB. */
static uint64_t
octal(const char *f, size_t n)
{
	uint64_t v = 0;
	if ((unsigned char)f[0] & 0x80) {
		for (size_t i = 1; i < n; i++)
			v = v << 8 | (unsigned char)f[i];
		return v;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0');
	return v;
}

/* ---- counting a layer's entries before it is unpacked ---- */

/* n bytes from fd, or fewer at its end; -errno */
static ssize_t
read_some(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* The entries of the tar read from fd (a file: data skipped by lseek; a
 * pipe: read and dropped), added to *count.  1 when it stopped before
 * the stream's end (past max, or at the end-of-archive block, after which
 * an unpacker reads nothing: a gzip bomb of zeros behind a small tar is
 * not read through), 0 at the end, -errno. */
static int
count_tar(int fd, bool seekable, uint64_t *count, uint64_t max)
{
	char h[512], junk[65536];
	for (;;) {
		ssize_t k = read_some(fd, h, sizeof(h));
		if (k < 0)
			return (int)k;
		if (k < (ssize_t)sizeof(h))
			return 0; /* the end (umoci judges a truncated tar) */
		bool zero = true;
		for (size_t i = 0; i < sizeof(h) && zero; i++)
			zero = h[i] == 0;
		if (zero)
			return 1; /* the end-of-archive block */
		uint64_t size = octal(h + 124, 12), skip = (size + 511) / 512 * 512;
		if (h[156] != 'x' && h[156] != 'g' && h[156] != 'L' && h[156] != 'K' &&
		    ++*count > max)
			return 1;
		if (seekable) {
			if (lseek(fd, (off_t)skip, SEEK_CUR) < 0)
				return -errno;
			continue;
		}
		while (skip > 0) {
			size_t n = skip < sizeof(junk) ? (size_t)skip : sizeof(junk);
			if ((k = read_some(fd, junk, n)) < 0)
				return (int)k;
			if (k == 0)
				return 0;
			skip -= (uint64_t)k;
		}
	}
}

/* A gzip'd layer through `gzip -dc` (no decompressor linked in). */
static int
count_gzip(const char *blob, uint64_t *count, uint64_t max, struct wd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return wd_err_sys(err, errno, "fork");
	}
	if (pid == 0) {
		dup2(p[1], 1);
		int in = open(blob, O_RDONLY | O_NOFOLLOW);
		if (in < 0 || dup2(in, 0) < 0)
			_exit(126);
		execlp("gzip", "gzip", "-dc", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	int rc = count_tar(p[0], false, count, max);
	close(p[0]); /* gzip gets SIGPIPE if it was stopped early */
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc < 0)
		return wd_err_sys(err, -rc, "read the layer %s", blob);
	/* stopped early, gzip ends on a broken pipe: not a failure */
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		return wd_err_set(err, WD_E_INVAL, "layer %s: gzip -dc failed (status %d)", blob,
				  WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

int
image_oci_count(const char *layout, const char *tag, uint64_t max, struct wd_err *err)
{
	json_t *man = load_manifest(layout, tag, err);
	size_t i;
	if (!man)
		return -EINVAL;
	uint64_t count = 0;
	int rc = 0;
	json_t *l;
	json_array_foreach(json_object_get(man, "layers"), i, l)
	{
		const char *d = json_string_value(json_object_get(l, "digest"));
		if (!digest_ok(d)) {
			rc = wd_err_set(err, WD_E_INVAL, "%s: layer %zu's digest is not sha256:HEX",
					layout, i + 1);
			break;
		}
		char blob[PATH_MAX];
		snprintf(blob, sizeof(blob), "%s/blobs/sha256/%s", layout, d + 7);
		wd_autoclose int fd = open(blob, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		unsigned char mg[2] = {0, 0};
		if (fd < 0) {
			rc = wd_err_sys(err, errno, "layer %zu (%s)", i + 1, blob);
			break;
		}
		if (pread(fd, mg, 2, 0) == 2 && mg[0] == 0x1f && mg[1] == 0x8b)
			rc = count_gzip(blob, &count, max, err);
		else if ((rc = count_tar(fd, true, &count, max)) < 0)
			rc = wd_err_sys(err, -rc, "read the layer %s", blob);
		else
			rc = 0;
		if (rc < 0)
			break;
		if (count > max) {
			rc = wd_err_set(err, WD_E_INVAL,
					"more than %llu entries in the layers (at layer %zu, %s): "
					"refused before unpacking",
					(unsigned long long)max, i + 1, d);
			break;
		}
	}
	json_decref(man);
	return rc;
}

/* ---- docker save ---- */

struct member {
	char *name; /* normalised: no leading "./" */
	off_t off;  /* of its data */
	uint64_t size;
	char type;  /* '0' a file, '2' a symlink, ... */
	char *link; /* a symlink's target */
};

struct archive {
	int fd;
	const char *path;
	struct member *m;
	size_t n;
};

static void
archive_fini(struct archive *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->m[i].name);
		free(a->m[i].link);
	}
	free(a->m);
}

static char *
norm(const char *s)
{
	while (!strncmp(s, "./", 2))
		s += 2;
	return wd_xstrdup(s);
}

/* One pax extended header's "path" or "linkpath" record, or NULL. */
static char *
pax_get(const char *buf, size_t n, const char *key)
{
	size_t klen = strlen(key);
	const char *p = buf, *end = buf + n;
	while (p < end) {
		char *sp;
		unsigned long len = strtoul(p, &sp, 10);
		if (sp == p || *sp != ' ' || len == 0 || len > (size_t)(end - p))
			break;
		const char *kv = sp + 1, *rec_end = p + len;
		if ((size_t)(rec_end - kv) > klen + 1 && !strncmp(kv, key, klen) && kv[klen] == '=')
			return strndup(kv + klen + 1, (size_t)(rec_end - kv - klen - 2));
		p = rec_end;
	}
	return NULL;
}

static int
read_full(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		got += (size_t)k;
	}
	return 0;
}

static int
archive_scan(struct archive *a, off_t fsize, struct wd_err *err)
{
	char h[512];
	off_t off = 0;
	char *long_name = NULL, *long_link = NULL;
	int rc = 0;
	while (off + 512 <= fsize) {
		if ((rc = read_full(a->fd, h, 512, off)) < 0) {
			rc = wd_err_sys(err, -rc, "read %s", a->path);
			break;
		}
		bool zero = true;
		for (int i = 0; i < 512 && zero; i++)
			zero = h[i] == 0;
		if (zero)
			break; /* the end-of-archive blocks */
		if (memcmp(h + 257, "ustar", 5)) {
			rc = wd_err_set(err, WD_E_INVAL,
					"%s: a member at byte %lld is not a tar header", a->path,
					(long long)off);
			break;
		}
		uint64_t size = octal(h + 124, 12);
		off_t data = off + 512;
		if (data > fsize || size > (uint64_t)(fsize - data)) {
			rc = wd_err_set(err, WD_E_INVAL,
					"%s: a member at byte %lld runs past the end of the file",
					a->path, (long long)off);
			break;
		}
		off = data + (off_t)((size + 511) / 512 * 512);
		char type = h[156];
		if (type == 'x' || type == 'L' || type == 'K') {
			/* the next member's long name or link, if any */
			if (size > 65536) {
				rc = wd_err_set(err, WD_E_INVAL,
						"%s: an extended header of %llu bytes", a->path,
						(unsigned long long)size);
				break;
			}
			char *buf = wd_xmalloc(size + 1);
			if ((rc = read_full(a->fd, buf, size, data)) < 0) {
				free(buf);
				rc = wd_err_sys(err, -rc, "read %s", a->path);
				break;
			}
			buf[size] = '\0';
			char *v = type == 'x'	? pax_get(buf, size, "path")
				  : type == 'L' ? wd_xstrdup(buf)
						: NULL;
			char *lv = type == 'x'	 ? pax_get(buf, size, "linkpath")
				   : type == 'K' ? wd_xstrdup(buf)
						 : NULL;
			free(buf);
			if (v) {
				free(long_name);
				long_name = v;
			}
			if (lv) {
				free(long_link);
				long_link = lv;
			}
			continue;
		}
		if (type == 'g')
			continue; /* a global header: nothing a member needs */
		if (a->n >= ARCHIVE_MAX_MEMBERS) {
			rc = wd_err_set(err, WD_E_INVAL,
					"%s: more than %d members: no docker save tarball", a->path,
					ARCHIVE_MAX_MEMBERS);
			break;
		}
		char name[257 + 156];
		if (long_name) {
			snprintf(name, sizeof(name), "%s", "");
		} else if (h[345] && !memcmp(h + 257, "ustar\0", 6)) {
			/* POSIX ustar's prefix field (GNU's format keeps
			 * times there instead) */
			snprintf(name, sizeof(name), "%.155s/%.100s", h + 345, h);
		} else {
			snprintf(name, sizeof(name), "%.100s", h);
		}
		a->m = wd_xrealloc(a->m, (a->n + 1) * sizeof(*a->m));
		struct member *m = &a->m[a->n++];
		m->name = norm(long_name ? long_name : name);
		m->off = data;
		m->size = size;
		m->type = type ? type : '0';
		char lk[101];
		snprintf(lk, sizeof(lk), "%.100s", h + 157);
		m->link = long_link ? wd_steal_ptr(&long_link) : wd_xstrdup(lk);
		free(long_name);
		long_name = NULL;
	}
	free(long_name);
	free(long_link);
	return rc;
}

/* The member called name (a symlink followed, within the archive, at
 * most 8 times: docker save links a layer seen twice to its first copy). */
static const struct member *
archive_find(const struct archive *a, const char *name_in)
{
	char *name = norm(name_in);
	const struct member *found = NULL;
	for (int hop = 0; hop < 8 && name; hop++) {
		found = NULL;
		for (size_t i = 0; i < a->n && !found; i++)
			if (!strcmp(a->m[i].name, name))
				found = &a->m[i];
		if (!found || found->type != '2')
			break;
		/* a relative link, resolved against the member's directory;
		 * ".." pops a component (never above the archive's top) */
		char buf[PATH_MAX];
		const char *slash = strrchr(found->name, '/');
		snprintf(buf, sizeof(buf), "%.*s%s%s", slash ? (int)(slash - found->name) : 0,
			 found->name, slash ? "/" : "", found->link);
		char out[PATH_MAX] = "";
		char *save = NULL;
		for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
			if (!strcmp(c, "."))
				continue;
			if (!strcmp(c, "..")) {
				char *s = strrchr(out, '/');
				if (s)
					*s = '\0';
				else
					out[0] = '\0';
				continue;
			}
			size_t l = strlen(out);
			snprintf(out + l, sizeof(out) - l, "%s%s", l ? "/" : "", c);
		}
		free(name);
		name = wd_xstrdup(out);
		found = NULL;
	}
	free(name);
	return found && found->type == '0' ? found : NULL;
}

/* Copy a member into out/blobs/sha256/HEX; its descriptor (mediaType
 * chosen by the caller, or by gzip's magic for a layer) into *desc. */
static int
copy_blob(const struct archive *a, const struct member *m, const char *out, const char *media,
	  json_t **desc, struct wd_err *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/blobs/sha256/.tmp", out);
	wd_autoclose int fd =
	    open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return wd_err_sys(err, errno, "create %s", tmp);
	struct wd_sha256 h;
	wd_sha256_init(&h);
	char buf[65536];
	unsigned char head[2] = {0, 0};
	uint64_t done = 0;
	while (done < m->size) {
		size_t k = m->size - done < sizeof(buf) ? (size_t)(m->size - done) : sizeof(buf);
		int rc = read_full(a->fd, buf, k, m->off + (off_t)done);
		if (rc < 0)
			return wd_err_sys(err, -rc, "read %s", a->path);
		if (done == 0 && k >= 2)
			memcpy(head, buf, 2);
		wd_sha256_update(&h, buf, k);
		for (size_t w = 0; w < k;) {
			ssize_t n = write(fd, buf + w, k - w);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return wd_err_sys(err, errno, "write %s", tmp);
			w += (size_t)n;
		}
		done += k;
	}
	if (close(wd_steal_fd(&fd)) < 0)
		return wd_err_sys(err, errno, "write %s", tmp);
	unsigned char md[32];
	char hex[65], final[PATH_MAX];
	wd_sha256_final(&h, md);
	wd_sha256_hex(md, hex);
	snprintf(final, sizeof(final), "%s/blobs/sha256/%s", out, hex);
	if (rename(tmp, final) < 0)
		return wd_err_sys(err, errno, "rename %s", tmp);
	if (!media)
		media = head[0] == 0x1f && head[1] == 0x8b
			    ? "application/vnd.oci.image.layer.v1.tar+gzip"
			    : "application/vnd.oci.image.layer.v1.tar";
	*desc = json_pack("{s:s, s:s, s:I}", "mediaType", media, "digest", "", "size",
			  (json_int_t)m->size);
	json_object_set_new(*desc, "digest", json_sprintf("sha256:%s", hex));
	return 0;
}

static int
write_json(const char *out, const char *name, json_t *j, char hex[65], size_t *len,
	   struct wd_err *err)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (!s)
		abort();
	char p[PATH_MAX];
	if (hex) {
		wd_sha256_hex_of(s, strlen(s), hex);
		snprintf(p, sizeof(p), "%s/blobs/sha256/%s", out, hex);
	} else {
		snprintf(p, sizeof(p), "%s/%s", out, name);
	}
	if (len)
		*len = strlen(s);
	FILE *f = fopen(p, "we");
	int rc = 0;
	if (!f || fputs(s, f) < 0 || fclose(f) != 0)
		rc = wd_err_sys(err, errno, "write %s", p);
	free(s);
	return rc;
}

/* The manifest (and index.json, oci-layout) of an OCI layout in out with
 * config and layers, the image tagged tag.  Shared with export. */
int
image_oci_write(const char *out, json_t *config_desc, json_t *layers, const char *tag,
		char digest[65], struct wd_err *err)
{
	json_t *man = json_pack("{s:i, s:s, s:O, s:O}", "schemaVersion", 2, "mediaType",
				"application/vnd.oci.image.manifest.v1+json", "config", config_desc,
				"layers", layers);
	char hex[65];
	size_t len = 0;
	int rc = write_json(out, NULL, man, hex, &len, err);
	json_decref(man);
	if (rc < 0)
		return rc;
	json_t *idx =
	    json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:{s:s}}]}", "schemaVersion", 2, "mediaType",
		      "application/vnd.oci.image.index.v1+json", "manifests", "mediaType",
		      "application/vnd.oci.image.manifest.v1+json", "digest", "", "size",
		      (json_int_t)len, "annotations", "org.opencontainers.image.ref.name", tag);
	json_object_set_new(json_array_get(json_object_get(idx, "manifests"), 0), "digest",
			    json_sprintf("sha256:%s", hex));
	json_t *lay = json_pack("{s:s}", "imageLayoutVersion", "1.0.0");
	if ((rc = write_json(out, "index.json", idx, NULL, NULL, err)) == 0)
		rc = write_json(out, "oci-layout", lay, NULL, NULL, err);
	json_decref(idx);
	json_decref(lay);
	if (rc == 0 && digest)
		memcpy(digest, hex, 65);
	return rc;
}

int
image_docker_to_oci(const char *path, const char *out, struct wd_err *err)
{
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s", path);
	struct stat st;
	unsigned char head[2] = {0, 0};
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "%s", path);
	if (pread(fd, head, 2, 0) == 2 && head[0] == 0x1f && head[1] == 0x8b)
		return wd_err_set(err, WD_E_INVAL,
				  "%s is gzip-compressed: gunzip it first (docker save and podman "
				  "save write an uncompressed tar)",
				  path);
	struct archive a = {.fd = fd, .path = path};
	int rc = archive_scan(&a, st.st_size, err);
	const struct member *mm = rc < 0 ? NULL : archive_find(&a, "manifest.json");
	json_t *mf = NULL, *layers = json_array(), *cdesc = NULL;
	if (rc < 0)
		goto out;
	if (!mm || mm->size > META_MAX) {
		rc = wd_err_set(err, WD_E_INVAL,
				"%s is neither an OCI image layout nor a docker save tarball (no "
				"manifest.json of at most %u bytes in it)",
				path, META_MAX);
		goto out;
	}
	char *text = wd_xmalloc(mm->size + 1);
	if ((rc = read_full(fd, text, mm->size, mm->off)) < 0) {
		free(text);
		rc = wd_err_sys(err, -rc, "read %s", path);
		goto out;
	}
	text[mm->size] = '\0';
	json_error_t je;
	mf = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!mf) {
		rc = wd_err_set(err, WD_E_INVAL, "%s: manifest.json:%d:%d: %s", path, je.line,
				je.column, je.text);
		goto out;
	}
	if (!json_is_array(mf) || json_array_size(mf) != 1) {
		rc = wd_err_set(err, WD_E_INVAL,
				"%s: manifest.json lists %zu images; warden imports a docker save "
				"of one image",
				path, json_is_array(mf) ? json_array_size(mf) : (size_t)0);
		goto out;
	}
	json_t *img = json_array_get(mf, 0);
	const char *cname = json_string_value(json_object_get(img, "Config"));
	json_t *ls = json_object_get(img, "Layers");
	const struct member *cm = cname ? archive_find(&a, cname) : NULL;
	if (!cm || cm->size > META_MAX || !json_is_array(ls)) {
		rc = wd_err_set(err, WD_E_INVAL,
				"%s: manifest.json's Config names no file of the archive, or it "
				"has no Layers",
				path);
		goto out;
	}
	char blobs[PATH_MAX];
	snprintf(blobs, sizeof(blobs), "%s/blobs", out);
	if (mkdir(blobs, 0755) < 0 || (strcat(blobs, "/sha256"), mkdir(blobs, 0755)) < 0) {
		rc = wd_err_sys(err, errno, "create %s", blobs);
		goto out;
	}
	if ((rc = copy_blob(&a, cm, out, "application/vnd.oci.image.config.v1+json", &cdesc, err)) <
	    0)
		goto out;
	size_t i;
	json_t *v;
	json_array_foreach(ls, i, v)
	{
		const char *ln = json_string_value(v);
		const struct member *lm = ln ? archive_find(&a, ln) : NULL;
		if (!lm) {
			wd_autofree char *q = wd_esc_path(ln ? ln : "(not a string)");
			rc = wd_err_set(err, WD_E_INVAL,
					"%s: manifest.json's layer %zu (%s) is no file of the "
					"archive",
					path, i + 1, q);
			goto out;
		}
		json_t *d = NULL;
		if ((rc = copy_blob(&a, lm, out, NULL, &d, err)) < 0)
			goto out;
		json_array_append_new(layers, d);
	}
	rc = image_oci_write(out, cdesc, layers, "t", NULL, err);
out:
	json_decref(mf);
	json_decref(layers);
	json_decref(cdesc);
	archive_fini(&a);
	return rc;
}
