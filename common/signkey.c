/* signkey: Ed25519 keys binding a name to a host (signkey.h). */
#include "common/signkey.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_PREFIX "ed25519-secret:"
#define MESSAGE_MAX   4096

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int ready(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

/* base64 of len bytes into out (0, or -EINVAL for garbage or another length). */
static int unbase64(const char *text, size_t textlen, uint8_t *out, size_t len)
{
	size_t got = 0;
	const char *end = NULL;

	if (sodium_base642bin(out, len, text, textlen, "\n", &got, &end, sodium_base64_VARIANT_ORIGINAL) !=
		0 ||
	    got != len || (end && *end && *end != '\n'))
		return -EINVAL;
	return 0;
}

static int keypair(const uint8_t seed[crypto_sign_SEEDBYTES], struct fq_signkey *k)
{
	return crypto_sign_seed_keypair(k->public, k->secret, seed) == 0 ? 0 : -EIO;
}

int fq_signkey_create(const char *path, struct fq_signkey *k, char *err, size_t errlen)
{
	uint8_t seed[crypto_sign_SEEDBYTES];
	char b64[sodium_base64_ENCODED_LEN(crypto_sign_SEEDBYTES, sodium_base64_VARIANT_ORIGINAL)];
	char line[sizeof(SECRET_PREFIX) + sizeof(b64) + 1];
	int fd, n, rc;

	if (ready() < 0)
		return seterr(err, errlen, -EIO, "libsodium cannot start");
	randombytes_buf(seed, sizeof(seed));
	if (keypair(seed, k) < 0) {
		sodium_memzero(seed, sizeof(seed));
		return seterr(err, errlen, -EIO, "cannot derive a key pair");
	}
	sodium_bin2base64(b64, sizeof(b64), seed, sizeof(seed), sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(seed, sizeof(seed));
	n = snprintf(line, sizeof(line), "%s%s\n", SECRET_PREFIX, b64);
	sodium_memzero(b64, sizeof(b64));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		sodium_memzero(line, sizeof(line));
		return seterr(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	rc = write(fd, line, (size_t)n) == n && fsync(fd) == 0 ? 0 : -errno;
	sodium_memzero(line, sizeof(line));
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc < 0) {
		unlink(path);
		return seterr(err, errlen, rc, "%s: cannot write: %s", path, strerror(-rc));
	}
	return 0;
}

int fq_signkey_new(const char *path, char *text, size_t len, char *err, size_t errlen)
{
	struct fq_signkey k;
	int rc = fq_signkey_create(path, &k, err, errlen);

	if (rc == 0)
		fq_signkey_public_text(k.public, text, len);
	sodium_memzero(&k, sizeof(k));
	return rc;
}

int fq_signkey_load(const char *path, struct fq_signkey *k, char *err, size_t errlen)
{
	uint8_t seed[crypto_sign_SEEDBYTES];
	char line[256];
	struct stat st;
	ssize_t n;
	int fd, rc;

	if (ready() < 0)
		return seterr(err, errlen, -EIO, "libsodium cannot start");
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		return seterr(err, errlen, rc, "%s: %s", path,
			      rc == -ELOOP ? "a symbolic link (a key is read from a file of its own)"
					   : strerror(-rc));
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return seterr(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return seterr(err, errlen, -EPERM,
			      "%s: %s (a secret key must be a regular file of uid %u, mode 0600 or 0400)",
			      path,
			      !S_ISREG(st.st_mode)     ? "not a regular file"
			      : st.st_uid != geteuid() ? "owned by another uid"
						       : "readable or writable by group or others",
			      (unsigned)geteuid());
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 0)
		return seterr(err, errlen, -errno, "%s: %s", path, strerror(errno));
	line[n] = '\0';
	rc = strncmp(line, SECRET_PREFIX, strlen(SECRET_PREFIX))
		 ? -EINVAL
		 : unbase64(line + strlen(SECRET_PREFIX), (size_t)n - strlen(SECRET_PREFIX), seed,
			    sizeof(seed));
	sodium_memzero(line, sizeof(line));
	if (rc == 0)
		rc = keypair(seed, k);
	sodium_memzero(seed, sizeof(seed));
	if (rc < 0)
		return seterr(err, errlen, rc, "%s: not a fabriciq secret key (one line \"%sBASE64\")", path,
			      SECRET_PREFIX);
	return 0;
}

void fq_signkey_public_text(const uint8_t public[FQ_SIGN_PUBLIC_SIZE], char *out, size_t len)
{
	char b64[sodium_base64_ENCODED_LEN(FQ_SIGN_PUBLIC_SIZE, sodium_base64_VARIANT_ORIGINAL)];

	sodium_bin2base64(b64, sizeof(b64), public, FQ_SIGN_PUBLIC_SIZE, sodium_base64_VARIANT_ORIGINAL);
	snprintf(out, len, "%s%s", FQ_SIGN_PUBLIC_PREFIX, b64);
}

bool fq_signkey_is_public_text(const char *text)
{
	return text && !strncmp(text, FQ_SIGN_PUBLIC_PREFIX, strlen(FQ_SIGN_PUBLIC_PREFIX));
}

int fq_signkey_public_parse(const char *text, uint8_t public[FQ_SIGN_PUBLIC_SIZE])
{
	if (!fq_signkey_is_public_text(text) || ready() < 0)
		return -EINVAL;
	text += strlen(FQ_SIGN_PUBLIC_PREFIX);
	return unbase64(text, strlen(text), public, FQ_SIGN_PUBLIC_SIZE);
}

/* The signed message: domain with its NUL, then each part as a 4-byte
 * big-endian length and its bytes. Its length, or -EMSGSIZE. */
static int message(uint8_t *m, const char *domain, const struct fq_sign_part *parts, size_t nparts)
{
	size_t n = strlen(domain) + 1;

	if (n > MESSAGE_MAX)
		return -EMSGSIZE;
	memcpy(m, domain, n);
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].len > MESSAGE_MAX || n + 4 + parts[i].len > MESSAGE_MAX)
			return -EMSGSIZE;
		m[n++] = (uint8_t)(parts[i].len >> 24);
		m[n++] = (uint8_t)(parts[i].len >> 16);
		m[n++] = (uint8_t)(parts[i].len >> 8);
		m[n++] = (uint8_t)parts[i].len;
		if (parts[i].len)
			memcpy(m + n, parts[i].data, parts[i].len);
		n += parts[i].len;
	}
	return (int)n;
}

int fq_sign(const struct fq_signkey *k, const char *domain, const struct fq_sign_part *parts, size_t nparts,
	    uint8_t sig[FQ_SIGN_SIZE])
{
	uint8_t m[MESSAGE_MAX];
	int n = message(m, domain, parts, nparts);

	if (n < 0)
		return n;
	if (ready() < 0 || crypto_sign_detached(sig, NULL, m, (unsigned long long)n, k->secret) != 0)
		return -EIO;
	return 0;
}

bool fq_sign_verify(const uint8_t public[FQ_SIGN_PUBLIC_SIZE], const char *domain,
		    const struct fq_sign_part *parts, size_t nparts, const uint8_t *sig, size_t siglen)
{
	uint8_t m[MESSAGE_MAX];
	int n = message(m, domain, parts, nparts);

	return n >= 0 && siglen == FQ_SIGN_SIZE && sig && ready() == 0 &&
	       crypto_sign_verify_detached(sig, m, (unsigned long long)n, public) == 0;
}
