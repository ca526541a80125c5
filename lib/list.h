/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_LIST_H
#define CACHEAGE_LIST_H

/*
 * Circular doubly linked intrusive lists, shaped like the kernel's include/linux/list.h: a
 * list is a struct ca_list_head that points at itself when empty, and every element embeds
 * one struct ca_list_head, found back with container_of(). The one kind of list in the tree:
 * the aging framework's due slots, the dentry model's children, the benchmarks' baselines.
 *
 * Private to the source tree (never installed). The type is in cacheage/age.h because the
 * public struct ca_node embeds one; the operations are here, for the tree's own code.
 *
 * Locking: none; whoever owns the list serialises every operation on it.
 */

#include <stdbool.h>
#include <stddef.h>

#include "cacheage/age.h"

/* The structure of @type whose member @member is at @ptr. */
#ifndef container_of
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)

/* Make @head an empty list (or an element that is on no list). */
static inline void list_init(struct ca_list_head *head)
{
        head->next = head->prev = head;
}

static inline bool list_empty(const struct ca_list_head *head)
{
        return head->next == head;
}

static inline void list_link(struct ca_list_head *entry, struct ca_list_head *prev,
                              struct ca_list_head *next)
{
        next->prev = entry;
        entry->next = next;
        entry->prev = prev;
        prev->next = entry;
}

/* Insert @entry right after @head: at the front of the list. */
static inline void list_add(struct ca_list_head *entry, struct ca_list_head *head)
{
        list_link(entry, head, head->next);
}

/* Insert @entry right before @head: at the back of the list. */
static inline void list_add_tail(struct ca_list_head *entry, struct ca_list_head *head)
{
        list_link(entry, head->prev, head);
}

/* Take @entry off its list; its own links are left stale (add it somewhere before use). */
static inline void list_del(struct ca_list_head *entry)
{
        entry->prev->next = entry->next;
        entry->next->prev = entry->prev;
}

/* Take @entry off its list and leave it pointing at itself (list_empty() is then true). */
static inline void list_del_init(struct ca_list_head *entry)
{
        list_del(entry);
        list_init(entry);
}

/* Take @entry off its list and put it at the front (list_move) or back of @head's. */
static inline void list_move(struct ca_list_head *entry, struct ca_list_head *head)
{
        list_del(entry);
        list_add(entry, head);
}

static inline void list_move_tail(struct ca_list_head *entry, struct ca_list_head *head)
{
        list_del(entry);
        list_add_tail(entry, head);
}

/* Append every element of @from to @to, in order, and leave @from empty. O(1). */
static inline void list_splice_tail_init(struct ca_list_head *from, struct ca_list_head *to)
{
        if (list_empty(from))
                return;
        from->next->prev = to->prev;
        to->prev->next = from->next;
        from->prev->next = to;
        to->prev = from->prev;
        list_init(from);
}

/* @pos over every element of @head; the loop body must not remove @pos. */
#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* The same, in reverse. */
#define list_for_each_prev(pos, head)                                                     \
        for ((pos) = (head)->prev; (pos) != (head); (pos) = (pos)->prev)

/* @pos over every element of @head; the body may remove @pos (@n holds the next one). */
#define list_for_each_safe(pos, n, head)                                                  \
        for ((pos) = (head)->next, (n) = (pos)->next; (pos) != (head);                    \
             (pos) = (n), (n) = (pos)->next)

#endif
