/* Description: kill -9 of a Redis master under a reader and a writer: the
 * reader's faults stall through the failover and then go on with the right
 * bytes (no SIGBUS), the writer's syncs wait until they are acknowledged
 * again, and after the failover every byte a sync acknowledged is there. */
#define _GNU_SOURCE
#include "redis-test.h"

#include <pthread.h>
#include <stdatomic.h>

#define NPAGES		1536	/* three extents */
#define WSTEP		8	/* the writer rewrites every 8th page */
#define NW		(NPAGES / WSTEP)
#define RUN_SECONDS	90	/* at most */

struct ctx {
	struct rt_cluster c;
	char url[512], rurl[512];
	atomic_bool stop;
	/* reader */
	atomic_long reads, reads_victim;	/* reads_victim: of the killed master's extent */
	atomic_long max_stall_ms;
	char rerr[256];
	/* writer */
	atomic_long syncs, failed_syncs;
	atomic_long acked[NW];			/* generation acknowledged per written page */
	atomic_long tried[NW];			/* generation last written */
	char werr[256];
	uint64_t victim_ext;
};

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Byte @i of page @pg at generation @gen (generation 0: the first write). */
static unsigned char byte_of(uint64_t pg, long gen, size_t i)
{
	return (unsigned char)(ut_pattern(pg * UF_PAGE_SIZE + i) + (unsigned long)gen * 31);
}

static void fill(unsigned char *page, uint64_t pg, long gen)
{
	for (size_t i = 0; i < UF_PAGE_SIZE; i++)
		page[i] = byte_of(pg, gen, i);
}

/* Which generation @page holds (-1: none, it is torn or wrong). */
static long gen_of(const unsigned char *page, uint64_t pg, long maxgen)
{
	for (long g = 0; g <= maxgen; g++) {
		size_t i;

		for (i = 0; i < UF_PAGE_SIZE && page[i] == byte_of(pg, g, i); i++)
			;
		if (i == UF_PAGE_SIZE)
			return g;
	}
	return -1;
}

/* Reads random pages the writer does not touch, through a mapping whose
 * small cache budget makes most reads go to the cluster. */
static void *reader(void *arg)
{
	struct ctx *x = arg;
	struct uf_mm_config cfg = { .cache_budget = 64 * UF_PAGE_SIZE };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct uf_object *obj;
	unsigned char *p, buf[256];
	uint64_t rnd = 88172645463325252ULL;
	int64_t last = ms_now();
	struct ut_fault f;
	int ret;

	ret = uf_redis_open(mm, x->rurl, O_RDONLY, &obj);
	if (ret) {
		snprintf(x->rerr, sizeof(x->rerr), "reader open: %s", strerror(-ret));
		return NULL;
	}
	ret = uf_mmap(mm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	if (ret) {
		snprintf(x->rerr, sizeof(x->rerr), "reader mmap: %s", strerror(-ret));
		return NULL;
	}
	while (!atomic_load(&x->stop)) {
		uint64_t pg, off;
		int64_t t;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		pg = rnd % NPAGES;
		if (pg % WSTEP == 0)
			pg++;
		off = (rnd >> 32) % (UF_PAGE_SIZE - sizeof(buf));
		if (ut_copy_from(buf, p + pg * UF_PAGE_SIZE + off, sizeof(buf), &f)) {
			snprintf(x->rerr, sizeof(x->rerr), "reader: signal %d reading page %lu", f.sig,
				 (unsigned long)pg);
			break;
		}
		for (size_t i = 0; i < sizeof(buf); i++)
			if (buf[i] != byte_of(pg, 0, off + i)) {
				snprintf(x->rerr, sizeof(x->rerr), "reader: page %lu byte %lu is %u, want %u",
					 (unsigned long)pg, (unsigned long)(off + i), buf[i],
					 byte_of(pg, 0, off + i));
				atomic_store(&x->stop, true);
				break;
			}
		t = ms_now();
		if (t - last > atomic_load(&x->max_stall_ms))
			atomic_store(&x->max_stall_ms, t - last);
		last = t;
		atomic_fetch_add(&x->reads, 1);
		if (pg / 512 == x->victim_ext)
			atomic_fetch_add(&x->reads_victim, 1);
	}
	uf_munmap(mm, p, (size_t)NPAGES * UF_PAGE_SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return NULL;
}

/* Rewrites every 8th page with the next generation and syncs, over and
 * over; a sync that returned 0 makes its generation acknowledged. */
static void *writer(void *arg)
{
	struct ctx *x = arg;
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char page[UF_PAGE_SIZE];
	long gen = 0;
	int ret;

	ret = uf_redis_open(mm, x->url, O_RDWR, &obj);
	if (ret) {
		snprintf(x->werr, sizeof(x->werr), "writer open: %s", strerror(-ret));
		return NULL;
	}
	while (!atomic_load(&x->stop)) {
		gen++;
		for (int i = 0; i < NW; i++) {
			fill(page, (uint64_t)i * WSTEP, gen);
			atomic_store(&x->tried[i], gen);
			ret = (int)uf_object_pwrite(obj, page, UF_PAGE_SIZE, (uint64_t)i * WSTEP * UF_PAGE_SIZE);
			if (ret != (int)UF_PAGE_SIZE) {
				snprintf(x->werr, sizeof(x->werr), "pwrite: %d", ret);
				atomic_store(&x->stop, true);
				break;
			}
		}
		ret = uf_object_sync(obj);
		if (ret) {
			atomic_fetch_add(&x->failed_syncs, 1);	/* pages stay dirty: tried again */
			continue;
		}
		for (int i = 0; i < NW; i++)
			atomic_store(&x->acked[i], gen);
		atomic_fetch_add(&x->syncs, 1);
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return NULL;
}

/* Read the whole output of a shell command into @buf. */
static void run(char *buf, size_t len, const char *cmd)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	CHECK(f, "popen");
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	pclose(f);
}

/* The port of the master serving @slot and of its replica. */
static void find_shard(struct ctx *x, unsigned int slot, int *mport, int *rport)
{
	char cmd[512], out[8192], mid[64] = "";
	char *line, *save;

	snprintf(cmd, sizeof(cmd),
		 "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli -h 127.0.0.1 -p %d cluster nodes",
		 x->c.ports[0]);
	run(out, sizeof(out), cmd);
	*mport = *rport = 0;
	for (int pass = 0; pass < 2; pass++) {
		char copy[8192];

		memcpy(copy, out, sizeof(copy));
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char id[64], addr[128], flags[128], master[64];
			int port, pos = 0;

			if (sscanf(line, "%63s %127s %127s %63s %*s %*s %*s %*s %n", id, addr, flags, master,
				   &pos) < 4)
				continue;
			port = atoi(strchr(addr, ':') + 1);
			if (pass == 0 && strstr(flags, "master") && !strstr(flags, "fail")) {
				const char *s = line + pos;

				while (*s) {
					int a, b, n = 0;

					if (sscanf(s, "%d-%d%n", &a, &b, &n) == 2 ||
					    (sscanf(s, "%d%n", &a, &n) == 1 && (b = a, 1))) {
						if ((int)slot >= a && (int)slot <= b) {
							*mport = port;
							snprintf(mid, sizeof(mid), "%s", id);
						}
					}
					s += n ? n : 1;
					while (*s == ' ')
						s++;
				}
			}
			if (pass == 1 && strstr(flags, "slave") && !strcmp(master, mid))
				*rport = port;
		}
	}
	CHECK(*mport && *rport, "no master/replica found for slot %u", slot);
}

static unsigned int key_slot(struct ctx *x, const char *key)
{
	char out[64];

	CHECK(rt_cli(&x->c, out, sizeof(out), "cluster keyslot '%s'", key) == 0, "keyslot: %s", out);
	return (unsigned int)atoi(out);
}

int main(void)
{
	struct ctx *x = calloc(1, sizeof(*x));
	const char *script = getenv("UFAULT_TEST_REDIS_SCRIPT");
	struct uf_mm *mm;
	struct uf_object *obj;
	pthread_t rt, wt;
	unsigned char *page;
	char key[300], cmd[1024], pidpath[512], out[4096];
	int mport, rport, ret;
	long reads0, syncs0, fails;
	int64_t t0, t_kill, t_promoted;
	FILE *f;
	int pid = 0;

	CHECK(x, "calloc");
	rt_cluster(&x->c, "failover");
	CHECK(script && x->c.dir && x->c.nports == 6, "the cluster's environment is incomplete");
	alarm(RUN_SECONDS + 60);
	ut_catch_signals();
	rt_url(&x->c, x->url, sizeof(x->url), "obj", "?timeout_ms=60000");
	rt_url(&x->c, x->rurl, sizeof(x->rurl), "obj", "?timeout_ms=30000");

	/* the object, all of it written once and synced */
	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, x->url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "open: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * UF_PAGE_SIZE), 0);
	page = malloc((size_t)NPAGES * UF_PAGE_SIZE);
	CHECK(page, "malloc");
	for (uint64_t pg = 0; pg < NPAGES; pg++)
		fill(page + pg * UF_PAGE_SIZE, pg, 0);
	CHECK_RET(uf_object_pwrite(obj, page, (size_t)NPAGES * UF_PAGE_SIZE, 0), (long)NPAGES * UF_PAGE_SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* the victim: the master of extent 0 */
	x->victim_ext = 0;
	snprintf(key, sizeof(key), "uf:{%s-obj:0}:x", x->c.prefix);
	find_shard(x, key_slot(x, key), &mport, &rport);
	snprintf(pidpath, sizeof(pidpath), "%s/%d/pid", x->c.dir, mport);
	f = fopen(pidpath, "r");
	CHECK(f && fscanf(f, "%d", &pid) == 1 && pid > 0, "no pid in %s", pidpath);
	fclose(f);

	CHECK(pthread_create(&rt, NULL, reader, x) == 0, "pthread_create");
	CHECK(pthread_create(&wt, NULL, writer, x) == 0, "pthread_create");
	t0 = ms_now();
	while (ms_now() - t0 < 1000 && !atomic_load(&x->stop))
		usleep(10000);
	CHECK(!x->rerr[0] && !x->werr[0], "before the kill: %s%s", x->rerr, x->werr);
	reads0 = atomic_load(&x->reads);
	syncs0 = atomic_load(&x->syncs);
	CHECK(reads0 > 0 && syncs0 > 0, "nothing read (%ld) or synced (%ld) before the kill", reads0, syncs0);

	t_kill = ms_now();
	CHECK(kill(pid, SIGKILL) == 0, "kill -9 %d: %s", pid, strerror(errno));
	printf("killed master :%d (pid %d) serving extent 0; its replica is :%d\n", mport, pid, rport);

	/* wait for the promotion */
	for (;;) {
		snprintf(cmd, sizeof(cmd),
			 "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli -h 127.0.0.1 -p %d info replication",
			 rport);
		run(out, sizeof(out), cmd);
		if (strstr(out, "role:master"))
			break;
		CHECK(ms_now() - t_kill < RUN_SECONDS * 1000, "no promotion after %d s", RUN_SECONDS);
		usleep(100000);
	}
	t_promoted = ms_now();
	printf("replica promoted after %.1f s\n", (double)(t_promoted - t_kill) / 1000);

	/* reads of the killed master's extent go on after the promotion */
	{
		long rv = atomic_load(&x->reads_victim);

		while (atomic_load(&x->reads_victim) < rv + 50 && !atomic_load(&x->stop))
			CHECK(ms_now() - t_promoted < 30000, "reads stopped after the failover (%s)", x->rerr);
	}
	CHECK(!x->rerr[0], "%s", x->rerr);

	/* the old master comes back as a replica: syncs are acknowledged again */
	snprintf(cmd, sizeof(cmd), "'%s' restart '%s' %d >/dev/null", script, x->c.dir, mport);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	syncs0 = atomic_load(&x->syncs);
	t0 = ms_now();
	while (atomic_load(&x->syncs) < syncs0 + 3 && !atomic_load(&x->stop))
		CHECK(ms_now() - t0 < 60000, "syncs did not resume (%s)", x->werr);
	atomic_store(&x->stop, true);
	pthread_join(rt, NULL);
	pthread_join(wt, NULL);
	CHECK(!x->rerr[0] && !x->werr[0], "%s%s", x->rerr, x->werr);
	fails = atomic_load(&x->failed_syncs);

	/* every acknowledged byte is there */
	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, x->rurl, O_RDONLY, &obj);
	CHECK(ret == 0, "open after: %s", strerror(-ret));
	CHECK_RET(uf_object_pread(obj, page, (size_t)NPAGES * UF_PAGE_SIZE, 0), (long)NPAGES * UF_PAGE_SIZE);
	for (uint64_t pg = 0; pg < NPAGES; pg++) {
		unsigned char *pp = page + pg * UF_PAGE_SIZE;

		if (pg % WSTEP) {
			CHECK(gen_of(pp, pg, 0) == 0, "page %lu lost its bytes", (unsigned long)pg);
		} else {
			long acked = atomic_load(&x->acked[pg / WSTEP]);
			long tried = atomic_load(&x->tried[pg / WSTEP]);
			long g = gen_of(pp, pg, tried);

			CHECK(g >= acked, "page %lu holds generation %ld, but %ld was acknowledged",
			      (unsigned long)pg, g, acked);
		}
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(x->url), 0);
	printf("ok: %ld reads, longest stall %.1f s; %ld syncs acknowledged, %ld failed and retried; "
	       "nothing acknowledged was lost\n", atomic_load(&x->reads),
	       (double)atomic_load(&x->max_stall_ms) / 1000, atomic_load(&x->syncs), fails);
	free(page);
	free(x);
	return UT_PASS;
}
