/* SPDX-License-Identifier: GPL-2.0-only */
/* A minimal intrusive doubly linked list, in the shape of the kernel's. */
#ifndef TLOG_LIST_H
#define TLOG_LIST_H

#include <stddef.h>

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }

static inline void INIT_LIST_HEAD(struct list_head *head)
{
	head->next = head;
	head->prev = head;
}

static inline void list_insert_between(struct list_head *item,
				       struct list_head *prev,
				       struct list_head *next)
{
	next->prev = item;
	item->next = next;
	item->prev = prev;
	prev->next = item;
}

static inline void list_add(struct list_head *item, struct list_head *head)
{
	list_insert_between(item, head, head->next);
}

static inline void list_add_tail(struct list_head *item, struct list_head *head)
{
	list_insert_between(item, head->prev, head);
}

static inline void list_del_init(struct list_head *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	INIT_LIST_HEAD(item);
}

static inline int list_empty(const struct list_head *head)
{
	return head->next == head;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_last_entry(head, type, member) list_entry((head)->prev, type, member)

/* Each extent buffer on a list linked through its dirty_list member. */
#define list_for_each_eb(eb, head)					\
	for (eb = list_entry((head)->next, struct extent_buffer, dirty_list);	\
	     &eb->dirty_list != (head);					\
	     eb = list_entry(eb->dirty_list.next, struct extent_buffer, dirty_list))

#endif
