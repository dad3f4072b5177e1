/* Description: a program that uses the ->nopage member of struct
 * uf_vm_operations without silencing the warning gets a deprecation
 * diagnostic from the compiler, while the same program using ->fault
 * compiles cleanly (runs $CC, or cc, with -fsyntax-only). */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

struct ctx {
	const char *cc;
	char incdir[PATH_MAX];
	char dir[64];			/* temp dir for the snippets */
	char out[8192];			/* compiler output of the last run */
};

static const char snippet_head[] =
	"#include <ufault.h>\n"
	"static struct uf_page *np(struct uf_vma *v, unsigned long a, int *t)\n"
	"{ (void)v; (void)a; (void)t; return 0; }\n"
	"static struct uf_page *f(struct uf_vma *v, struct uf_fault_data *d)\n"
	"{ (void)v; (void)d; return 0; }\n";

/* Compile @body after the head; return the exit status, output in c->out. */
static int compile(struct ctx *c, const char *name, const char *body)
{
	char src[128], cmd[PATH_MAX + 512];
	size_t n = 0;
	FILE *fp;
	int st;

	snprintf(src, sizeof(src), "%s/%s.c", c->dir, name);
	fp = fopen(src, "w");
	CHECK(fp != NULL, "fopen %s: %s", src, strerror(errno));
	fputs(snippet_head, fp);
	fputs(body, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "%s -std=gnu11 -fsyntax-only -Werror=deprecated-declarations "
		 "-I '%s' '%s' 2>&1", c->cc, c->incdir, src);
	fp = popen(cmd, "r");
	CHECK(fp != NULL, "popen: %s", strerror(errno));
	n = fread(c->out, 1, sizeof(c->out) - 1, fp);
	c->out[n] = 0;
	st = pclose(fp);
	CHECK(st != -1 && WIFEXITED(st), "%s: compiler did not exit (%#x)", name, st);
	return WEXITSTATUS(st);
}

/* include/ beside the tests: from the program's path (B/tests/x -> B/../include),
 * else the current directory. */
static void find_include(struct ctx *c)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		snprintf(path, sizeof(path), "%s/../../include", dirname(exe));
		if (realpath(path, c->incdir)) {
			snprintf(path, sizeof(path), "%s/ufault.h", c->incdir);
			if (access(path, R_OK) == 0)
				return;
		}
	}
	CHECK(realpath("include", c->incdir) != NULL, "cannot find include/ufault.h");
	snprintf(path, sizeof(path), "%s/ufault.h", c->incdir);
	CHECK(access(path, R_OK) == 0, "no %s", path);
}

static bool have_cc(const char *cc)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", cc);
	return system(cmd) == 0;
}

int main(void)
{
	struct ctx c = { 0 };
	int ret;

	c.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	if (!have_cc(c.cc)) {
		fprintf(stderr, "skip: no C compiler (%s)\n", c.cc);
		return UT_SKIP;
	}
	find_include(&c);
	snprintf(c.dir, sizeof(c.dir), "/tmp/ufault-deprecated-XXXXXX");
	CHECK(mkdtemp(c.dir) != NULL, "mkdtemp: %s", strerror(errno));

	/* control: the same table with ->fault compiles */
	ret = compile(&c, "fault", "void set(struct uf_vm_operations *o) { o->fault = f; }\n");
	CHECK(ret == 0, "the ->fault snippet does not compile:\n%s", c.out);

	/* assigning the member */
	ret = compile(&c, "assign", "void set(struct uf_vm_operations *o) { o->nopage = np; }\n");
	CHECK(ret != 0, "assigning ->nopage compiled without a deprecation error:\n%s", c.out);
	CHECK(strstr(c.out, "deprecated") != NULL, "assigning ->nopage failed, not as "
	      "deprecated:\n%s", c.out);

	/* reading it, as a port's own dispatcher might */
	ret = compile(&c, "read", "int has(const struct uf_vm_operations *o)\n"
		      "{ return o->nopage != 0; }\n");
	CHECK(ret != 0 && strstr(c.out, "deprecated") != NULL,
	      "reading ->nopage: status %d, no deprecation error:\n%s", ret, c.out);

	/*
	 * A designated initializer, the usual way to fill the table.  GCC (at
	 * least up to 13) does not warn about deprecated members named in
	 * initializers, clang does: note it, do not fail.
	 */
	ret = compile(&c, "init", "const struct uf_vm_operations ops = { .nopage = np };\n");
	if (ret == 0)
		fprintf(stderr, "note: %s gives no warning for .nopage in an initializer\n", c.cc);

	/* the way the in-tree test silences it works */
	ret = compile(&c, "pragma", "#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"\n"
		      "void set(struct uf_vm_operations *o) { o->nopage = np; }\n");
	CHECK(ret == 0, "the pragma does not silence the warning:\n%s", c.out);

	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "note: could not remove %s\n", c.dir);
	}
	return 0;
}
