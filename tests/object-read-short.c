/* Description: a store whose ->read returns fewer bytes than asked (as
 * read(2) on a socket may) is called again for the rest: every byte of a
 * readahead window and of a uf_object_pread() is the store's, and only a
 * read that returns 0 ends the object's data (the rest reads zero).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define SIZE	(64 * UF_PAGE_SIZE + 300)
#define DATA	(60 * UF_PAGE_SIZE + 77)	/* the store ends here */
#define MAPLEN	(65 * UF_PAGE_SIZE)

struct dribble {
	struct os_store s;
	uint64_t rng;
};

/* at most 1..1500 bytes per call, never more than what is left */
static ssize_t dribble_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct dribble *d = store;
	size_t n;

	pthread_mutex_lock(&d->s.lock);
	n = 1 + os_rand(&d->rng) % 1500;
	pthread_mutex_unlock(&d->s.lock);
	if (n > len)
		n = len;
	if (off >= DATA)
		return 0;
	if (n > DATA - off)
		n = DATA - off;
	memcpy(buf, d->s.data + off, n);
	return (ssize_t)n;
}

static const struct uf_store_ops dribble_ops = {
	.read = dribble_read,
};

static unsigned char want(uint64_t i)
{
	return i < DATA ? ut_pattern(i) : 0;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	struct dribble d;
	unsigned char *map, *buf;
	uint64_t i;

	ut_catch_signals();
	os_watchdog(60);
	os_init(&d.s, SIZE);
	d.rng = 42;

	CHECK_RET(uf_object_create(mm, &dribble_ops, &d, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, MAPLEN, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (i = 0; i < SIZE; i++)
		CHECK(map[i] == want(i), "mapped byte %lu = %u, want %u", (unsigned long)i,
		      map[i], want(i));
	CHECK_RET(uf_munmap(mm, map, MAPLEN), 0);
	uf_object_put(obj);

	CHECK_RET(uf_object_create(mm, &dribble_ops, &d, SIZE, &obj), 0);
	buf = malloc(SIZE);
	CHECK(buf, "out of memory");
	CHECK_RET(uf_object_pread(obj, buf, SIZE, 0), SIZE);
	for (i = 0; i < SIZE; i++)
		CHECK(buf[i] == want(i), "pread byte %lu = %u, want %u", (unsigned long)i,
		      buf[i], want(i));
	free(buf);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&d.s);
	return 0;
}
