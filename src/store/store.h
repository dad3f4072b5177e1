/* SPDX-License-Identifier: MIT */
/*
 * The store layer's private header (src/store/): the file store (file.c),
 * which the page cache above reads and writes through struct uf_store_ops.
 */
#ifndef UF_STORE_H
#define UF_STORE_H

#include "engine/engine.h"

extern const struct uf_store_ops uf_file_store_ops;
int uf_file_store_new(int fd, void **storep);
void uf_file_store_free_child(void *store);
int uf_file_store_open(int fd, bool writer, void **storep);
struct stat;
int uf_file_store_stat(void *store, struct stat *st);
bool uf_file_store_in_memory(void *store);
int uf_file_store_readv(void *store, const struct uf_store_iov *iov, size_t n);

#endif /* UF_STORE_H */
