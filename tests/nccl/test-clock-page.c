/* test-clock-page: the seqlock under a concurrent writer, staleness,
 * bad pages, and the model's arithmetic. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/clock_page.h"
#include "tests/unit/tap.h"

static volatile int stop;
static struct fq_clock_page_writer *writer;

/* Every published model keeps offset == -drift == error == ref: a torn
 * read would break the relation. */
static void *write_loop(void *arg)
{
	(void)arg;
	for (int64_t i = 1; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		struct fq_clock_model m = {.clock_id = CLOCK_MONOTONIC_RAW,
					   .ref_local_ns = i,
					   .offset_ns = i,
					   .drift_ppb = -i,
					   .error_bound_ns = i,
					   .valid_until_ns = INT64_MAX};
		fq_clock_page_publish(writer, &m);
	}
	return NULL;
}

int main(void)
{
	char path[] = "/tmp/nccl-plugin-clock-page-XXXXXX";
	struct fq_clock_page_reader *r;
	struct fq_clock_model m;
	pthread_t t;
	int fd = mkstemp(path), torn = 0, reads = 0, busy = 0;

	ok(fd >= 0, "temp file");
	close(fd);
	unlink(path);
	is_int(fq_clock_page_reader_open(path, &r), -ENOENT, "no page: -ENOENT (plugin runs unsynchronised)");
	ok(fq_clock_page_writer_open(path, &writer) == 0, "writer creates the page");
	ok(fq_clock_page_reader_open(path, &r) == 0, "reader maps it");
	is_int(fq_clock_page_read(r, 0, &m), -EAGAIN, "never published: reader gets -EAGAIN, not zeros");

	pthread_create(&t, NULL, write_loop, NULL);
	for (time_t end = time(NULL) + 1; time(NULL) <= end;) {
		int rc = fq_clock_page_read(r, 0, &m);

		if (rc == -EAGAIN) {
			busy++;
			continue;
		}
		reads++;
		if (rc != 0 || m.offset_ns != m.ref_local_ns || m.drift_ppb != -m.ref_local_ns ||
		    m.error_bound_ns != m.ref_local_ns)
			torn++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	ok(reads > 1000, "%d consistent reads against a writer spinning on another thread (%d gave up)",
	   reads, busy);
	is_int(torn, 0, "no torn snapshot");

	struct fq_clock_model pub = {.clock_id = CLOCK_MONOTONIC_RAW,
				     .ref_local_ns = 1000000000,
				     .offset_ns = 500,
				     .drift_ppb = 2000,
				     .error_bound_ns = 40,
				     .valid_until_ns = 5000000000};
	fq_clock_page_publish(writer, &pub);
	ok(fq_clock_page_read(r, 4000000000, &m) == 0 && m.error_bound_ns == 40, "fresh model reads back");
	is_int(fq_clock_page_read(r, 6000000000, &m), -ESTALE, "past valid_until: -ESTALE");
	is_int(fq_clock_model_global(&pub, 3000000000), 3000000000 + 500 + 4000,
	       "global = t + offset + drift * (t - ref) (2 s at 2000 ppb = 4 us)");
	is_int(fq_clock_model_global(&(struct fq_clock_model){.drift_ppb = 1000000, .ref_local_ns = 0},
				     INT64_C(9000000000000000000)),
	       INT64_C(9000000000000000000) + INT64_C(9000000000000000), "no overflow over a long span");
	fq_clock_page_reader_close(r);
	fq_clock_page_writer_close(writer);

	fd = open(path, O_WRONLY | O_TRUNC);
	ok(fd >= 0 && write(fd, "junk", 4) == 4, "corrupt the page");
	close(fd);
	is_int(fq_clock_page_reader_open(path, &r), -EPROTO, "short page: -EPROTO");
	unlink(path);
	return done_testing();
}
