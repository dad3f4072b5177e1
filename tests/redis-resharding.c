/* Description: a Redis object's extent moves to another master while a
 * reader has it mapped: during the migration the old master answers ASK
 * (the reader follows it with ASKING), after it MOVED (the reader updates
 * its slot map); every page reads right, and a writer's sync after the move
 * reaches the new master. */
#define _GNU_SOURCE
#include "redis-test.h"

#define NPAGES	512

/* Run redis-cli against node @port (not following redirections); the
 * first line of its output into @out. */
static void node_cli(int port, char *out, size_t len, const char *fmt, ...)
{
	char args[512], cmd[800];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd),
		 "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli -h 127.0.0.1 -p %d %s 2>&1", port, args);
	f = popen(cmd, "r");
	CHECK(f, "popen");
	if (!fgets(out, (int)len, f))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	while (fgetc(f) != EOF)
		;
	pclose(f);
}

static bool is_master(int port)
{
	char out[256];

	node_cli(port, out, sizeof(out), "role");
	return !strcmp(out, "master");
}

static unsigned char want(uint64_t off)
{
	return (unsigned char)(ut_pattern(off) ^ 0xa5);
}

static void check_page(const unsigned char *p, uint64_t pg, const char *when)
{
	for (uint64_t i = 0; i < UF_PAGE_SIZE; i++)
		CHECK(p[pg * UF_PAGE_SIZE + i] == want(pg * UF_PAGE_SIZE + i), "%s: page %lu byte %lu",
		      when, (unsigned long)pg, (unsigned long)i);
}

int main(void)
{
	struct rt_cluster c;
	struct uf_mm *mm, *rmm;
	struct uf_object *obj, *robj;
	unsigned char *buf, *p;
	char url[512], key[300], out[512], from_id[64], to_id[64];
	int from = 0, to = 0, slot, ret;

	rt_cluster(&c, "reshard");
	CHECK(c.nports == 6, "the cluster's ports are not known");
	alarm(120);
	rt_url(&c, url, sizeof(url), "obj", "");
	snprintf(key, sizeof(key), "uf:{%s-obj:0}:x", c.prefix);

	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "open: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * UF_PAGE_SIZE), 0);
	buf = malloc((size_t)NPAGES * UF_PAGE_SIZE);
	CHECK(buf, "malloc");
	for (uint64_t i = 0; i < (uint64_t)NPAGES * UF_PAGE_SIZE; i++)
		buf[i] = want(i);
	CHECK_RET(uf_object_pwrite(obj, buf, (size_t)NPAGES * UF_PAGE_SIZE, 0), (long)NPAGES * UF_PAGE_SIZE);
	CHECK_RET(uf_object_sync(obj), 0);

	/* the reader maps it before anything moves: its slot map is the old one */
	rmm = ut_mm_create(NULL);
	ret = uf_redis_open(rmm, url, O_RDONLY, &robj);
	CHECK(ret == 0, "reader open: %s", strerror(-ret));
	ret = uf_mmap(rmm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, robj, 0, (void **)&p);
	CHECK(ret == 0, "mmap: %s", strerror(-ret));
	check_page(p, 100, "before the move");

	/* the extent's master, and another master to move it to */
	rt_cli(&c, out, sizeof(out), "cluster keyslot '%s'", key);
	slot = atoi(out);
	for (int i = 0; i < c.nports; i++) {
		if (!is_master(c.ports[i]))
			continue;
		node_cli(c.ports[i], out, sizeof(out), "exists '%s'", key);
		if (atoi(out) == 1 && !from)
			from = c.ports[i];
		else if (!to)
			to = c.ports[i];
	}
	CHECK(from && to, "masters not found (from %d, to %d)", from, to);
	node_cli(from, from_id, sizeof(from_id), "cluster myid");
	node_cli(to, to_id, sizeof(to_id), "cluster myid");

	/* migrating: the key moves, the slot not yet: the old master says ASK */
	node_cli(to, out, sizeof(out), "cluster setslot %d importing %s", slot, from_id);
	CHECK(!strcmp(out, "OK"), "importing: %s", out);
	node_cli(from, out, sizeof(out), "cluster setslot %d migrating %s", slot, to_id);
	CHECK(!strcmp(out, "OK"), "migrating: %s", out);
	node_cli(from, out, sizeof(out), "migrate 127.0.0.1 %d '%s' 0 5000 auth \"$UFAULT_REDIS_PASSWORD\"",
		 to, key);
	CHECK(!strcmp(out, "OK"), "migrate: %s", out);
	node_cli(from, out, sizeof(out), "hlen '%s'", key);
	CHECK(!strncmp(out, "ASK", 3), "the old master answers '%s', not ASK", out);
	check_page(p, 300, "during the migration (ASK)");

	/* the slot moves: the old master says MOVED */
	for (int i = 0; i < c.nports; i++)
		if (is_master(c.ports[i]))
			node_cli(c.ports[i], out, sizeof(out), "cluster setslot %d node %s", slot, to_id);
	node_cli(from, out, sizeof(out), "hlen '%s'", key);
	CHECK(!strncmp(out, "MOVED", 5), "the old master answers '%s', not MOVED", out);
	check_page(p, 200, "after the move (MOVED)");
	for (uint64_t pg = 0; pg < NPAGES; pg++)
		check_page(p, pg, "after the move");

	/* the writer (its map is stale too) syncs to the new master */
	memset(buf, 0x42, UF_PAGE_SIZE);
	CHECK_RET(uf_object_pwrite(obj, buf, UF_PAGE_SIZE, 7 * UF_PAGE_SIZE), (long)UF_PAGE_SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	node_cli(to, out, sizeof(out), "hstrlen '%s' 7", key);
	CHECK(atoi(out) == (int)UF_PAGE_SIZE, "page 7 on the new master: %s", out);

	uf_munmap(rmm, p, (size_t)NPAGES * UF_PAGE_SIZE);
	uf_object_put(robj);
	uf_mm_destroy(rmm);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	free(buf);
	printf("ok: slot %d moved from :%d to :%d under a reader: ASK and MOVED followed\n", slot, from, to);
	return UT_PASS;
}
