/* shm_page (common/shm_page.c) against what a local user may plant in the
 * run directory: a symbolic link, a writable file of another user, a hard
 * link, a FIFO. The writer replaces each with a fresh page and never writes
 * through it; a trusted page is reused in place; readers follow no link. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/shm_page.h"
#include "tests/unit/tap.h"

#define SIZE 4096

static char dir[] = "/tmp/fq-shm-test.XXXXXX", page[128], victim[128];

static void make_victim(void)
{
	FILE *f = fopen(victim, "w");

	fputs("victim", f);
	fclose(f);
	chmod(victim, 0644);
}

static int victim_intact(void)
{
	char buf[16] = "";
	FILE *f = fopen(victim, "r");
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	struct stat st;

	fclose(f);
	stat(victim, &st);
	return n == 6 && strcmp(buf, "victim") == 0 && st.st_size == 6;
}

/* page is a regular file of ours, mode 0644, one link */
static int fresh_page(void)
{
	struct stat st;

	return lstat(page, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 07777) == 0644 && st.st_nlink == 1 && st.st_size == SIZE;
}

int main(void)
{
	char why[64];
	void *p;
	const void *r;
	struct stat a, b;

	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");
	snprintf(page, sizeof(page), "%s/clock", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	plan(17);

	is_int(fq_shm_page_untrusted(page, why, sizeof(why)), 0, "nothing at the path: nothing to replace");
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && fresh_page(), "a new page: regular, ours, 0644, sized");
	((char *)p)[0] = 'K';
	munmap(p, SIZE);
	stat(page, &a);
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && stat(page, &b) == 0 && a.st_ino == b.st_ino,
	   "a trusted page is reused in place (readers keep their mapping)");
	is_int(((char *)p)[0], 'K', "... with its contents");
	munmap(p, SIZE);

	/* a symbolic link to a file of root's */
	make_victim();
	unlink(page);
	if (symlink(victim, page) < 0)
		diag("symlink: %s", strerror(errno));
	is_int(fq_shm_page_untrusted(page, why, sizeof(why)), 1, "a symbolic link is not trusted");
	is_str(why, "a symbolic link", "... and said so");
	is_int(fq_shm_page_open(page, SIZE, &r), -ELOOP, "a reader does not follow it");
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && fresh_page(), "the writer replaces it by a fresh page");
	ok(victim_intact(), "... and the link's target is neither truncated nor written");
	munmap(p, SIZE);

	/* a world-writable file of another user (nobody) */
	unlink(page);
	close(open(page, O_CREAT | O_WRONLY, 0666));
	chmod(page, 0666);
	if (geteuid() == 0 && chown(page, 65534, 65534) < 0)
		diag("chown: %s", strerror(errno));
	fq_shm_page_untrusted(page, why, sizeof(why));
	is_str(why, geteuid() == 0 ? "owned by uid 65534" : "mode 0666",
	       "a 0666 file of another user is not trusted, said so");
	stat(page, &a);
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && fresh_page() && stat(page, &b) == 0 &&
	       a.st_ino != b.st_ino,
	   "... and replaced by a fresh page (another inode), ours, 0644");
	munmap(p, SIZE);

	/* a hard link to another file of ours */
	unlink(page);
	if (link(victim, page) < 0)
		diag("link: %s", strerror(errno));
	fq_shm_page_untrusted(page, why, sizeof(why));
	is_str(why, "2 links", "a hard link is not trusted, said so");
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && fresh_page() && victim_intact(),
	   "... replaced; the linked file neither truncated nor written");
	munmap(p, SIZE);

	/* a FIFO: opening it must not block either side */
	unlink(page);
	mkfifo(page, 0666);
	is_int(fq_shm_page_open(page, SIZE, &r), -EPROTO, "a reader refuses a FIFO without blocking");
	fq_shm_page_untrusted(page, why, sizeof(why));
	is_str(why, "not a regular file", "the writer does not trust it");
	ok(fq_shm_page_create(page, SIZE, &p) == 0 && fresh_page(), "... and replaces it without blocking");
	munmap(p, SIZE);
	ok(fq_shm_page_open(page, SIZE, &r) == 0, "a reader maps the fresh page");
	munmap((void *)r, SIZE);

	unlink(page);
	unlink(victim);
	rmdir(dir);
	return done_testing();
}
