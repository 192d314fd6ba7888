/* util/escape: model-chosen text made safe for a human's terminal (docs/threat-model.md).
 *
 * Everything warden prints for a person to read and decide on (a diff, an
 * apply report, an approval summary, a refusal) may hold bytes a sandboxed
 * program chose: a file name, a line of a file, an argument.  A terminal
 * obeys what it is sent: ESC[2K erases a line, CR returns over it, an OSC
 * retitles the window or writes the clipboard, U+202E reverses what
 * follows, a newline in a name forges a line of its own.  These functions
 * are the one place that turns such bytes into visible text; every
 * front end uses them.  JSON outputs are escaped by the JSON writer
 * instead and do not pass through here.
 *
 * Two renderings:
 *
 *   wd_esc_path  a name, git's core.quotePath way: printed bare when
 *                harmless, else C-quoted in double quotes with git's
 *                escapes (\t \n \r \" \\ ...) and octal for other bytes
 *                ("a\033[2Kb", "\342\200\256txt").  Unambiguous: a
 *                quoted name never equals a bare one.
 *   wd_esc_text  a line or text: control bytes shown as \xNN (ESC as
 *                \x1b, CR as \x0d), C1, bidi and zero-width characters
 *                as <U+202E>, invalid UTF-8 bytes as \xNN; tabs kept,
 *                newlines kept with WD_ESC_LINES; long lines cut with a
 *                marker. */
#ifndef WD_UTIL_ESCAPE_H
#define WD_UTIL_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "warden.h" /* WD_ESC_*, wd_esc_path, wd_esc_text: public, for front ends */

/* True when name must be quoted: a control byte, '"', '\', a byte that is
 * not valid UTF-8, a C1, bidi or zero-width character, a leading or
 * trailing space, or one of the separators of warden's summary lines
 * (" -> ", "  (") that could forge a rename or a note. */
bool wd_esc_path_needs_quote(const char *name);
/* The same, written to f. */
void wd_esc_path_put(FILE *f, const char *name);

/* The same, written to f. */
void wd_esc_text_put(FILE *f, const char *s, size_t len, unsigned flags, size_t max);

#endif
