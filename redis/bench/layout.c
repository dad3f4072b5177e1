// SPDX-License-Identifier: MIT
/*
 * layout - what each way of keeping pages in Redis costs per 4 KiB page,
 * on the node that owns one hash tag (the readahead window's round trip):
 *   GET/SET      one key per page, one command per page (the baseline)
 *   MGET/MSET    one key per page, N keys under one hash tag
 *   HMGET/HSET   one hash per extent, N fields (what libufault-redis does)
 *   GETRANGE/SETRANGE  one string per extent, N pages as one range
 * Run inside tests/redis-cluster (it reads the cluster's environment):
 *   tests/redis-cluster run build/redis-layout
 */
#define _GNU_SOURCE
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 4096
#define MAXN 512
#define REPS 25

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static char data[MAXN * PAGE];
static const char *argv[2 * MAXN + 4];
static size_t argvlen[2 * MAXN + 4];
static char names[MAXN][32];

static void cmd(redisContext *c, int argc)
{
	redisReply *r = redisCommandArgv(c, argc, argv, argvlen);

	if (!r || r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "layout: %s\n", r ? r->str : c->errstr);
		exit(1);
	}
	freeReplyObject(r);
}

static void arg(int i, const char *s, size_t len)
{
	argv[i] = s;
	argvlen[i] = len;
}

/* One operation of @n pages in layout @how (0 GET/SET, 1 MGET/MSET,
 * 2 HMGET/HSET, 3 GETRANGE/SETRANGE), @write or read. */
static void op(redisContext *c, int how, int write, int n)
{
	char a[32], b[32];
	int i, k = 0;

	switch (how) {
	case 0:
		for (i = 0; i < n; i++) {
			arg(0, write ? "SET" : "GET", 3);
			arg(1, names[i], strlen(names[i]));
			arg(2, data + (size_t)i * PAGE, PAGE);
			redisAppendCommandArgv(c, write ? 3 : 2, argv, argvlen);
		}
		for (i = 0; i < n; i++) {
			redisReply *r;

			if (redisGetReply(c, (void **)&r) != REDIS_OK)
				exit(1);
			freeReplyObject(r);
		}
		return;
	case 1:
		arg(k++, write ? "MSET" : "MGET", 4);
		for (i = 0; i < n; i++) {
			arg(k++, names[i], strlen(names[i]));
			if (write)
				arg(k++, data + (size_t)i * PAGE, PAGE);
		}
		cmd(c, k);
		return;
	case 2:
		arg(k++, write ? "HSET" : "HMGET", write ? 4 : 5);
		arg(k++, "{bench}:h", 9);
		for (i = 0; i < n; i++) {
			arg(k++, names[i] + 8, strlen(names[i] + 8));	/* the number */
			if (write)
				arg(k++, data + (size_t)i * PAGE, PAGE);
		}
		cmd(c, k);
		return;
	case 3:
		arg(k++, write ? "SETRANGE" : "GETRANGE", 8);
		arg(k++, "{bench}:s", 9);
		arg(k++, "0", 1);
		if (write) {
			arg(k++, data, (size_t)n * PAGE);
		} else {
			snprintf(b, sizeof(b), "%d", n * PAGE - 1);
			arg(k++, b, strlen(b));
		}
		(void)a;
		cmd(c, k);
		return;
	}
}

int main(void)
{
	static const char *const how_names[] = { "one GET/SET per page", "MGET/MSET of page keys",
						  "HMGET/HSET of one hash", "GETRANGE/SETRANGE of one string" };
	static const int sizes[] = { 1, 16, 64, 128, 256, 512 };
	const char *ports = getenv("UFAULT_TEST_REDIS_PORTS"), *pw = getenv("UFAULT_REDIS_PASSWORD");
	redisContext *c = NULL;
	char *end;
	int i;

	if (!ports) {
		fprintf(stderr, "layout: run it under tests/redis-cluster\n");
		return 1;
	}
	/* the master of {bench}: the node that does not answer MOVED */
	while (*ports) {
		int port = (int)strtol(ports, &end, 10);
		redisReply *r;

		ports = end;
		c = redisConnect("127.0.0.1", port);
		if (!c || c->err)
			continue;
		if (pw)
			freeReplyObject(redisCommand(c, "AUTH %s", pw));
		r = redisCommand(c, "SET {bench}:probe 1");
		if (r && r->type != REDIS_REPLY_ERROR) {
			freeReplyObject(r);
			break;
		}
		if (r)
			freeReplyObject(r);
		redisFree(c);
		c = NULL;
	}
	if (!c) {
		fprintf(stderr, "layout: no master found\n");
		return 1;
	}
	for (i = 0; i < MAXN; i++)
		snprintf(names[i], sizeof(names[i]), "{bench}:%d", i);
	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)(i * 7 + 1);

	printf("microseconds per 4 KiB page, median (min) of %d runs\n", REPS);
	printf("%-34s %6s %16s %16s\n", "layout", "pages", "read", "write");
	for (int how = 0; how < 4; how++) {
		for (unsigned int s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			int n = sizes[s];
			double rd[REPS], wr[REPS];

			/* reads apart from writes: a big write keeps the master busy
			 * feeding its replica for a while after its reply */
			for (int r = 0; r < REPS; r++) {
				double t = now_us();

				op(c, how, 1, n);
				wr[r] = (now_us() - t) / n;
			}
			for (int r = 0; r < REPS; r++) {
				double t = now_us();

				op(c, how, 0, n);
				rd[r] = (now_us() - t) / n;
			}
			qsort(rd, REPS, sizeof(double), cmp);
			qsort(wr, REPS, sizeof(double), cmp);
			printf("%-34s %6d %8.2f (%5.2f) %8.2f (%5.2f)\n", how_names[how], n, rd[REPS / 2], rd[0],
			       wr[REPS / 2], wr[0]);
		}
	}
	freeReplyObject(redisCommand(c, "UNLINK {bench}:h {bench}:s {bench}:probe"));
	for (i = 0; i < MAXN; i++)
		freeReplyObject(redisCommand(c, "UNLINK %s", names[i]));
	redisFree(c);
	return 0;
}
