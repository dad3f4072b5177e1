/* Description: what a user sees at and past the end of an object matches
 * the kernel's own mmap() of the same file (the oracle), on every store and
 * for several sizes: bytes equal the file; bytes past EOF in the last
 * partial page read zero (and take writes, which never reach the file);
 * an access one page or more past EOF gets SIGBUS with si_addr the exact
 * address, for reads and writes, in shared and private mappings.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/stat.h>

struct probe {
	int sig;
	int val;		/* byte read (or read back after the write) */
	long addr;		/* si_addr - map, or -1 */
};

#define PROBES_PER_PAGE 4
static const unsigned int probe_off[PROBES_PER_PAGE] = { 0, 1, 2047, 4095 };

struct ctx {
	const char *name;
	uint64_t size;
	size_t len;		/* mapped: the object's pages + 2 */
	size_t nprobes;
	struct probe *kern, *uf;
};

/* Touch probe_off[] of every page of @map; @write: write 0x5a first. */
static void trace(struct ctx *c, unsigned char *map, bool write, struct probe *out)
{
	size_t pg, k, n = 0;

	for (pg = 0; pg < c->len / UF_PAGE_SIZE; pg++) {
		for (k = 0; k < PROBES_PER_PAGE; k++, n++) {
			unsigned char *a = map + pg * UF_PAGE_SIZE + probe_off[k], v = 0;
			struct ut_fault f;
			int sig = 0;

			if (write)
				sig = os_poke(a, 0x5a, &f);
			if (!sig)
				sig = ut_read(a, &v, &f);
			out[n].sig = sig;
			out[n].val = sig ? -1 : v;
			out[n].addr = sig ? (long)((unsigned char *)f.addr - map) : -1;
		}
	}
}

/* ufault's trace equals the kernel's, and both are what the docs say. */
static void compare(struct ctx *c, const char *what, bool write)
{
	size_t n;

	for (n = 0; n < c->nprobes; n++) {
		uint64_t off = (n / PROBES_PER_PAGE) * UF_PAGE_SIZE + probe_off[n % PROBES_PER_PAGE];
		const struct probe *k = &c->kern[n], *u = &c->uf[n];
		uint64_t end = (c->size + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE * UF_PAGE_SIZE;

		CHECK(k->sig == u->sig && k->val == u->val && k->addr == u->addr,
		      "%s size %lu %s: offset %lu: kernel sig %d val %d addr %ld, ufault sig %d val %d addr %ld",
		      c->name, (unsigned long)c->size, what, (unsigned long)off, k->sig, k->val,
		      k->addr, u->sig, u->val, u->addr);
		if (off >= end)
			CHECK(u->sig == SIGBUS && u->addr == (long)off,
			      "%s size %lu %s: offset %lu past EOF: sig %d addr %ld", c->name,
			      (unsigned long)c->size, what, (unsigned long)off, u->sig, u->addr);
		else if (write)
			CHECK(u->sig == 0 && u->val == 0x5a, "%s %s: offset %lu", c->name, what,
			      (unsigned long)off);
		else
			CHECK(u->sig == 0 && u->val == (off < c->size ? ut_pattern(off) : 0),
			      "%s size %lu %s: offset %lu: sig %d val %d", c->name,
			      (unsigned long)c->size, what, (unsigned long)off, u->sig, u->val);
	}
}

/* The file (or the object, for the memory store) still holds the pattern
 * and has its size: no write past EOF reached it. */
static void check_file(struct ctx *c, const char *path, struct uf_object *obj)
{
	unsigned char *buf = malloc(c->size + UF_PAGE_SIZE);
	ssize_t n;
	uint64_t i;
	int fd = -1;

	CHECK(buf, "out of memory");
	if (path[0]) {
		struct stat sb;

		fd = open(path, O_RDONLY);
		CHECK(fd >= 0 && fstat(fd, &sb) == 0, "open %s", path);
		CHECK((uint64_t)sb.st_size == c->size, "%s: file size %ld, want %lu", c->name,
		      (long)sb.st_size, (unsigned long)c->size);
		n = pread(fd, buf, c->size + UF_PAGE_SIZE, 0);
		close(fd);
	} else {
		n = uf_object_pread(obj, buf, c->size + UF_PAGE_SIZE, 0);
	}
	CHECK(n == (ssize_t)c->size, "%s: read %zd bytes, want %lu", c->name, n, (unsigned long)c->size);
	for (i = 0; i < c->size; i++)
		CHECK(buf[i] == ut_pattern(i), "%s: file byte %lu = %u", c->name, (unsigned long)i, buf[i]);
	free(buf);
}

static void run(struct uf_mm *mm, struct ctx *c, enum ut_store s)
{
	static const struct { int prot, flags, kflags; bool write; const char *what; } modes[] = {
		{ PROT_READ, UF_MAP_SHARED, MAP_SHARED, false, "shared read" },
		{ PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, MAP_PRIVATE, false, "private read" },
		{ PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, MAP_PRIVATE, true, "private write" },
		{ PROT_READ | PROT_WRITE, UF_MAP_SHARED, MAP_SHARED, true, "shared write" },
	};
	char path[256], kpath[256];
	struct uf_object *obj;
	size_t m;
	int kfd;

	c->name = ut_store_names[s];
	c->len = ((c->size + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE + 2) * UF_PAGE_SIZE;
	c->nprobes = c->len / UF_PAGE_SIZE * PROBES_PER_PAGE;
	c->kern = calloc(c->nprobes, sizeof(*c->kern));
	c->uf = calloc(c->nprobes, sizeof(*c->uf));
	CHECK(c->kern && c->uf, "out of memory");

	obj = ut_object(mm, s, c->size, path, sizeof(path));
	kfd = ut_make_file(s == UT_STORE_DISK ? "/var/tmp" : "/dev/shm", c->size, kpath, sizeof(kpath));
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		unsigned char *km, *um;

		/* the shared write goes last: it changes the bytes */
		km = mmap(NULL, c->len, modes[m].prot, modes[m].kflags, kfd, 0);
		CHECK(km != MAP_FAILED, "mmap: %s", strerror(errno));
		trace(c, km, modes[m].write, c->kern);
		CHECK(msync(km, c->len, MS_SYNC) == 0 || errno == ENOMEM, "msync");
		munmap(km, c->len);

		CHECK_RET(uf_mmap(mm, c->len, modes[m].prot, modes[m].flags, obj, 0, (void **)&um), 0);
		trace(c, um, modes[m].write, c->uf);
		compare(c, modes[m].what, modes[m].write);
		if (modes[m].flags == UF_MAP_SHARED && modes[m].write) {
			/* only the tail past EOF was left as written: restore
			 * the object's bytes, then check that what lay past EOF
			 * never reaches the file */
			size_t pg, k;

			for (pg = 0; pg * UF_PAGE_SIZE < c->size; pg++)
				for (k = 0; k < PROBES_PER_PAGE; k++) {
					uint64_t off = pg * UF_PAGE_SIZE + probe_off[k];

					if (off < c->size)
						um[off] = ut_pattern(off);
				}
			CHECK_RET(uf_msync(mm, um, c->len - 2 * UF_PAGE_SIZE, UF_MS_SYNC), 0);
			CHECK_RET(uf_object_sync(obj), 0);
			check_file(c, path, obj);
		}
		CHECK_RET(uf_munmap(mm, um, c->len), 0);
	}
	close(kfd);
	unlink(kpath);
	uf_object_put(obj);
	if (path[0]) {
		check_file(c, path, NULL);
		unlink(path);
	}
	free(c->kern);
	free(c->uf);
}

int main(void)
{
	static const uint64_t sizes[] = {
		1, 100, UF_PAGE_SIZE, UF_PAGE_SIZE + 1, 3 * UF_PAGE_SIZE + 123, 5 * UF_PAGE_SIZE,
	};
	struct uf_mm *mm = ut_mm_create(NULL);
	struct ctx c;
	size_t i;
	int s;

	ut_catch_signals();
	os_watchdog(30);
	for (s = 0; s < UT_NSTORES; s++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			memset(&c, 0, sizeof(c));
			c.size = sizes[i];
			run(mm, &c, s);
		}
	}
	uf_mm_destroy(mm);
	return 0;
}
