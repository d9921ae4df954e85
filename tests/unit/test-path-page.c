/* path_page (common/path_page.c): the agent's publication as a job's
 * plugin reads it, paths and the controller's rates (version 3). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/path_page.h"
#include "tests/unit/tap.h"

int main(void)
{
	char dir[] = "/tmp/fq-path-page.XXXXXX", path[160];
	struct fq_path_page_writer *w = NULL;
	struct fq_path_page_reader *r = NULL;
	struct fq_path_entry e[2], got;
	struct fq_path_rate rates[2], rate;
	int64_t now = 7000000000LL;
	FILE *f;

	plan(9);
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/paths", dir);
	memset(e, 0, sizeof(e));
	strcpy(e[0].local_nic, "rail0");
	strcpy(e[0].remote_node, "n4");
	strcpy(e[0].remote_nic, "rail0");
	e[0].remote_ipv4 = htonl(0xc6130009);
	e[0].state = FQ_PATH_STATE_UP;
	e[1] = e[0];
	strcpy(e[1].remote_node, "n3");
	e[1].remote_ipv4 = htonl(0xc6130007);
	memset(rates, 0, sizeof(rates));
	strcpy(rates[0].local_nic, "rail0");
	rates[0].remote_ipv4 = e[0].remote_ipv4;
	rates[0].job = 77;
	rates[0].rate = 2500000;
	rates[0].until_ns = now + 10000000000LL;
	rates[0].gen = 3;
	is_int(fq_path_page_writer_open(path, &w), 0, "writer opens the page");
	fq_path_page_publish(w, e, 2, rates, 1, now);
	is_int(fq_path_page_reader_open(path, &r), 0, "reader maps it (version %u)", FQ_PATH_PAGE_VERSION);
	ok(r && fq_path_page_lookup(r, "rail0", e[1].remote_ipv4, &got) == 0 &&
	       !strcmp(got.remote_node, "n3"),
	   "a path found by address");
	ok(r && fq_path_page_rate(r, "rail0", e[0].remote_ipv4, 77, now, &rate) == 0 &&
	       rate.rate == 2500000 && rate.gen == 3,
	   "job 77's rate to n4: 2.5 MB/s, generation 3");
	is_int(r ? fq_path_page_rate(r, "rail0", e[0].remote_ipv4, 78, now, &rate) : 0, -ENOENT,
	       "another job: none");
	is_int(r ? fq_path_page_rate(r, "rail0", e[1].remote_ipv4, 77, now, &rate) : 0, -ENOENT,
	       "another path: none");
	is_int(r ? fq_path_page_rate(r, "rail0", e[0].remote_ipv4, 77, now + 10000000000LL, &rate) : 0,
	       -ENOENT, "lapsed: none");
	fq_path_page_publish(w, e, 2, NULL, 0, now + 1);
	is_int(r ? fq_path_page_rate(r, "rail0", e[0].remote_ipv4, 77, now, &rate) : 0, -ENOENT,
	       "published without it: lifted");
	fq_path_page_reader_close(r);
	r = NULL;
	/* a page of the version before (2: no rates, a smaller file) */
	snprintf(path, sizeof(path), "%s/old", dir);
	f = fopen(path, "w");
	if (f) {
		uint32_t head[2] = {FQ_PATH_PAGE_MAGIC, 2};
		fwrite(head, sizeof(head), 1, f);
		ftruncate(fileno(f), 64 + FQ_PATH_PAGE_MAX * 128);
		fclose(f);
	}
	ok(fq_path_page_reader_open(path, &r) < 0, "a version 2 page is refused");
	fq_path_page_writer_close(w);
	unlink(path);
	snprintf(path, sizeof(path), "%s/paths", dir);
	unlink(path);
	rmdir(dir);
	return done_testing();
}
