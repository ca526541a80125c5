/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay lab's compressed logs: a long session's strace log repeats itself (the same
 * programs looking up the same files, run after run), so it is kept xz-compressed in the
 * source tree and read through liblzma, as a FILE * that the trace reader reads like any other.
 */

#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define XZ_IN_BYTES 65536
#define XZ_MEMLIMIT_BYTES (256u << 20) /* liblzma's decoder memory, at most */

struct xz {
        FILE *in;
        lzma_stream strm;
        bool eof;     /* of the compressed input */
        bool done;    /* LZMA_STREAM_END */
        uint8_t buf[XZ_IN_BYTES];
};

static ssize_t xz_read(void *cookie, char *out, size_t size)
{
        struct xz *x = cookie;

        if (x->done || size == 0)
                return 0;
        x->strm.next_out = (uint8_t *)out;
        x->strm.avail_out = size;
        while (x->strm.avail_out == size) {
                lzma_ret ret;

                if (x->strm.avail_in == 0 && !x->eof) {
                        x->strm.next_in = x->buf;
                        x->strm.avail_in = fread(x->buf, 1, sizeof(x->buf), x->in);
                        if (ferror(x->in)) {
                                errno = EIO;
                                return -1;
                        }
                        x->eof = feof(x->in);
                }
                ret = lzma_code(&x->strm, x->eof ? LZMA_FINISH : LZMA_RUN);
                if (ret == LZMA_STREAM_END) {
                        x->done = true;
                        break;
                }
                if (ret != LZMA_OK) {
                        errno = EIO; /* corrupt or truncated: the reader reports a read error */
                        return -1;
                }
        }
        return (ssize_t)(size - x->strm.avail_out);
}

static int xz_close(void *cookie)
{
        struct xz *x = cookie;

        lzma_end(&x->strm);
        fclose(x->in);
        free(x);
        return 0;
}

bool xz_named(const char *path)
{
        size_t len = strlen(path);

        return len > 3 && strcmp(path + len - 3, ".xz") == 0;
}

int xz_fopen(const char *path, FILE **ret)
{
        static const cookie_io_functions_t io = { .read = xz_read, .close = xz_close };
        struct xz *x = calloc(1, sizeof(*x));
        FILE *f;
        int r;

        if (!x)
                return -ENOMEM;
        x->in = fopen(path, "re");
        if (!x->in) {
                r = -errno;
                goto out_free;
        }
        x->strm = (lzma_stream)LZMA_STREAM_INIT;
        if (lzma_stream_decoder(&x->strm, XZ_MEMLIMIT_BYTES, LZMA_CONCATENATED) != LZMA_OK) {
                r = -ENOMEM;
                goto out_close;
        }
        f = fopencookie(x, "r", io);
        if (!f) {
                r = -ENOMEM;
                goto out_end;
        }
        *ret = f;
        return 0;

out_end:
        lzma_end(&x->strm);
out_close:
        fclose(x->in);
out_free:
        free(x);
        return r;
}
