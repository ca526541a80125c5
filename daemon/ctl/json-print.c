/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layout of --json=pretty: a newline and the indent after every opening bracket and comma. */

#include <string.h>

#include "json-print.h"

static void newline(FILE *out, unsigned depth)
{
        fputc('\n', out);
        for (unsigned i = 0; i < depth; i++)
                fputs("  ", out);
}

void json_print(FILE *out, const char *doc, bool pretty)
{
        size_t len = strlen(doc);
        bool in_string = false, escaped = false;
        unsigned depth = 0;

        while (len > 0 && doc[len - 1] == '\n')
                len--;
        if (!pretty) {
                fprintf(out, "%.*s\n", (int)len, doc);
                return;
        }
        for (size_t i = 0; i < len; i++) {
                char c = doc[i];

                if (in_string) {
                        fputc(c, out);
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                switch (c) {
                case '"':
                        in_string = true;
                        fputc(c, out);
                        break;
                case '{':
                case '[':
                        fputc(c, out);
                        if (i + 1 < len && (doc[i + 1] == '}' || doc[i + 1] == ']')) {
                                fputc(doc[++i], out); /* an empty one stays on its line */
                                break;
                        }
                        newline(out, ++depth);
                        break;
                case '}':
                case ']':
                        newline(out, depth > 0 ? --depth : 0);
                        fputc(c, out);
                        break;
                case ',':
                        fputc(c, out);
                        newline(out, depth);
                        break;
                case ':':
                        fputs(": ", out);
                        break;
                case ' ':
                case '\t':
                case '\n':
                        break; /* the layout is ours */
                default:
                        fputc(c, out);
                }
        }
        fputc('\n', out);
}
