/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LD_PRELOAD shim for running Criterion 2.4 under ThreadSanitizer (Criterion issue #274):
 * boxfort picks each arena's address as 0x2000'0000'0000 + (rand_r() & 0x3fffff) << 24,
 * mostly outside TSan's application ranges, and MAP_FIXED there fails. Steer every pick
 * into the top of the PIE range that TSan accepts, 0x5670'0000'0000..0x5680'0000'0000,
 * 128 MiB apart (boxfort skips picks that are already mapped). Only the test processes of
 * a -Db_sanitize=thread build load it.
 */
#include <stdlib.h>

static unsigned calls;

int rand_r(unsigned *seed)
{
        (void)seed;
        return 0x367000 + 0x8 * (int)(calls++ % 512);
}
