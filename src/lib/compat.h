/* SPDX-License-Identifier: MIT */
/*
 * Kernel interfaces newer than the installed headers (Debian 12 ships 6.1
 * uapi headers).  Each definition stands under #ifndef; every feature is
 * still probed at run time through UFFDIO_API or by trying the ioctl.
 */
#ifndef UF_COMPAT_H
#define UF_COMPAT_H

#include <linux/userfaultfd.h>
#include <linux/fs.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED	(1 << 13)
#endif
#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON		(1 << 14)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC		(1 << 15)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE		(1 << 16)
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM	(1 << 12)
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW		_IO(0xAA, 0x00)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY		1
#endif

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22	/* 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* 5.14 */
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25	/* 6.1 */
#endif

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WPALLOWED	(1 << 0)
#define PAGE_IS_WRITTEN		(1 << 1)
#define PAGE_IS_FILE		(1 << 2)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)
#define PAGE_IS_PFNZERO		(1 << 5)
#define PAGE_IS_HUGE		(1 << 6)
#define PAGE_IS_SOFT_DIRTY	(1 << 7)

struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

#define PM_SCAN_WP_MATCHING	(1 << 0)
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#endif

/* PROCMAP_QUERY (6.11): one mapping of /proc/self/maps by ioctl */
#ifndef PROCMAP_QUERY
#define PROCMAP_QUERY_VMA_READABLE		0x01
#define PROCMAP_QUERY_VMA_WRITABLE		0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE		0x04
#define PROCMAP_QUERY_VMA_SHARED		0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA	0x10
#define PROCMAP_QUERY_FILE_BACKED_VMA		0x20

struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};

#define PROCMAP_QUERY	_IOWR('f', 17, struct procmap_query)
#endif

#endif /* UF_COMPAT_H */
