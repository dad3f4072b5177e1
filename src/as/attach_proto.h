/* SPDX-License-Identifier: MIT */
/*
 * The protocol of ufault clients (attach.c, attach_map.c) and their
 * server (attach_srv.c): the wire format, below, and the message helpers
 * both ends use (attach_wire.c).  The protocol lives in this header and
 * attach_wire.c only.
 *
 * Wire format, version 1 (one host: native byte order, fixed sizes).
 *
 *   client -> server, hello, 16 bytes:
 *	0  "UFATTACH"		magic; its first byte, 'U', is never the
 *				first of Firecracker's JSON handshake ('['
 *				or white space): uf_object_serve_client()
 *				peeks at it, and ufault-serve passes any
 *				other connection to its JSON parser
 *	8  u8 version		1
 *	9  u8 pad[3]
 *	12 u32 oflags		O_RDONLY or O_RDWR
 *   server -> client, answer, 24 bytes, with the memfd as SCM_RIGHTS
 *   when status is 0 (read-only for an O_RDONLY client; O_PATH for one
 *   served by copy, ATT_COPY):
 *	0  "UFSERVED"
 *	8  u8 version		the server's
 *	9  u8 pad[3]
 *	12 s32 status		0, or -errno: -EACCES (the peer's uid is not
 *				allowed: sent at once, before the hello is
 *				read), -EROFS (O_RDWR, the object read-only),
 *				-EPROTONOSUPPORT (another version)
 *	16 u32 flags		ATT_READONLY: the object is read-only;
 *				ATT_COPY: served by copy (below)
 *	20 u32 pad
 *   then requests, client -> server, each answered before the next:
 *	0  u32 op, u32 pad, u64 a, b, c, d	(40 bytes)
 *	ATT_UFFD	the client's userfaultfd as SCM_RIGHTS (once; first,
 *			but for the ATT_MAPs of a client resuming, which
 *			the address space then starts with)
 *	ATT_MAP		a start, b length, c first page, d prot | ATT_SHARED
 *			(-ENOMEM past ATT_MAX_MAPS, 4096, in the client's table)
 *	ATT_UNMAP	a start, b length
 *	ATT_PROTECT	a start, b length, c prot
 *	ATT_PREAD	a offset, b length (at most ATT_MAX_IO)
 *	ATT_PWRITE	a offset, b length (at most ATT_MAX_IO), then the bytes
 *	ATT_TRUNCATE	a size
 *	ATT_PUNCH	a offset, b length
 *	ATT_SYNC	-
 *   an O_RDONLY client's ATT_PWRITE, ATT_TRUNCATE, ATT_PUNCH and ATT_SYNC
 *   are refused with -EROFS (its cache fd is read-only, and its inode's
 *   mode, object.c, keeps it so through /proc/self/fd);
 *   answer, server -> client: s64 ret (0, bytes, or -errno), u64 pad;
 *   after ATT_PREAD's, ret bytes.  An op the server does not know is
 *   answered -EOPNOTSUPP; a request it cannot read (ATT_PREAD or
 *   ATT_PWRITE past ATT_MAX_IO, a stream cut short) ends the connection.
 */
#ifndef UF_AS_ATTACH_PROTO_H
#define UF_AS_ATTACH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define ATT_VERSION	1
#define ATT_MAGIC	"UFATTACH"
#define ATT_MAGIC_SRV	"UFSERVED"
#define ATT_MAGIC_LEN	8
#define ATT_READONLY	0x1
#define ATT_COPY	0x2
#define ATT_SHARED	0x100
#define ATT_MAX_IO	(1U << 20)
/* how long a client waits for the server's answer to its hello */
#define ATT_HELLO_TIMEOUT_S	10

enum att_op {
	ATT_UFFD = 1, ATT_MAP, ATT_UNMAP, ATT_PROTECT, ATT_PREAD, ATT_PWRITE,
	ATT_TRUNCATE, ATT_PUNCH, ATT_SYNC,
};

struct att_hello {
	char magic[ATT_MAGIC_LEN];
	uint8_t version, pad[3];
	uint32_t oflags;
};

struct att_answer {
	char magic[ATT_MAGIC_LEN];
	uint8_t version, pad[3];
	int32_t status;
	uint32_t flags, pad2;
};

struct att_req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct att_rep {
	int64_t ret;
	uint64_t pad;
};

_Static_assert(sizeof(struct att_hello) == 16, "hello: 16 bytes");
_Static_assert(sizeof(struct att_answer) == 24, "answer: 24 bytes");
_Static_assert(sizeof(struct att_req) == 40, "request: 40 bytes");
_Static_assert(sizeof(struct att_rep) == 16, "reply: 16 bytes");

/* attach_wire.c: both ends */
int read_full(int fd, void *buf, size_t len);
int write_full(int fd, const void *buf, size_t len);
int send_fd(int sock, const void *buf, size_t len, int pass);
int recv_fd(int sock, void *buf, size_t len, int *fdp);

#endif /* UF_AS_ATTACH_PROTO_H */
