/* Description: a store that fails its methods (read, write, truncate,
 * punch_hole, sync) now and then with -EIO, -ENOMEM, a short count or a
 * delay (tests/fault-store.h), under a seeded random run of mapped reads
 * and writes (linear and through uf_remap_file_pages windows), pread,
 * pwrite, truncate, punch, msync, sync and remap, checked against a byte
 * model: every injected error surfaces (SIGBUS with si_addr in the page,
 * whatever its si_code, or the call's error) and no error appears without
 * one, no call hangs (alarm), reads never show wrong bytes, and after
 * every acknowledged uf_object_sync() the store holds the model's bytes.
 * Usage: object-fault-injection [--seconds N] [--seed S]  (default 3 s)
 */
#define _GNU_SOURCE
#include "fault-store.h"

#include <sys/mman.h>
#include <time.h>

#define PG	UF_PAGE_SIZE
#define MAXP	64			/* the linear mapping: sizes stay below */
#define MAXSZ	(MAXP * PG)
#define WINP	8			/* the window mapping */

struct fi {
	struct uf_mm *mm;
	struct uf_object *obj;
	struct fst_store st;
	unsigned char *map, *win;
	uint64_t win_pg[WINP];		/* object page each window page shows */
	unsigned char model[MAXSZ];
	uint64_t msize;
	bool poisoned[MAXP];		/* last access got SIGBUS */
	/*
	 * Past the end in the last page a mapping shows what was written
	 * there, until the size changes (then it must read zero: never
	 * reappear).  A hole punched up to the end may zero it or not.
	 */
	bool tail_known;
	uint64_t rng;
	uint64_t ops, sigbus, call_errors, syncs_verified, remaps;
	uint64_t err_before, rerr_before;	/* injected, at the op's start */
};

/* The access being made, for the SIGBUS handler. */
static __thread struct access {
	sigjmp_buf jb;
	volatile int armed;
	void *addr;
} *cur_access;
static volatile sig_atomic_t stray_sigbus;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct access *a = cur_access;

	(void)sig;
	(void)uc;
	if (!a || !a->armed) {
		stray_sigbus++;		/* queued late: not this access's */
		return;
	}
	a->armed = 0;
	a->addr = si->si_addr;
	siglongjmp(a->jb, 1);
}

static void on_alarm(int sig)
{
	static const char msg[] = "object-fault-injection: an operation hung\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(UT_FAIL);
	_exit(UT_FAIL);
}

/* Copy @len bytes between a mapping and @buf; return the SIGBUS address
 * or NULL when the access completed. */
static void *touch(volatile unsigned char *p, unsigned char *buf, size_t len, bool write)
{
	struct access a;
	volatile size_t i = 0;

	a.armed = 0;
	a.addr = NULL;
	cur_access = &a;
	if (sigsetjmp(a.jb, 1) == 0) {
		a.armed = 1;
		for (; i < len; i++) {
			if (write)
				p[i] = buf[i];
			else
				buf[i] = p[i];
		}
		a.armed = 0;
	}
	cur_access = NULL;
	return a.addr;
}

static uint64_t rnd(struct fi *f, uint64_t n)
{
	return n ? os_rand(&f->rng) % n : 0;
}

static uint64_t injected_errors(struct fi *f)
{
	uint64_t n = 0;
	int m;

	pthread_mutex_lock(&f->st.lock);
	for (m = 0; m < FST_NMETHODS; m++)
		n += f->st.injected[m][FST_EIO] + f->st.injected[m][FST_ENOMEM] +
		     (m == FST_READ ? 0 : f->st.injected[m][FST_SHORT]);
	pthread_mutex_unlock(&f->st.lock);
	return n;
}

static uint64_t read_errors(struct fi *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->st.lock);
	n = f->st.read_errors;
	pthread_mutex_unlock(&f->st.lock);
	return n;
}

/* An error (a call's, or a SIGBUS) is fine only if a fault was injected
 * during this operation. */
static void check_error_caused(struct fi *f, const char *what, long err)
{
	CHECK(injected_errors(f) > f->err_before, "op %lu: %s failed (%ld) with no fault injected",
	      (unsigned long)f->ops, what, err);
	f->call_errors++;
}

static void model_resize(struct fi *f, uint64_t size)
{
	/* bytes written through a mapping past the old end are gone: the
	 * gap reads zero, and past the new end in its last page too */
	if (size > f->msize)
		memset(f->model + f->msize, 0, size - f->msize);
	f->msize = size;
	memset(f->model + size, 0, MAXSZ - size);
	f->tail_known = true;
}

/* One access of [off, off + len) of object page @pg (inside one page)
 * through @p. */
static void mapped_access(struct fi *f, volatile unsigned char *p, uint64_t pg, size_t off,
			  size_t len, bool write)
{
	unsigned char buf[PG];
	uint64_t eof_pages = (f->msize + PG - 1) / PG;
	uint64_t at = pg * PG + off;
	void *bad;
	size_t i;

	if (write)
		for (i = 0; i < len; i++)
			buf[i] = (unsigned char)(1 + rnd(f, 255));
	bad = touch(p, buf, len, write);
	if (pg >= eof_pages) {
		CHECK(bad, "op %lu: access past the end (page %lu, %lu pages) got no SIGBUS",
		      (unsigned long)f->ops, (unsigned long)pg, (unsigned long)eof_pages);
		return;
	}
	if (bad) {
		CHECK((unsigned long)bad >= ((unsigned long)p & ~(PG - 1)) &&
		      (unsigned long)bad < ((unsigned long)p & ~(PG - 1)) + PG,
		      "op %lu: SIGBUS at %p outside the page of %p", (unsigned long)f->ops, bad,
		      (void *)p);
		CHECK(read_errors(f) > f->rerr_before || f->poisoned[pg],
		      "op %lu: SIGBUS on page %lu with no store read failed", (unsigned long)f->ops,
		      (unsigned long)pg);
		f->poisoned[pg] = true;
		f->sigbus++;
		return;
	}
	f->poisoned[pg] = false;
	for (i = 0; i < len; i++) {
		if (at + i >= f->msize && !f->tail_known)
			continue;
		if (write)
			f->model[at + i] = buf[i];
		else
			CHECK(buf[i] == f->model[at + i], "op %lu: mapped byte %lu = %u, want %u "
			      "(size %lu)", (unsigned long)f->ops, (unsigned long)(at + i), buf[i],
			      f->model[at + i], (unsigned long)f->msize);
	}
}

static void verify_store(struct fi *f)
{
	uint64_t i;

	pthread_mutex_lock(&f->st.lock);
	for (i = 0; i < f->msize; i++) {
		unsigned char s = i < f->st.size ? f->st.data[i] : 0;

		CHECK(s == f->model[i], "op %lu: after an acknowledged sync the store's byte %lu "
		      "= %u, want %u", (unsigned long)f->ops, (unsigned long)i, s, f->model[i]);
	}
	pthread_mutex_unlock(&f->st.lock);
	f->syncs_verified++;
}

static void one_op(struct fi *f)
{
	unsigned char buf[3 * PG];
	uint64_t off, pg;
	size_t len, i;
	long r;

	f->err_before = injected_errors(f);
	f->rerr_before = read_errors(f);
	alarm(60);
	switch (rnd(f, 12)) {
	case 0:
	case 1:		/* mapped read / write, linear */
	case 2:
		pg = rnd(f, f->msize / PG + 2);
		if (pg >= MAXP)
			pg = MAXP - 1;
		off = rnd(f, PG);
		len = 1 + rnd(f, PG - off);
		mapped_access(f, f->map + pg * PG + off, pg, off, len, rnd(f, 2));
		break;
	case 3:		/* through a window */
		i = rnd(f, WINP);
		off = rnd(f, PG);
		len = 1 + rnd(f, PG - off);
		mapped_access(f, f->win + i * PG + off, f->win_pg[i], off, len, rnd(f, 2));
		break;
	case 4:		/* remap part of the window */
		i = rnd(f, WINP);
		len = 1 + rnd(f, WINP - i);
		pg = rnd(f, MAXP + 2);
		r = uf_remap_file_pages(f->mm, f->win + i * PG, len * PG, 0, pg, 0);
		CHECK(r == 0, "op %lu: uf_remap_file_pages: %ld", (unsigned long)f->ops, r);
		for (off = 0; off < len; off++)
			f->win_pg[i + off] = pg + off;
		f->remaps++;
		break;
	case 5:		/* pread */
		off = rnd(f, MAXSZ);
		len = 1 + rnd(f, sizeof(buf));
		r = uf_object_pread(f->obj, buf, len, off);
		if (r < 0) {
			CHECK(read_errors(f) > f->rerr_before, "op %lu: pread failed (%ld) with no "
			      "store read failed", (unsigned long)f->ops, r);
			f->call_errors++;
			break;
		}
		CHECK((uint64_t)r == (off >= f->msize ? 0 : (f->msize - off < len ? f->msize - off : len)),
		      "op %lu: pread returned %ld", (unsigned long)f->ops, r);
		for (i = 0; i < (size_t)r; i++)
			CHECK(buf[i] == f->model[off + i], "op %lu: pread byte %lu = %u, want %u",
			      (unsigned long)f->ops, (unsigned long)(off + i), buf[i], f->model[off + i]);
		break;
	case 6:		/* pwrite, maybe extending */
		len = 1 + rnd(f, sizeof(buf));
		off = rnd(f, MAXSZ - len);
		for (i = 0; i < len; i++)
			buf[i] = (unsigned char)(1 + rnd(f, 255));
		r = uf_object_pwrite(f->obj, buf, len, off);
		if (r < 0) {
			check_error_caused(f, "pwrite", r);
			/* an extension may have happened before the write failed */
			if (uf_object_size(f->obj) > f->msize)
				model_resize(f, uf_object_size(f->obj));
			break;
		}
		CHECK((size_t)r == len, "op %lu: pwrite returned %ld", (unsigned long)f->ops, r);
		if (off + len > f->msize)
			model_resize(f, off + len);
		memcpy(f->model + off, buf, len);
		break;
	case 7:		/* truncate */
		off = rnd(f, MAXSZ + 1);
		r = uf_object_truncate(f->obj, off);
		if (r < 0)
			check_error_caused(f, "truncate", r);
		else
			model_resize(f, off);
		break;
	case 8:		/* punch */
		off = rnd(f, MAXSZ);
		len = 1 + rnd(f, 4 * PG);
		r = uf_object_punch_hole(f->obj, off, len);
		if (r < 0) {
			check_error_caused(f, "punch", r);
		} else if (off < f->msize) {
			memset(f->model + off, 0, f->msize - off < len ? f->msize - off : len);
			if (off + len >= f->msize)
				f->tail_known = false;
		}
		break;
	case 9:		/* msync */
		r = uf_msync(f->mm, f->map, MAXSZ, UF_MS_SYNC);
		if (r < 0)
			check_error_caused(f, "msync", r);
		break;
	case 10:
	case 11:	/* sync: acknowledged means in the store */
		r = uf_object_sync(f->obj);
		if (r < 0)
			check_error_caused(f, "sync", r);
		else
			verify_store(f);
		break;
	}
	alarm(0);
	CHECK(uf_object_size(f->obj) == f->msize, "op %lu: size %lu, model %lu",
	      (unsigned long)f->ops, (unsigned long)uf_object_size(f->obj),
	      (unsigned long)f->msize);
	f->ops++;
}

int main(int argc, char **argv)
{
	static struct fi f;
	struct sigaction sa;
	double seconds = 3;
	uint64_t seed = 20261203, i, tries;
	struct timespec t0, t;
	int a, m, k;
	long r;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--seconds") && a + 1 < argc)
			seconds = atof(argv[++a]);
		else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--seconds N] [--seed S]\n", argv[0]);
			return UT_FAIL;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGALRM, on_alarm);

	f.mm = ut_mm_create(NULL);
	f.rng = seed;
	f.msize = 40 * PG + 100;
	f.tail_known = true;
	fst_init(&f.st, f.msize, seed * 31 + 7, 12);
	for (i = 0; i < f.msize; i++)
		f.model[i] = ut_pattern(i);
	CHECK_RET(uf_object_create(f.mm, &fst_ops, &f.st, f.msize, &f.obj), 0);
	CHECK_RET(uf_mmap(f.mm, MAXSZ, PROT_READ | PROT_WRITE, UF_MAP_SHARED, f.obj, 0,
			  (void **)&f.map), 0);
	CHECK_RET(uf_mmap(f.mm, WINP * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, f.obj, 0,
			  (void **)&f.win), 0);
	for (i = 0; i < WINP; i++)
		f.win_pg[i] = i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 100; i++)
			one_op(&f);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);

	/* the end: a sync eventually goes through, and the store has it all */
	for (tries = 0; (r = uf_object_sync(f.obj)) != 0; tries++)
		CHECK(tries < 100, "sync keeps failing: %ld", r);
	verify_store(&f);

	printf("seed %lu: %lu operations in %.0f s, %lu SIGBUS, %lu call errors, "
	       "%lu syncs verified, %lu remaps, %d stray SIGBUS\n", (unsigned long)seed,
	       (unsigned long)f.ops, seconds, (unsigned long)f.sigbus, (unsigned long)f.call_errors,
	       (unsigned long)f.syncs_verified, (unsigned long)f.remaps, (int)stray_sigbus);
	for (m = 0; m < FST_NMETHODS; m++) {
		printf("  %-10s %8lu calls, injected:", fst_method_names[m],
		       (unsigned long)f.st.calls[m]);
		for (k = 0; k < FST_NKINDS; k++)
			printf(" %s %lu", fst_kind_names[k], (unsigned long)f.st.injected[m][k]);
		printf("\n");
	}
	CHECK_RET(uf_munmap(f.mm, f.win, WINP * PG), 0);
	CHECK_RET(uf_munmap(f.mm, f.map, MAXSZ), 0);
	uf_object_put(f.obj);
	uf_mm_destroy(f.mm);
	fst_fini(&f.st);
	return 0;
}
