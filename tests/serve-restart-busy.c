// SPDX-License-Identifier: MIT
/* Description: ufault-serve killed with SIGKILL at random moments while two threads of a Firecracker-style client fault pages at random, and started again each time (five times): every byte the client reads is SOURCE's, no thread is left waiting, and the client never restarts */
#include "serve-test.h"

#include <pthread.h>

#define RESTARTS	5
#define LEN		(16 << 20)

struct reader {
	struct ut_fc *fc;
	uint64_t seed;
	int *stop;		/* atomic */
	unsigned long reads;	/* atomic */
	int bad;
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	uint64_t x = r->seed;

	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
		size_t pg, o;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pg = (size_t)(x >> 33) % (LEN / 4096);
		o = (size_t)(x >> 20) % 4096;
		if ((unsigned char)r->fc->base[0][pg * 4096 + o] !=
		    ut_pattern(r->fc->offset[0] + pg * 4096 + o))
			r->bad++;
		__atomic_add_fetch(&r->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static unsigned long reads(const struct reader *rd)
{
	return __atomic_load_n(&rd[0].reads, __ATOMIC_RELAXED) +
	       __atomic_load_n(&rd[1].reads, __ATOMIC_RELAXED);
}

int main(void)
{
	const size_t len[1] = { LEN };
	const uint64_t off[1] = { 4096 };
	struct reader rd[2];
	struct ut_server srv;
	struct ut_fc fc;
	pthread_t th[2];
	int stop = 0, i;

	ut_watchdog(120);
	ut_server_start(&srv, LEN + 8192, NULL);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	for (i = 0; i < 2; i++) {
		rd[i] = (struct reader){ .fc = &fc, .seed = (uint64_t)i * 7919 + 1, .stop = &stop };
		CHECK(pthread_create(&th[i], NULL, reader, &rd[i]) == 0, "pthread_create");
	}
	for (i = 0; i < RESTARTS; i++) {
		unsigned long before = reads(rd);

		/* somewhere in the readers' faults */
		while (reads(rd) < before + 200)
			usleep(1000);
		usleep((useconds_t)(i * 1777 % 5000));
		ut_server_stop(&srv);
		usleep((useconds_t)(i * 3331 % 20000));
		ut_server_restart(&srv, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK(rd[i].bad == 0, "reader %d: %d wrong bytes in %lu reads", i, rd[i].bad,
		      rd[i].reads);
	}
	ut_fc_check(&fc, 0, 1);
	return UT_PASS;
}
