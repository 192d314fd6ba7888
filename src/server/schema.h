/* server/schema.h - the JSON Schema subset the tool arguments are
 * checked with (schema.c, pure). */
#ifndef WD_SERVER_SCHEMA_H
#define WD_SERVER_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* Check value against the subset of JSON Schema the tools use (type,
 * properties, required, additionalProperties false, items, enum,
 * minimum, maximum, minLength, maxLength).  0, or -1 with why filled
 * ("command: expected a string"). */
int schema_check(const json_t *schema, const json_t *value, char *why, size_t cap);

#endif
