/* SPDX-License-Identifier: MIT */
/*
 * uffd_int.h - what the engine's files share (src/engine/): uffd.c (the
 * fd and its ioctls), handler.c (the handler threads and their event
 * loop), monitor.c (the spare-handler monitor).  Private to the engine.
 */
#ifndef UF_ENGINE_UFFD_INT_H
#define UF_ENGINE_UFFD_INT_H

#include "engine/engine.h"

#include <stdbool.h>

/* handler.c */
/* This thread reads for a fork() that may hold malloc's locks (the
 * monitor): it reads into the room kept, never makes more. */
extern __thread bool __uf_uffd_nofork_malloc;
void __uf_uffd_reserve_room(struct uf_uffd *u);
void __uf_uffd_drain(struct uf_uffd *u);
void __uf_uffd_guest_put(struct uf_uffd *u, struct uf_uffd *g);
void *__uf_uffd_handler_thread(void *arg);

/* monitor.c */
extern int __uf_uffd_cpus;	/* CPUs online at the first engine's start */
void __uf_uffd_busy_begin(struct uf_uffd_handler *h);
void __uf_uffd_busy_end(struct uf_uffd_handler *h);

#endif
