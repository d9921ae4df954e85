/*
 * tb-crashfs: a flat FUSE filesystem that behaves like a disk under a page
 * cache, to crash a node's spool (tests/testbed/test-crashfs.sh tests it,
 * tests/testbed/test-node-crash.sh crashes the agent's and the
 * controller's spools on it).
 *
 *   tb-crashfs BACKING MOUNTPOINT
 *
 * Every change (a write, a truncate, a create, a rename, an unlink) is
 * seen at once through the mount, but kept in memory only until it is made
 * durable the way POSIX says: a file's data and size by fsync or fdatasync
 * of that file, a name (create, rename, unlink) by fsync of the directory.
 * A file created and synced whose directory was never synced is not there
 * after a crash; a rename not followed by a directory sync is undone.
 *
 * The durable state is BACKING, a plain directory: one file per durable
 * name, holding the content its file had at its last sync (empty if never
 * synced). It is read at start (flat: regular files only) and rewritten at
 * each sync. SIGUSR1 is the crash: atomically, between two operations,
 * everything not durable is thrown away, the state is read back from
 * BACKING, descriptors opened before it fail with EIO, and one line
 * "tb-crashfs: crash N: ..." goes to stdout. The mount then serves the
 * durable state: the crashed node's processes are killed, the restarted
 * ones see what a rebooted node would. SIGUSR2 stalls every fsync and
 * fsyncdir (a disk that does not answer: they wait, the rest goes on)
 * until the next SIGUSR2, or a crash (they fail with EIO); it logs
 * "tb-crashfs: fsyncs stalled" / "released".
 *
 * Only what a flat spool needs: regular files in the mount's top
 * directory (open, create, read, write, truncate, rename without flags,
 * unlink, fsync, fdatasync, fsyncdir). The rest is refused: mkdir, rmdir,
 * link, symlink, mknod -> EPERM; chmod, chown, utimens, fallocate, xattrs
 * -> EOPNOTSUPP; rename flags -> EINVAL. Reads and writes bypass the
 * kernel's page cache (direct_io), so no page of a crashed state is seen.
 * Requests run on libfuse's threads under one lock, shared with the crash
 * (a stalled sync waits without it). SIGTERM unmounts and exits.
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cfile {
	uint8_t *data; /* what reads see */
	size_t size, cap;
	uint8_t *ddata; /* durable: as of the last fsync */
	size_t dsize;
	bool vname, dname; /* has a name now; has a durable name */
	unsigned opens;
	uint64_t ino;
	struct timespec mtime;
};

struct entry {
	char name[NAME_MAX + 1];
	struct cfile *f;
};

struct dirlist {
	struct entry *e;
	size_t n, cap;
};

struct handle {
	struct cfile *f;
	unsigned gen; /* the crash count when opened */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t unstalled; /* a stall's end or a crash */
	bool stalled;
	char backing[PATH_MAX];
	struct dirlist now, durable; /* the names seen; the names that survive a crash */
	unsigned gen;
	uint64_t next_ino;
	struct timespec dir_mtime;
	uint64_t syncs, dirsyncs;
} fs = {.lock = PTHREAD_MUTEX_INITIALIZER, .unstalled = PTHREAD_COND_INITIALIZER, .next_ino = 2};

static struct entry *dl_find(struct dirlist *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->e[i].name, name) == 0)
			return &d->e[i];
	return NULL;
}

static int dl_add(struct dirlist *d, const char *name, struct cfile *f)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct entry *v = realloc(d->e, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->e = v;
		d->cap = cap;
	}
	snprintf(d->e[d->n].name, sizeof(d->e[d->n].name), "%s", name);
	d->e[d->n++].f = f;
	return 0;
}

static void dl_del(struct dirlist *d, struct entry *e)
{
	*e = d->e[--d->n];
}

static void file_put(struct cfile *f)
{
	if (f->vname || f->dname || f->opens)
		return;
	free(f->data);
	free(f->ddata);
	free(f);
}

static struct cfile *file_new(void)
{
	struct cfile *f = calloc(1, sizeof(*f));

	if (f) {
		f->ino = fs.next_ino++;
		clock_gettime(CLOCK_REALTIME, &f->mtime);
	}
	return f;
}

static int file_resize(struct cfile *f, size_t size)
{
	if (size > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;
		uint8_t *v;

		while (cap < size)
			cap *= 2;
		if (!(v = realloc(f->data, cap)))
			return -ENOMEM;
		f->data = v;
		f->cap = cap;
	}
	if (size > f->size)
		memset(f->data + f->size, 0, size - f->size);
	f->size = size;
	clock_gettime(CLOCK_REALTIME, &f->mtime);
	return 0;
}

/* "/name" of the flat directory: the name, or NULL (the root, a deeper
 * path or a name too long). */
#define BACKING_TMP ".tb-crashfs.tmp" /* the backing's own temporary file */

static const char *leaf(const char *path)
{
	if (!path || path[0] != '/' || !path[1] || strchr(path + 1, '/') || strlen(path + 1) > NAME_MAX ||
	    strcmp(path + 1, BACKING_TMP) == 0)
		return NULL;
	return path + 1;
}

/* BACKING/name: the durable content of f, written whole and renamed over. */
static int backing_write(const char *name, const struct cfile *f)
{
	char path[PATH_MAX + NAME_MAX + 2], tmp[PATH_MAX + 32];
	size_t done = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", fs.backing, name);
	snprintf(tmp, sizeof(tmp), "%s/" BACKING_TMP, fs.backing);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (done < f->dsize) {
		ssize_t w = write(fd, f->ddata + done, f->dsize - done);

		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)w;
	}
	close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		fprintf(stderr, "tb-crashfs: cannot write %s: %s\n", path, strerror(-rc));
	return rc;
}

static int backing_unlink(const char *name)
{
	char path[PATH_MAX + NAME_MAX + 2];

	snprintf(path, sizeof(path), "%s/%s", fs.backing, name);
	if (unlink(path) < 0 && errno != ENOENT) {
		fprintf(stderr, "tb-crashfs: cannot remove %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Read BACKING into a fresh state (at start and at a crash). */
static int backing_load(void)
{
	DIR *d = opendir(fs.backing);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return -errno;
	while (rc == 0 && (de = readdir(d))) {
		char path[PATH_MAX + NAME_MAX + 2];
		struct cfile *f;
		struct stat st;
		int fd;

		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || strcmp(de->d_name, "..") == 0 || strcmp(de->d_name, BACKING_TMP) == 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", fs.backing, de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0 ||
		    !S_ISREG(st.st_mode)) {
			rc = fd < 0 || !S_ISREG(st.st_mode) ? -EINVAL : -errno;
			fprintf(stderr, "tb-crashfs: %s: not a regular file (the backing is flat)\n", path);
		} else if (!(f = file_new()) || file_resize(f, (size_t)st.st_size) < 0 ||
			   pread(fd, f->data, f->size, 0) != (ssize_t)f->size ||
			   !(f->ddata = malloc(f->size + 1))) {
			rc = -EIO;
			fprintf(stderr, "tb-crashfs: cannot read %s\n", path);
		} else {
			memcpy(f->ddata, f->data, f->size);
			f->dsize = f->size;
			f->vname = f->dname = true;
			if ((rc = dl_add(&fs.now, de->d_name, f)) == 0)
				rc = dl_add(&fs.durable, de->d_name, f);
		}
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return rc;
}

/* The crash: everything not durable goes; open descriptors go stale. */
static void crash(void)
{
	size_t files = fs.now.n, lost = 0;

	for (size_t i = 0; i < fs.now.n; i++)
		if (!dl_find(&fs.durable, fs.now.e[i].name) ||
		    dl_find(&fs.durable, fs.now.e[i].name)->f != fs.now.e[i].f)
			lost++;
	for (size_t i = 0; i < fs.now.n; i++)
		fs.now.e[i].f->vname = false;
	for (size_t i = 0; i < fs.durable.n; i++)
		fs.durable.e[i].f->dname = false;
	/* a file with both names is put once, through its current one */
	for (size_t i = 0; i < fs.durable.n; i++) {
		bool named = false;

		for (size_t j = 0; j < fs.now.n && !named; j++)
			named = fs.now.e[j].f == fs.durable.e[i].f;
		if (!named)
			file_put(fs.durable.e[i].f);
	}
	for (size_t i = 0; i < fs.now.n; i++)
		file_put(fs.now.e[i].f);
	fs.now.n = fs.durable.n = 0;
	fs.gen++;
	pthread_cond_broadcast(&fs.unstalled);
	clock_gettime(CLOCK_REALTIME, &fs.dir_mtime);
	if (backing_load() < 0) {
		fprintf(stderr, "tb-crashfs: cannot read the backing %s back: exiting\n", fs.backing);
		exit(1);
	}
	printf("tb-crashfs: crash %u: %zu name(s) seen, %zu not durable; %zu file(s) kept; %" PRIu64
	       " fsync(s), %" PRIu64 " fsyncdir(s) before\n",
	       fs.gen, files, lost, fs.now.n, fs.syncs, fs.dirsyncs);
	fflush(stdout);
}

static void *crash_thread(void *arg)
{
	sigset_t *set = arg;
	int sig;

	for (;;) {
		if (sigwait(set, &sig) != 0)
			continue;
		pthread_mutex_lock(&fs.lock);
		if (sig == SIGUSR1) {
			crash();
		} else {
			fs.stalled = !fs.stalled;
			pthread_cond_broadcast(&fs.unstalled);
			printf("tb-crashfs: fsyncs %s\n", fs.stalled ? "stalled" : "released");
			fflush(stdout);
		}
		pthread_mutex_unlock(&fs.lock);
	}
	return NULL;
}

/* The file of an open descriptor (NULL: opened before a crash) or of a
 * path. */
static struct cfile *file_of(const char *path, struct fuse_file_info *fi, int *err)
{
	struct entry *e;
	const char *name;

	if (fi && fi->fh) {
		struct handle *h = (struct handle *)(uintptr_t)fi->fh;

		*err = h->gen == fs.gen ? 0 : -EIO;
		return *err ? NULL : h->f;
	}
	name = leaf(path);
	e = name ? dl_find(&fs.now, name) : NULL;
	*err = e ? 0 : -ENOENT;
	return e ? e->f : NULL;
}

static void fill_stat(struct stat *st, const struct cfile *f)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = f->ino;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = f->vname;
	st->st_size = (off_t)f->size;
	st->st_blocks = (blkcnt_t)((f->size + 511) / 512);
	st->st_blksize = 4096;
	st->st_mtim = st->st_ctim = st->st_atim = f->mtime;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct cfile *f;
	int rc;

	pthread_mutex_lock(&fs.lock);
	if ((path && strcmp(path, "/") == 0) || (!path && !(fi && fi->fh))) {
		memset(st, 0, sizeof(*st));
		st->st_ino = 1;
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
		st->st_mtim = st->st_ctim = st->st_atim = fs.dir_mtime;
		rc = 0;
	} else if ((f = file_of(path, fi, &rc)))
		fill_stat(st, f);
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)path, (void)off, (void)fi, (void)flags; /* the one directory (path NULL: nullpath_ok) */
	pthread_mutex_lock(&fs.lock);
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (size_t i = 0; i < fs.now.n; i++) {
		struct stat st;

		fill_stat(&st, fs.now.e[i].f);
		if (fill(buf, fs.now.e[i].name, &st, 0, 0))
			break;
	}
	pthread_mutex_unlock(&fs.lock);
	return 0;
}

static int handle_new(struct cfile *f, struct fuse_file_info *fi)
{
	struct handle *h = malloc(sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->f = f;
	h->gen = fs.gen;
	f->opens++;
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct cfile *f;
	int rc;

	pthread_mutex_lock(&fs.lock);
	if ((f = file_of(path, NULL, &rc)) && (fi->flags & O_TRUNC))
		rc = file_resize(f, 0);
	if (f && rc == 0)
		rc = handle_new(f, fi);
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	const char *name = leaf(path);
	struct cfile *f;
	int rc;

	(void)mode;
	if (!name)
		return -EPERM;
	pthread_mutex_lock(&fs.lock);
	if (dl_find(&fs.now, name)) {
		rc = (fi->flags & O_EXCL) ? -EEXIST : 0;
		pthread_mutex_unlock(&fs.lock);
		return rc ? rc : op_open(path, fi);
	}
	if (!(f = file_new()))
		rc = -ENOMEM;
	else if ((rc = dl_add(&fs.now, name, f)) == 0) {
		f->vname = true;
		clock_gettime(CLOCK_REALTIME, &fs.dir_mtime);
		rc = handle_new(f, fi);
	} else
		free(f);
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	(void)path;
	pthread_mutex_lock(&fs.lock);
	h->f->opens--;
	file_put(h->f);
	free(h);
	pthread_mutex_unlock(&fs.lock);
	return 0;
}

static int op_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	struct cfile *f;
	int rc;

	pthread_mutex_lock(&fs.lock);
	if ((f = file_of(path, fi, &rc))) {
		size_t n = (size_t)off < f->size ? f->size - (size_t)off : 0;

		if (n > len)
			n = len;
		if (n)
			memcpy(buf, f->data + off, n);
		rc = (int)n;
	}
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_write(const char *path, const char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	struct cfile *f;
	int rc;

	pthread_mutex_lock(&fs.lock);
	if ((f = file_of(path, fi, &rc))) {
		if (fi && (fi->flags & O_APPEND))
			off = (off_t)f->size;
		if ((size_t)off + len > f->size)
			rc = file_resize(f, (size_t)off + len);
		if (rc == 0) {
			memcpy(f->data + off, buf, len);
			clock_gettime(CLOCK_REALTIME, &f->mtime);
			rc = (int)len;
		}
	}
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct cfile *f;
	int rc;

	if (size < 0)
		return -EINVAL;
	pthread_mutex_lock(&fs.lock);
	if ((f = file_of(path, fi, &rc)))
		rc = file_resize(f, (size_t)size);
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

/* Under the lock: wait out a stall; -EIO if a crash came meanwhile. */
static int stall_wait(void)
{
	unsigned gen = fs.gen;

	while (fs.stalled && fs.gen == gen)
		pthread_cond_wait(&fs.unstalled, &fs.lock);
	return fs.gen == gen ? 0 : -EIO;
}

/* fsync and fdatasync alike: the file's data and size become durable, and
 * so does the backing file of each durable name it has. */
static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct cfile *f;
	uint8_t *v;
	int rc;

	(void)datasync;
	pthread_mutex_lock(&fs.lock);
	if ((rc = stall_wait()) == 0 && (f = file_of(path, fi, &rc))) {
		if (!(v = realloc(f->ddata, f->size + 1))) {
			rc = -ENOMEM;
			goto out;
		}
		f->ddata = v;
		if (f->size)
			memcpy(f->ddata, f->data, f->size);
		f->dsize = f->size;
		fs.syncs++;
		for (size_t i = 0; i < fs.durable.n && rc == 0; i++)
			if (fs.durable.e[i].f == f)
				rc = backing_write(fs.durable.e[i].name, f);
	}
out:
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

/* fsync of the directory: the names as they are now become durable (each
 * with its file's durable content, empty if it was never synced). */
static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	int rc = 0;

	(void)path, (void)datasync, (void)fi; /* the one directory */
	pthread_mutex_lock(&fs.lock);
	if ((rc = stall_wait()) < 0)
		goto out;
	for (size_t i = 0; i < fs.durable.n;) {
		struct entry *d = &fs.durable.e[i], *e = dl_find(&fs.now, d->name);

		if (e && e->f == d->f) {
			i++;
			continue;
		}
		if ((rc = backing_unlink(d->name)) < 0)
			goto out;
		d->f->dname = false;
		file_put(d->f);
		dl_del(&fs.durable, d);
	}
	for (size_t i = 0; i < fs.now.n; i++) {
		struct entry *e = &fs.now.e[i];

		if (dl_find(&fs.durable, e->name))
			continue;
		if ((rc = backing_write(e->name, e->f)) < 0 || (rc = dl_add(&fs.durable, e->name, e->f)) < 0)
			goto out;
		e->f->dname = true;
	}
	fs.dirsyncs++;
out:
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_unlink(const char *path)
{
	const char *name = leaf(path);
	struct entry *e;
	int rc = -ENOENT;

	pthread_mutex_lock(&fs.lock);
	if (name && (e = dl_find(&fs.now, name))) {
		struct cfile *f = e->f;

		dl_del(&fs.now, e);
		f->vname = false;
		file_put(f);
		clock_gettime(CLOCK_REALTIME, &fs.dir_mtime);
		rc = 0;
	}
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	const char *a = leaf(from), *b = leaf(to);
	struct entry *e, *t;
	int rc = 0;

	if (flags)
		return -EINVAL;
	if (!a || !b)
		return -EPERM;
	pthread_mutex_lock(&fs.lock);
	if (!(e = dl_find(&fs.now, a))) {
		rc = -ENOENT;
		goto out;
	}
	if (strcmp(a, b) == 0)
		goto out;
	if ((t = dl_find(&fs.now, b))) {
		struct cfile *old = t->f;

		t->f = e->f;
		dl_del(&fs.now, e);
		old->vname = false;
		file_put(old);
	} else
		snprintf(e->name, sizeof(e->name), "%s", b);
	clock_gettime(CLOCK_REALTIME, &fs.dir_mtime);
out:
	pthread_mutex_unlock(&fs.lock);
	return rc;
}

static int op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	memset(st, 0, sizeof(*st));
	st->f_bsize = st->f_frsize = 4096;
	st->f_blocks = st->f_bfree = st->f_bavail = 1u << 20;
	st->f_files = st->f_ffree = 1u << 16;
	st->f_namemax = NAME_MAX;
	return 0;
}

static int op_eperm_mode(const char *path, mode_t mode)
{
	(void)path, (void)mode;
	return -EPERM;
}

static int op_eperm_path(const char *path)
{
	(void)path;
	return -EPERM;
}

static int op_eperm_2(const char *a, const char *b)
{
	(void)a, (void)b;
	return -EPERM;
}

static int op_mknod(const char *path, mode_t mode, dev_t dev)
{
	(void)path, (void)mode, (void)dev;
	return -EPERM;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)path, (void)mode, (void)fi;
	return -EOPNOTSUPP;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)path, (void)uid, (void)gid, (void)fi;
	return -EOPNOTSUPP;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)path, (void)tv, (void)fi;
	return -EOPNOTSUPP;
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)path, (void)mode, (void)off, (void)len, (void)fi;
	return -EOPNOTSUPP;
}

static int op_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
	(void)path, (void)name, (void)value, (void)size, (void)flags;
	return -EOPNOTSUPP;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* nothing cached in the kernel: after a crash every lookup, attribute
	 * and read comes here */
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	cfg->use_ino = 1;
	cfg->hard_remove = 1; /* an unlinked open file is gone, not renamed .fuse_hidden* */
	cfg->nullpath_ok = 1;
	return NULL;
}

static const struct fuse_operations ops = {
    .init = op_init,
    .getattr = op_getattr,
    .readdir = op_readdir,
    .open = op_open,
    .create = op_create,
    .release = op_release,
    .read = op_read,
    .write = op_write,
    .truncate = op_truncate,
    .fsync = op_fsync,
    .fsyncdir = op_fsyncdir,
    .unlink = op_unlink,
    .rename = op_rename,
    .statfs = op_statfs,
    .mkdir = op_eperm_mode,
    .rmdir = op_eperm_path,
    .symlink = op_eperm_2,
    .link = op_eperm_2,
    .mknod = op_mknod,
    .chmod = op_chmod,
    .chown = op_chown,
    .utimens = op_utimens,
    .fallocate = op_fallocate,
    .setxattr = op_setxattr,
};

int main(int argc, char **argv)
{
	char *fargv[] = {argv[0], "-o", "fsname=tb-crashfs,subtype=tb-crashfs", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse *fuse;
	sigset_t set, all, mask;
	pthread_t th;
	bool started;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: tb-crashfs BACKING MOUNTPOINT (SIGUSR1: crash; SIGUSR2: stall syncs "
				"or release them; SIGTERM: unmount)\n");
		return 2;
	}
	if (!realpath(argv[1], fs.backing)) {
		fprintf(stderr, "tb-crashfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &fs.dir_mtime);
	if ((rc = backing_load()) < 0) {
		fprintf(stderr, "tb-crashfs: cannot load %s: %s\n", fs.backing, strerror(-rc));
		return 1;
	}
	/* SIGUSR1 and SIGUSR2 are taken by the crash thread alone */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!(fuse = fuse_new(&args, &ops, sizeof(ops), NULL)))
		return 1;
	if (fuse_mount(fuse, argv[2]) != 0) {
		fuse_destroy(fuse);
		return 1;
	}
	/* the crash thread takes no other signal: SIGTERM must interrupt the loop */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &mask);
	started = pthread_create(&th, NULL, crash_thread, &set) == 0;
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (!started || fuse_set_signal_handlers(fuse_get_session(fuse)) != 0) {
		fuse_unmount(fuse);
		fuse_destroy(fuse);
		return 1;
	}
	printf("tb-crashfs: %s on %s, %zu file(s)\n", fs.backing, argv[2], fs.now.n);
	fflush(stdout);
	rc = fuse_loop_mt(fuse, 0);
	fuse_remove_signal_handlers(fuse_get_session(fuse));
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return rc < 0 ? 1 : 0; /* rc > 0: the signal that ended the loop */
}
