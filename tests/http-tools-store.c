/* Description: ufault-bench and ufault-stress with --store http://URL of
 * an object nginx serves: the bench prints its cold-seq and cold-rand rows
 * for the object, its tmpfs copy and one GET per page, and refuses --only
 * layout (it writes) with exit 2; the stress tool runs its readonly
 * scenario with no failure and skips each scenario that writes with a
 * line saying why; nothing but GETs reached nginx. */
#define _GNU_SOURCE
#include "http-test.h"

#define SIZE	((4UL << 20) + 1234)	/* a partial last page */

struct run {
	int status;		/* the exit status, or 128 + signal */
	char out[1 << 16];	/* stdout and stderr */
};

/* Run build/@tool with @args (NULL-terminated); its output into r->out. */
static void run_tool(const struct ht_server *s, const char *tool, const char *const *args,
		     struct run *r)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char bin[256], log[256];
	const char *argv[24];
	int n = 0, fd, st;
	ssize_t got;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/%s", b, tool);
	snprintf(log, sizeof(log), "%s/%s.out", s->dir, tool);
	argv[n++] = bin;
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	fd = open(log, O_RDONLY);
	CHECK(fd >= 0, "%s: %s", log, strerror(errno));
	got = read(fd, r->out, sizeof(r->out) - 1);
	close(fd);
	r->out[got > 0 ? got : 0] = 0;
	CHECK(r->status != 127, "cannot run %s", bin);
}

/* Lines of @text holding every one of @words (NULL-terminated). */
static int lines_with(const char *text, const char *const *words)
{
	const char *l = text, *e;
	char line[1024];
	int n = 0, i;

	for (; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		snprintf(line, sizeof(line), "%.*s", (int)(e - l), l);
		for (i = 0; words[i] && strstr(line, words[i]); i++)
			;
		n += !words[i];
	}
	return n;
}

static void check_bench(const struct ht_server *s, const char *url)
{
	static const char *const rows[][4] = {
		{ "BENCH case=cold-seq", "store=http", "pages=1024", NULL },
		{ "BENCH case=cold-seq", "store=tmpfs", "pages=1024", NULL },
		{ "BENCH case=cold-seq", "store=raw", "pages=1024", NULL },
		{ "BENCH case=cold-rand", "store=http", "pages=1024", NULL },
		{ "BENCH case=cold-rand", "store=tmpfs", "pages=1024", NULL },
		{ "BENCH case=cold-rand", "store=raw", "pages=1024", NULL },
	};
	const char *const args[] = { "--store", url, "--size", "4", "--repeat", "1",
				     "--tmpfs-dir", s->dir, NULL };
	const char *const layout[] = { "--store", url, "--only", "layout", NULL };
	const char *const refused[] = { "layout", "read-only", NULL };
	static struct run r;

	run_tool(s, "ufault-bench", args, &r);
	if (r.status == 77) {
		printf("%sskip: ufault-bench: no userfaultfd here\n", r.out);
		exit(UT_SKIP);
	}
	CHECK(r.status == 0, "ufault-bench --store %s: exit %d:\n%s", url, r.status, r.out);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(lines_with(r.out, rows[i]) == 1, "ufault-bench: no row %s %s:\n%s",
		      rows[i][0], rows[i][1], r.out);
	printf("%s", strstr(r.out, "\ncase") ? strstr(r.out, "\ncase") + 1 : r.out);

	run_tool(s, "ufault-bench", layout, &r);
	CHECK(r.status == 2 && lines_with(r.out, refused) == 1,
	      "ufault-bench --store %s --only layout: exit %d, want 2 and why:\n%s", url,
	      r.status, r.out);
}

static void check_stress(const struct ht_server *s, const char *url)
{
	const char *const args[] = { "--store", url, "--seconds", "3", "--seed", "37", NULL };
	const char *const ran[] = { "readonly", "ufault-http", NULL };
	const char *const skipped[] = { "ufault-http", "skipped: it writes, and the HTTP store "
					"is read-only", NULL };
	static struct run r;
	unsigned long long ops = 0, faults = 0, failures = 1;
	const char *l;

	run_tool(s, "ufault-stress", args, &r);
	if (r.status == 77) {
		printf("%sskip: ufault-stress: nothing could run\n", r.out);
		exit(UT_SKIP);
	}
	printf("%s", r.out);
	CHECK(r.status == 0, "ufault-stress --store %s: exit %d", url, r.status);
	CHECK(lines_with(r.out, skipped) == 5, "ufault-stress: %d scenarios said skipped, want 5",
	      lines_with(r.out, skipped));
	CHECK(lines_with(r.out, ran) == 1, "ufault-stress: no readonly row");
	l = strstr(r.out, "readonly ");
	CHECK(l && sscanf(l, "readonly ufault-http %llu %llu %llu", &ops, &faults,
			  &failures) == 3, "ufault-stress: the readonly row does not parse");
	CHECK(ops > 0 && faults > 0 && failures == 0,
	      "readonly: %llu operations, %llu faults, %llu failures", ops, faults, failures);
	CHECK(strstr(r.out, "\nPASS\n"), "ufault-stress: no PASS line");
}

int main(void)
{
	struct ht_server s;
	unsigned char *buf;
	char url[256];

	ht_start(&s, NULL);
	alarm(240);
	buf = ht_pattern(SIZE, 3);
	ht_put(&s, "snap/mem", buf, SIZE, 0);
	ht_url(&s, url, sizeof(url), "snap/mem");

	check_bench(&s, url);
	check_stress(&s, url);
	CHECK(ht_not_gets(&s) == 0, "%ld requests other than GET reached nginx", ht_not_gets(&s));
	free(buf);
	printf("ok: ufault-bench and ufault-stress --store %s\n", url);
	return UT_PASS;
}
