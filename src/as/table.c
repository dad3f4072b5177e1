// SPDX-License-Identifier: MIT
/*
 * A VMA table: the VMAs of one address space (struct uf_as), sorted by
 * start, in an array.  One implementation for every address space: the
 * program's own, fork children's, served processes' and attached
 * clients'.  A table of another process's address space lives in memory
 * a fork does not copy (@nocow: uf_nocow_alloc()).
 *
 * Locking: the address space's table lock (as->vma_lock), shared to read,
 * exclusive to change (or the table is not shared yet).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The index of the first VMA whose end is above @addr (t->n if none).
 * Locking: the table's lock held (either mode). */
size_t __uf_table_index(const struct uf_vma_table *t, unsigned long addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->vmas[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The VMA over @addr, or NULL.  Locking: the table's lock held. */
struct uf_vma *__uf_table_find(const struct uf_vma_table *t, unsigned long addr)
{
	size_t i = __uf_table_index(t, addr);

	return i < t->n && t->vmas[i]->start <= addr ? t->vmas[i] : NULL;
}

/* Put @v in at its place.  Return 0 or -ENOMEM (nothing changed).
 * Locking: the table's lock held exclusive. */
int __uf_table_insert(struct uf_vma_table *t, struct uf_vma *v)
{
	size_t i;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct uf_vma **p = t->nocow ? uf_nocow_realloc(t->vmas, cap * sizeof(*p))
					     : realloc(t->vmas, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->vmas = p;
		t->cap = cap;
	}
	i = __uf_table_index(t, v->start);
	memmove(&t->vmas[i + 1], &t->vmas[i], (t->n - i) * sizeof(*t->vmas));
	t->vmas[i] = v;
	t->n++;
	return 0;
}

/* Take the VMA at index @i out.  Locking: the table's lock held exclusive. */
void __uf_table_remove_at(struct uf_vma_table *t, size_t i)
{
	memmove(&t->vmas[i], &t->vmas[i + 1], (t->n - i - 1) * sizeof(*t->vmas));
	t->n--;
}

/* The table's memory (its VMAs are the caller's). */
void uf_table_free(struct uf_vma_table *t)
{
	if (t->nocow)
		uf_nocow_free(t->vmas);
	else
		free(t->vmas);
	t->vmas = NULL;
	t->n = t->cap = 0;
}
