/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The C compiler's view of the public structs, for tests/test-cxx.cc: the C++ program compares
 * it with its own, so that a C++ program and the C library agree on every shared layout (the
 * atomics of age.h are plain integers in C++).
 */

#include <stddef.h>

#include "cacheage/age.h"
#include "cacheage/dcache.h"
#include "cacheage/plugin.h"
#include "cacheage/replay.h"
#include "cacheage/trace.h"
#include "cacheage/value.h"
#include "test-cxx-layout.h"

#define LAYOUT(type, member) { #type "." #member, sizeof(type), offsetof(type, member) }

static const struct cxx_layout c_layouts[] = { CXX_LAYOUTS(LAYOUT) };

const struct cxx_layout *cxx_c_layouts(size_t *ret_n)
{
        *ret_n = sizeof(c_layouts) / sizeof(c_layouts[0]);
        return c_layouts;
}
