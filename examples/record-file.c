// SPDX-License-Identifier: MIT
/*
 * record-file - the common job: a file of fixed-size records, mapped
 * writable and shared under a cache budget smaller than the file, updated
 * by several threads, made durable with uf_msync(), and checked afterwards
 * with plain pread(2) on the file, not through ufault.
 *
 *	record-file [FILE|- [MiB [BUDGET_MiB [THREADS]]]]
 *	(default: a temporary file in /var/tmp ("-"), 32 MiB, 4 MiB, 4 threads;
 *	"record-file - 256 8 4" is a 256 MiB file under an 8 MiB budget)
 *
 * Every uf_* call here may come from any application thread; the mapping
 * itself is plain memory, so the threads simply store into it.  Pages the
 * budget evicts are written back first and read again on the next touch.
 * uf_msync() writes the dirty pages and then calls the file store's
 * ->sync, which is fdatasync(2): when it returns 0 the records are on the
 * file's storage.
 */
#include <ufault.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RECORD_SIZE	128		/* bytes; 32 records per page */
#define UPDATES		5000		/* per thread */

struct record {
	uint64_t id;			/* the record's index */
	uint64_t version;		/* how many times it was updated */
	uint64_t writer;		/* the thread that updated it last */
	char text[RECORD_SIZE - 24];
};

struct job {
	struct record *recs;
	size_t nrec;
	unsigned int nthreads, nr;
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Thread @nr owns the records whose index is nr modulo nthreads, so no two
 * threads write one record and the result is known; they share pages. */
static void *updater(void *arg)
{
	struct job *j = arg;
	uint64_t s = 0x9e3779b97f4a7c15ULL * (j->nr + 1);
	size_t mine = (j->nrec - j->nr + j->nthreads - 1) / j->nthreads;
	int i;

	for (i = 0; i < UPDATES; i++) {
		size_t k = (size_t)(next_rand(&s) % mine) * j->nthreads + j->nr;
		struct record *r = &j->recs[k];

		r->id = k;
		r->version++;
		r->writer = j->nr;
		snprintf(r->text, sizeof(r->text), "record %zu version %" PRIu64, k, r->version);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char tmp[] = "/var/tmp/record-file-XXXXXX";
	const char *path = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
	size_t size = (size_t)(argc > 2 ? atoi(argv[2]) : 32) << 20;
	struct uf_mm_config cfg = {
		.cache_budget = (uint64_t)(argc > 3 ? atoi(argv[3]) : 4) << 20,
		.handler_threads = 2,
	};
	unsigned int nthreads = argc > 4 ? (unsigned int)atoi(argv[4]) : 4, t;
	struct uf_object *obj;
	struct uf_mm *mm;
	struct record *recs, rec;
	pthread_t tid[64];
	struct job jobs[64];
	size_t nrec = size / RECORD_SIZE, k, updated = 0;
	uint64_t *version;
	int fd, ret;

	if (!size || !cfg.cache_budget || !nthreads || nthreads > 64) {
		fprintf(stderr, "usage: record-file [FILE|- [MiB [BUDGET_MiB [THREADS<=64]]]]\n");
		return 2;
	}
	if (!path) {
		fd = mkstemp(tmp);
		if (fd < 0)
			return perror("mkstemp"), 1;
		close(fd);
		path = tmp;
	}

	ret = uf_mm_create(&cfg, &mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	ret = uf_object_open(mm, path, O_RDWR | O_CREAT, &obj);
	if (!ret)
		ret = uf_object_truncate(obj, size);	/* a new file reads zero */
	if (!ret)
		ret = uf_mmap(mm, size, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			      (void **)&recs);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, strerror(-ret));
		return 1;
	}

	for (t = 0; t < nthreads; t++) {
		jobs[t] = (struct job){ .recs = recs, .nrec = nrec, .nthreads = nthreads, .nr = t };
		if (pthread_create(&tid[t], NULL, updater, &jobs[t]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	for (t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);

	/* The expected versions, read through the mapping before the sync. */
	version = calloc(nrec, sizeof(*version));
	if (!version)
		return perror("calloc"), 1;
	for (k = 0; k < nrec; k++)
		version[k] = recs[k].version;

	ret = uf_msync(mm, recs, size, UF_MS_SYNC);
	if (ret) {
		fprintf(stderr, "uf_msync: %s\n", strerror(-ret));
		return 1;
	}

	/* Check the file itself, with no ufault in between. */
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return perror(path), 1;
	for (k = 0; k < nrec; k++) {
		char want[sizeof(rec.text)];

		if (pread(fd, &rec, sizeof(rec), (off_t)(k * RECORD_SIZE)) != sizeof(rec))
			return perror("pread"), 1;
		if (!version[k]) {
			if (rec.version || rec.id)
				goto bad;
			continue;
		}
		snprintf(want, sizeof(want), "record %zu version %" PRIu64, k, version[k]);
		if (rec.id != k || rec.version != version[k] || rec.writer != k % nthreads ||
		    strcmp(rec.text, want))
			goto bad;
		updated++;
	}
	close(fd);

	{
		struct uf_stats st;

		uf_mm_stats(mm, &st);
		printf("%zu MiB file, %" PRIu64 " MiB budget, %u threads: %zu of %zu records "
		       "updated, all read back from the file with pread\n"
		       "major faults %" PRIu64 ", pages written %" PRIu64 ", evicted %" PRIu64
		       ", cached now %" PRIu64 " (budget %" PRIu64 ")\n", size >> 20,
		       cfg.cache_budget >> 20, nthreads, updated, nrec, st.major_faults,
		       st.pages_written, st.evicted_pages, st.cache_pages,
		       cfg.cache_budget / UF_PAGE_SIZE);
	}
	uf_munmap(mm, recs, size);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(version);
	if (path == tmp)
		unlink(tmp);
	return 0;

bad:
	fprintf(stderr, "record %zu: the file holds id %" PRIu64 " version %" PRIu64
		" writer %" PRIu64 " \"%.40s\", the mapping had version %" PRIu64 "\n", k, rec.id,
		rec.version, rec.writer, rec.text, version[k]);
	return 1;
}
