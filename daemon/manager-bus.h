/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheaged's D-Bus API (manager-bus.c), as the manager sees it: a connection it starts and
 * stops, and hooks it calls when something visible changed. Every hook accepts NULL (no bus).
 */

struct manager;
struct manager_bus;
struct manager_cache;

/*
 * manager_bus_new() - connect to @address ("system", "user" or a D-Bus address), serve the
 * Manager, the Cache objects and LogControl1, and take the name. Failures are logged here.
 * Returns 0 or a negative errno.
 */
int manager_bus_new(struct manager *m, const char *address, struct manager_bus **ret);
struct manager_bus *manager_bus_free(struct manager_bus *b);
/* A cache's settings or statistics changed (a rotation's work is done, a reset, a reload). */
void manager_bus_cache_changed(struct manager_bus *b, struct manager_cache *c);
/* Caches were added or removed (reload): the manager's Caches property changed. */
void manager_bus_caches_changed(struct manager_bus *b);
