// SPDX-License-Identifier: MIT
/* Description: ufault-serve --orphan-timeout 0 starts serving every time: the supervisor waits for the server that started it however short the orphan timeout (which is the clients' wait for a next server, not the first server's for its supervisor); before, it gave up before that server connected about one start in four, and the server exited at its start */
#define _GNU_SOURCE
#include "serve-test.h"

#include <signal.h>

#define STARTS	100
#define BURNERS	4	/* processes busy beside the starts: the race shows */

int main(void)
{
	const char *const opts[] = { "--orphan-timeout", "0", NULL };
	struct ut_server srv;
	pid_t burner[BURNERS];
	int i;

	ut_watchdog(120);
	for (i = 0; i < BURNERS; i++) {
		burner[i] = fork();
		CHECK(burner[i] >= 0, "fork: %s", strerror(errno));
		if (burner[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				;
		}
	}
	for (i = 0; i < STARTS; i++) {
		ut_server_start(&srv, 1UL << 20, opts);	/* (fails the test if it exits) */
		ut_server_stop(&srv);
		ut_super_stop(&srv);
	}
	for (i = 0; i < BURNERS; i++) {
		kill(burner[i], SIGKILL);
		waitpid(burner[i], NULL, 0);
	}
	printf("%d starts with --orphan-timeout 0 beside %d busy processes, each serving\n",
	       STARTS, BURNERS);
	return UT_PASS;
}
