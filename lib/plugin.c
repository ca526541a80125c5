/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host API that plugins link: thin wrappers that forward to the host's ops, so that a
 * plugin never needs a symbol from the executable that loaded it (which would take
 * -rdynamic). The host fills in the struct ca_section that the accessors read.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cacheage/plugin.h"

#define CA_HOST_MSG_MAX 1024 /* bytes of one formatted plugin message */

const char *ca_section_name(const struct ca_section *s)
{
        return s->name;
}

size_t ca_section_n_keys(const struct ca_section *s)
{
        return s->n_keys;
}

const char *ca_section_key(const struct ca_section *s, size_t i)
{
        if (i >= s->n_keys)
                return NULL;
        return s->keys[i].key;
}

const char *ca_section_get(const struct ca_section *s, const char *key)
{
        /* The host passes each key once (a repeat in the configuration replaces). */
        for (size_t i = 0; i < s->n_keys; i++)
                if (strcmp(s->keys[i].key, key) == 0)
                        return s->keys[i].value;
        return NULL;
}

void ca_host_log(struct ca_host *host, int level, const char *fmt, ...)
{
        char buf[CA_HOST_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        host->ops->log(host->userdata, level, buf);
}

void ca_host_key_error(struct ca_host *host, const struct ca_section *s, const char *key,
                       const char *fmt, ...)
{
        char buf[CA_HOST_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        host->ops->key_error(host->userdata, s, key, buf);
}

struct event_base *ca_host_event_base(struct ca_host *host)
{
        if (ca_host_check_only(host))
                return NULL;
        return host->ops->event_base(host->userdata);
}

int ca_host_register_cache(struct ca_host *host, const struct ca_section *s,
                           struct ca_cache *cache, const struct ca_cache_hooks *hooks,
                           void *hooks_userdata)
{
        if (!s || !cache)
                return -EINVAL;
        return host->ops->register_cache(host->userdata, s, cache, hooks, hooks_userdata);
}

void ca_host_unregister_cache(struct ca_host *host, struct ca_cache *cache)
{
        if (cache)
                host->ops->unregister_cache(host->userdata, cache);
}

int ca_host_check_only(struct ca_host *host)
{
        return host->ops->check_only ? host->ops->check_only(host->userdata) : 0;
}

int ca_host_pressure(struct ca_host *host, struct ca_pressure *ret)
{
        if (!ret)
                return -EINVAL;
        if (!host->ops->pressure)
                return -EOPNOTSUPP;
        return host->ops->pressure(host->userdata, ret);
}

bool ca_host_idle(struct ca_host *host)
{
        return host->ops->idle ? host->ops->idle(host->userdata) : true;
}

void ca_host_rotate_ready(struct ca_host *host, struct ca_cache *cache, int error)
{
        if (cache && host->ops->rotate_ready)
                host->ops->rotate_ready(host->userdata, cache, error);
}

uint64_t ca_host_slice_usec(struct ca_host *host)
{
        uint64_t usec = host->ops->slice_usec ? host->ops->slice_usec(host->userdata) : 0;

        return usec ? usec : CA_HOST_SLICE_USEC_DEFAULT;
}

int ca_section_parse(struct ca_host *host, const struct ca_section *s,
                     const struct ca_key_spec *specs, void *target)
{
        char msg[CA_KEY_MSG_MAX];
        int r = 0;

        /* Defaults first, through the same parser: a default the table refuses is its bug. */
        for (const struct ca_key_spec *k = specs; k->name; k++)
                if (k->def && ca_key_parse(k, k->def, target, msg, sizeof(msg)) < 0) {
                        ca_host_key_error(host, s, k->name, "default \"%s\": %s", k->def, msg);
                        r = -EINVAL;
                }
        for (size_t i = 0; i < s->n_keys; i++) {
                const char *key = s->keys[i].key;
                const struct ca_key_spec *k = ca_key_find(specs, key);

                if (!k) {
                        const char *typo = ca_key_closest(specs, key, NULL);

                        ca_host_key_error(host, s, key, "unknown key%s%s%s (expected %s)",
                                          typo ? ", did you mean \"" : "", typo ? typo : "",
                                          typo ? "\"?" : "",
                                          ca_key_names(specs, msg, sizeof(msg)));
                        r = -EINVAL;
                } else if (ca_key_parse(k, s->keys[i].value, target, msg, sizeof(msg)) < 0) {
                        ca_host_key_error(host, s, key, "%s", msg);
                        r = -EINVAL;
                }
        }
        return r;
}

int ca_plugin_check(const struct ca_plugin *p, const char *expected_name, char *reason,
                    size_t reason_len)
{
        if (!p) {
                snprintf(reason, reason_len, "no plugin table");
                return -EINVAL;
        }
        /* abi first: a table of another ABI may not even have a size where we expect one. */
        if (p->abi != CA_PLUGIN_ABI) {
                snprintf(reason, reason_len, "ABI %u, expected %u", p->abi, CA_PLUGIN_ABI);
                return -EPROTO;
        }
        if (p->size < sizeof(struct ca_plugin)) {
                snprintf(reason, reason_len, "table of %u bytes, expected at least %zu", p->size,
                         sizeof(struct ca_plugin));
                return -EPROTO;
        }
        if (!p->name || !expected_name || strcmp(p->name, expected_name) != 0) {
                snprintf(reason, reason_len, "plugin name '%s', expected '%s'",
                         p->name ? p->name : "(null)", expected_name ? expected_name : "(null)");
                return -EINVAL;
        }
        if (!p->create || !p->destroy) {
                snprintf(reason, reason_len, "no %s hook", !p->create ? "create" : "destroy");
                return -EINVAL;
        }
        return 0;
}

/* [a-z][a-z0-9_]* (@first_alpha) or [a-z0-9_]+, at most @max bytes. */
static bool is_snake_case(const char *s, size_t max, bool first_alpha)
{
        size_t n = 0;

        if (!s || !*s || (first_alpha && !(*s >= 'a' && *s <= 'z')))
                return false;
        for (; *s; s++, n++)
                if (n >= max || !((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                                  *s == '_'))
                        return false;
        return true;
}

/* @s as a reader may see it in a log: at most 64 bytes, anything unprintable as '?'. */
static const char *printable(const char *s, char *buf, size_t len)
{
        size_t n = 0;

        if (!s)
                return "(null)";
        for (; *s && n + 1 < len && n < 64; s++)
                buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
        buf[n] = '\0';
        return buf;
}

int ca_adapter_stat_check(const struct ca_adapter_stat *stat, char *reason, size_t reason_len)
{
        char buf[72];
        const char *name;
        size_t n = 0;

        if (!stat) {
                snprintf(reason, reason_len, "no statistic (NULL)");
                return -EINVAL;
        }
        name = printable(stat->name, buf, sizeof(buf));
        if (!is_snake_case(stat->name, CA_ADAPTER_STAT_NAME_MAX, true)) {
                snprintf(reason, reason_len,
                         "statistic \"%s\": the name must be snake_case ([a-z][a-z0-9_]*, at most "
                         "%d bytes)",
                         name, CA_ADAPTER_STAT_NAME_MAX);
                return -EINVAL;
        }
        if (!ca_stat_kind_name(stat->kind)) {
                snprintf(reason, reason_len,
                         "statistic \"%s\": kind %d is neither CA_STAT_COUNTER nor CA_STAT_GAUGE",
                         name, (int)stat->kind);
                return -EINVAL;
        }
        if (stat->unit && !is_snake_case(stat->unit, CA_ADAPTER_STAT_NAME_MAX, false)) {
                snprintf(reason, reason_len,
                         "statistic \"%s\": the unit must be [a-z0-9_]+ (at most %d bytes)",
                         name, CA_ADAPTER_STAT_NAME_MAX);
                return -EINVAL;
        }
        for (const char *p = stat->help; p && *p; p++, n++)
                if (n >= CA_ADAPTER_STAT_HELP_MAX || *p < 0x20 || *p >= 0x7f) {
                        snprintf(reason, reason_len,
                                 "statistic \"%s\": the help must be one line of printable "
                                 "ASCII (at most %d bytes)",
                                 name, CA_ADAPTER_STAT_HELP_MAX);
                        return -EINVAL;
                }
        return 0;
}
