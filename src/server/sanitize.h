/* server/sanitize.h - text for a model (sanitize.c, pure): control
 * sequences out, bad UTF-8 made visible, markdown images to hosts the
 * policy does not allow taken out. */
#ifndef WD_SERVER_SANITIZE_H
#define WD_SERVER_SANITIZE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

char *sanitize_text(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len);
char *sanitize_images(const char *text, const char *const *allow, size_t nallow);
/* sanitize_images() on every string in v (objects and arrays, in place). */
void sanitize_images_json(json_t *v, const char *const *allow, size_t nallow);
char *utf8_visible(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len);

#endif
