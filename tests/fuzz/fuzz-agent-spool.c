/*
 * fuzz-agent-spool: the agent's spool reading a segment an earlier run left
 * (slurmd-agent/spool.c: a crash may leave any bytes there). The input is
 * the segment file; the spool opens it (cutting a torn tail), then every
 * frame it gives for sending must fit the uplink's buffer and the walk must
 * end cleanly (never an error: what open kept is whole); a frame appended
 * next is given back as it was, with its seq.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP (FQ_FRAME_MAX_DEFAULT + FQ_FRAME_HEADER_SIZE)

static uint8_t *buf;
static size_t last_len;

/* Every frame waiting: the count, or -1 on an error or an oversized one. */
static int walk(struct fq_spool *s, uint64_t *last)
{
	uint64_t seq;
	int64_t n;
	int count = 0;

	while ((n = fq_spool_next(s, buf, CAP, &seq)) > 0) {
		if ((size_t)n > CAP)
			return -1;
		*last = seq;
		last_len = (size_t)n;
		count++;
	}
	return n < 0 ? -1 : count;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[256];

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/dev/shm/fq-fuzz-spool.XXXXXX", path[128]; /* tmpfs: syncs cost nothing */
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *back = NULL;
	Fabriciq__LinkEvent ev = FABRICIQ__LINK_EVENT__INIT;
	struct fq_spool *s;
	uint64_t last = 0;
	int fd;

	if (!buf && !(buf = malloc(CAP)))
		return 0;
	if (!mkdtemp(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/%020d.seg", dir, 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (fq_spool_open(dir, 1 << 20, &s) == 0) {
		if (walk(s, &last) < 0)
			abort();
		ev.local_nic = "rail0";
		env.version = FQ_PROTOCOL_VERSION;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		env.link = &ev;
		if (fq_spool_append(s, &env) != 0 || walk(s, &last) != 1 || last != env.seq)
			abort();
		/* what was given back is the frame appended */
		if (fq_frame_unpack(buf + FQ_FRAME_HEADER_SIZE, last_len - FQ_FRAME_HEADER_SIZE, &back) < 0 ||
		    back->seq != env.seq || strcmp(back->link->local_nic, "rail0") != 0)
			abort();
		fq_frame_free(back);
		fq_spool_close(s);
	}
	remove_dir(dir);
	return 0;
}
