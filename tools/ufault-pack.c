// SPDX-License-Identifier: MIT
/*
 * ufault-pack - write a snapshot as a packed snapshot (independently
 * zstd-compressed frames and an index: docs/packed.md), or get the
 * original bytes back from one.
 *
 *   ufault-pack [-q] [--frame-size BYTES] [--level N] [--threads N] SOURCE PACKED
 *   ufault-pack --unpack PACKED OUT
 *   ufault-pack --verify PACKED
 *
 * Packing streams (SOURCE or PACKED may be "-": stdin, stdout); a PACKED
 * file is written beside itself and renamed into place when complete, so
 * a failed pack never leaves a file that looks packed.  --unpack and
 * --verify read through ufault (uf_pack_open()), which checks every frame:
 * the first damaged frame is an error, never bytes.  --unpack into a
 * regular file leaves its zero chunks as holes.
 *
 * Exit status: 0 done; 1 failed; 2 bad usage.
 */
#define _GNU_SOURCE
#include <ufault.h>
#include <ufault-pack.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#ifndef UF_VERSION
#define UF_VERSION "unknown"
#endif

#define CHUNK		((size_t)4 << 20)
#define CACHE_BUDGET	((uint64_t)64 << 20)
#define EXIT_FAIL	1
#define EXIT_USAGE	2

static void usage(FILE *f)
{
	fprintf(f, "usage: ufault-pack [-q] [--frame-size BYTES] [--level N] [--threads N]\n"
		   "                   SOURCE PACKED\n"
		   "       ufault-pack --unpack PACKED OUT\n"
		   "       ufault-pack --verify PACKED\n"
		   "  pack SOURCE into PACKED (zstd frames and an index; \"-\": stdin/stdout),\n"
		   "  or get the original bytes back from PACKED, checking every frame\n"
		   "  --frame-size BYTES  bytes of the original per frame: a power of two,\n"
		   "                      64K to 16M (default 256K; K and M suffixes)\n"
		   "  --level N           zstd level, 1-19 (default 3)\n"
		   "  --threads N         frames compressed at once, 1-64 (default: the\n"
		   "                      CPUs online, at most 8); the output is the same\n"
		   "  -q, --quiet         no summary line\n"
		   "  --help, --version\n"
		   "exit: 0 done, 1 failed, 2 bad usage\n");
}

static int parse_size(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int do_pack(const char *src, const char *dst, const struct uf_pack_write_opts *o, bool quiet)
{
	struct uf_pack_write_stats st;
	char tmp[4096];
	int in = 0, out = 1, ret;

	if (strcmp(src, "-") && (in = open(src, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "ufault-pack: %s: %s\n", src, strerror(errno));
		return EXIT_FAIL;
	}
	if (strcmp(dst, "-")) {
		snprintf(tmp, sizeof(tmp), "%s.tmp-%d", dst, (int)getpid());
		out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out < 0) {
			fprintf(stderr, "ufault-pack: %s: %s\n", tmp, strerror(errno));
			return EXIT_FAIL;
		}
	}
	ret = uf_pack_write(in, out, o, &st);
	if (!ret && out != 1 && (fsync(out) < 0 || close(out) < 0 || rename(tmp, dst) < 0))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "ufault-pack: %s -> %s: %s\n", src, dst, strerror(-ret));
		if (out != 1)
			unlink(tmp);
		return EXIT_FAIL;
	}
	if (!quiet)
		fprintf(stderr, "ufault-pack: %s: %" PRIu64 " bytes -> %" PRIu64 " (%.1f%%), "
			"%" PRIu64 " frames (%" PRIu64 " all zero), %" PRIu64 " zero pages\n",
			src, st.size, st.packed_size,
			st.size ? 100.0 * (double)st.packed_size / (double)st.size : 0.0,
			st.frames, st.zero_frames, st.zero_pages);
	return 0;
}

static bool all_zero(const char *buf, size_t n)
{
	return !buf[0] && !memcmp(buf, buf + 1, n - 1);
}

static int write_all(int out, const char *buf, size_t n)
{
	for (size_t w = 0; w < n;) {
		ssize_t k = write(out, buf + w, n - w);

		if (k < 0 && errno != EINTR)
			return -errno;
		w += k > 0 ? (size_t)k : 0;
	}
	return 0;
}

/* @n bytes of @buf to @out; into a regular file (@sparse) zero pages are
 * holes, so that a snapshot's free memory takes no disk. */
static int out_write(int out, bool sparse, const char *buf, size_t n)
{
	size_t p = 0, q, pg = UF_PAGE_SIZE;
	int ret = 0;

	if (!sparse)
		return write_all(out, buf, n);
	while (!ret && p < n) {
		bool zero = all_zero(buf + p, pg < n - p ? pg : n - p);

		for (q = p; q < n && all_zero(buf + q, pg < n - q ? pg : n - q) == zero; q += pg)
			;
		q = q < n ? q : n;
		if (zero)
			ret = lseek(out, (off_t)(q - p), SEEK_CUR) < 0 ? -errno : 0;
		else
			ret = write_all(out, buf + p, q - p);
		p = q;
	}
	return ret;
}

/* Read PACKED through ufault into @out (-1: nowhere). */
static int do_unpack(const char *packed, int out)
{
	struct uf_mm_config cfg = { .cache_budget = CACHE_BUDGET };
	struct uf_object *obj = NULL;
	struct uf_mm *mm;
	struct stat sb;
	uint64_t off, size;
	bool sparse;
	char *buf = malloc(CHUNK);
	int ret = buf ? uf_mm_create(&cfg, &mm) : -ENOMEM;

	if (ret) {
		fprintf(stderr, "ufault-pack: uf_mm_create: %s\n", strerror(-ret));
		free(buf);
		return EXIT_FAIL;
	}
	sparse = out >= 0 && fstat(out, &sb) == 0 && S_ISREG(sb.st_mode);
	ret = uf_pack_open(mm, packed, &obj);
	size = ret ? 0 : uf_object_size(obj);
	for (off = 0; !ret && off < size;) {
		ssize_t n = uf_object_pread(obj, buf, CHUNK, off);

		if (n <= 0)
			ret = n ? (int)n : -EIO;
		else if (out >= 0)
			ret = out_write(out, sparse, buf, (size_t)n);
		off += n > 0 ? (uint64_t)n : 0;
	}
	/* a hole at the end is no size */
	if (!ret && sparse && ftruncate(out, (off_t)size) < 0)
		ret = -errno;
	if (ret)
		fprintf(stderr, "ufault-pack: %s: %s%s\n", packed, strerror(-ret),
			ret == -ENOEXEC ? " (not a packed snapshot)" :
			ret == -EIO ? " (damaged)" : "");
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(buf);
	return ret ? EXIT_FAIL : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "frame-size", required_argument, NULL, 'f' },
		{ "level", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "unpack", no_argument, NULL, 'u' },
		{ "verify", no_argument, NULL, 'V' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
		{ 0 },
	};
	struct uf_pack_write_opts o = { 0 };
	bool quiet = false, unpack = false, verify = false;
	int opt, out, ret;

	while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (parse_size(optarg, &o.frame_size) || o.frame_size < (64u << 10) ||
			    o.frame_size > (16u << 20) || (o.frame_size & (o.frame_size - 1)))
				goto bad;
			break;
		case 'l':
			o.level = atoi(optarg);
			if (o.level < 1 || o.level > 19)
				goto bad;
			break;
		case 't':
			o.threads = (unsigned int)atoi(optarg);
			if (o.threads < 1 || o.threads > 64)
				goto bad;
			break;
		case 'u':
			unpack = true;
			break;
		case 'V':
			verify = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("ufault-pack (ufault) %s\n", UF_VERSION);
			return 0;
		default:
			goto bad;
		}
	}
	if (unpack + verify > 1 || argc - optind != (verify ? 1 : 2))
		goto bad;
	if (!o.threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		o.threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned int)cpus;
	}
	if (verify)
		return do_unpack(argv[optind], -1);
	if (!unpack)
		return do_pack(argv[optind], argv[optind + 1], &o, quiet);
	out = strcmp(argv[optind + 1], "-") ?
		open(argv[optind + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
	if (out < 0) {
		fprintf(stderr, "ufault-pack: %s: %s\n", argv[optind + 1], strerror(errno));
		return EXIT_FAIL;
	}
	ret = do_unpack(argv[optind], out);
	if (out != 1 && close(out) < 0 && !ret) {
		fprintf(stderr, "ufault-pack: %s: %s\n", argv[optind + 1], strerror(errno));
		ret = EXIT_FAIL;
	}
	return ret;
bad:
	usage(stderr);
	return EXIT_USAGE;
}
