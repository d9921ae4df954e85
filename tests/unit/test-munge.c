/*
 * common/munge_cred against a real, private munged (started by
 * tests/unit/with-munged.sh, which passes its socket in FQ_TEST_MUNGE_SOCKET).
 */
#include "common/munge_cred.h"

#include <errno.h>
#include <unistd.h>

#include "tests/unit/tap.h"

int main(void)
{
	const char *sock = getenv("FQ_TEST_MUNGE_SOCKET");
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE], other[FQ_MUNGE_NONCE_SIZE];
	char err[256], *cred = NULL, *cred2 = NULL;
	uid_t uid;
	gid_t gid;

	if (!sock)
		skip_all(
		    "no private munged (FQ_TEST_MUNGE_SOCKET unset; run through tests/unit/with-munged.sh)");

	is_int(fq_munge_nonce(nonce), 0, "nonce");
	is_int(fq_munge_nonce(other), 0, "second nonce");
	ok(memcmp(nonce, other, sizeof(nonce)) != 0, "nonces differ");

	is_int(fq_munge_encode(sock, nonce, sizeof(nonce), 0, &cred, err, sizeof(err)), 0,
	       "mint a credential");
	is_int(fq_munge_decode(sock, cred, nonce, sizeof(nonce), getuid(), &uid, &gid, err, sizeof(err)), 0,
	       "decode: right uid, right payload");
	ok(uid == getuid() && gid == getgid(), "uid/gid of the minter");
	is_int(fq_munge_decode(sock, cred, nonce, sizeof(nonce), getuid(), NULL, NULL, err, sizeof(err)),
	       -EKEYREVOKED, "the same credential again: replayed");
	like(err, "Replayed", "... said in words");

	is_int(fq_munge_encode(sock, nonce, sizeof(nonce), 0, &cred2, err, sizeof(err)), 0, "mint another");
	is_int(fq_munge_decode(sock, cred2, other, sizeof(other), getuid(), NULL, NULL, err, sizeof(err)),
	       -EBADMSG, "bound to another connection's nonce: refused");
	free(cred2);
	cred2 = NULL;

	fq_munge_encode(sock, nonce, sizeof(nonce), 0, &cred2, err, sizeof(err));
	is_int(fq_munge_decode(sock, cred2, nonce, sizeof(nonce), getuid() + 1, NULL, NULL, err, sizeof(err)),
	       -EPERM, "wrong uid: refused");
	like(err, "expected uid", "... naming the expected uid");
	free(cred2);
	cred2 = NULL;

	/* Forged: flip one character inside the base64 body. */
	fq_munge_encode(sock, nonce, sizeof(nonce), 0, &cred2, err, sizeof(err));
	{
		size_t n = strlen(cred2);
		cred2[n / 2] = cred2[n / 2] == 'A' ? 'B' : 'A';
	}
	is_int(fq_munge_decode(sock, cred2, nonce, sizeof(nonce), FQ_MUNGE_ANY_UID, NULL, NULL, err,
			       sizeof(err)),
	       -EKEYREJECTED, "tampered credential: rejected");
	free(cred2);
	cred2 = NULL;
	is_int(fq_munge_decode(sock, "MUNGE:garbage:", nonce, sizeof(nonce), FQ_MUNGE_ANY_UID, NULL, NULL,
			       err, sizeof(err)),
	       -EKEYREJECTED, "garbage credential: rejected");

	/* Expired: TTL 1 s, decoded 2+ s later. */
	fq_munge_encode(sock, nonce, sizeof(nonce), 1, &cred2, err, sizeof(err));
	sleep(3);
	is_int(fq_munge_decode(sock, cred2, nonce, sizeof(nonce), FQ_MUNGE_ANY_UID, NULL, NULL, err,
			       sizeof(err)),
	       -EKEYEXPIRED, "expired credential: refused");
	free(cred2);

	is_int(
	    fq_munge_encode("/nonexistent/munge.socket", nonce, sizeof(nonce), 0, &cred2, err, sizeof(err)),
	    -ECONNREFUSED, "unreachable munged: -ECONNREFUSED");
	like(err, "munge encode", "... with munge's reason");
	free(cred);
	return done_testing();
}
