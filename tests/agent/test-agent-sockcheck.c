/* Unit tests of slurmd-agent/sockcheck.h: the kernel's socket table asked
 * by exact 4-tuple over real loopback connections (IPv4 and IPv6), hostile
 * address strings, and the remembered answers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "slurmd-agent/sockcheck.h"
#include "tests/unit/tap.h"

struct conn {
	int lfd, cfd, afd;
	char client[80], server[80];
};

static void text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s->sin_port));
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s->sin6_port));
	}
}

/* A loopback connection of family fam: 0, or -1 if the family is not here. */
static int connect_loopback(int fam, struct conn *c)
{
	struct sockaddr_storage ss = {0}, cs;
	socklen_t sl = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6), l;

	ss.ss_family = (sa_family_t)fam;
	if (fam == AF_INET)
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	c->lfd = socket(fam, SOCK_STREAM, 0);
	c->cfd = socket(fam, SOCK_STREAM, 0);
	if (c->lfd < 0 || c->cfd < 0 || bind(c->lfd, (struct sockaddr *)&ss, sl) || listen(c->lfd, 1))
		return -1;
	l = sizeof(ss);
	getsockname(c->lfd, (struct sockaddr *)&ss, &l);
	if (connect(c->cfd, (struct sockaddr *)&ss, l) || (c->afd = accept(c->lfd, NULL, NULL)) < 0)
		return -1;
	l = sizeof(cs);
	getsockname(c->cfd, (struct sockaddr *)&cs, &l);
	text(&cs, c->client, sizeof(c->client));
	text(&ss, c->server, sizeof(c->server));
	return 0;
}

static void conn_close(struct conn *c)
{
	close(c->afd);
	close(c->cfd);
	close(c->lfd);
}

static void test_kernel(int fam, const char *name)
{
	struct conn c;
	uid_t uid = 4242;
	int rc;

	if (connect_loopback(fam, &c)) {
		skip(3, "no loopback connection of this family here");
		return;
	}
	rc = fq_tcp_socket_uid(c.client, c.server, &uid);
	ok(rc == 0 && uid == getuid(), "%s: the connecting end %s -> %s is found, its uid ours (%d, uid %u)",
	   name, c.client, c.server, rc, (unsigned)uid);
	uid = 4242;
	rc = fq_tcp_socket_uid(c.server, c.client, &uid);
	ok(rc == 0 && uid == getuid(), "%s: ... and the accepted end, the other way round (%d)", name, rc);
	conn_close(&c);
	rc = fq_tcp_socket_uid(c.client, c.server, &uid);
	ok(rc == -ENOENT, "%s: closed (the closing end in TIME_WAIT): held by no one, -ENOENT (%d)", name,
	   rc);
}

static void test_hostile(void)
{
	static const char *const bad[] = {
	    "",
	    "1.2.3.4",
	    "1.2.3.4:",
	    ":80",
	    "1.2.3.4:0",
	    "1.2.3.4:65536",
	    "1.2.3.4:8x",
	    "1.2.3.4: 8",
	    "[::1:80",
	    "::1]:80",
	    "[]:80",
	    "host:80",
	    "1.2.3.4.5:80",
	    "[1.2.3.4]:80x",
	    "999.1.1.1:80",
	    "[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]:1"};
	uid_t uid;
	int refused = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused += fq_tcp_socket_uid(bad[i], "127.0.0.1:80", &uid) == -EINVAL &&
			   fq_tcp_socket_uid("127.0.0.1:80", bad[i], &uid) == -EINVAL;
	is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])), "hostile addresses refused at either end");
	is_int(fq_tcp_socket_uid("127.0.0.1:80", "[::1]:80", &uid), -EINVAL, "two families: refused");
}

static void test_remembered(void)
{
	static struct fq_sockcheck c; /* 40 KiB: not on the stack */
	struct conn k;
	int64_t t = 1000000000;

	if (connect_loopback(AF_INET, &k)) {
		skip(5, "no IPv4 loopback connection here");
		return;
	}
	ok(fq_sockcheck_owned(&c, k.client, k.server, getuid(), t) && c.asked == 1,
	   "a held connection: yes, asked");
	ok(fq_sockcheck_owned(&c, k.client, k.server, getuid(), t + 1) && c.asked == 1 && c.remembered == 1,
	   "... again: remembered");
	ok(!fq_sockcheck_owned(&c, k.client, k.server, getuid() + 1, t + 2) && c.asked == 1,
	   "... another uid's claim of it: no");
	conn_close(&k);
	ok(!fq_sockcheck_owned(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t) &&
	       !fq_sockcheck_owned(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t + FQ_SOCKCHECK_NO_NS - 1) &&
	       c.asked == 2,
	   "a claim nobody holds: no, and remembered for a second (asked %llu)", (unsigned long long)c.asked);
	ok(!fq_sockcheck_owned(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t + FQ_SOCKCHECK_NO_NS) &&
	       c.asked == 3,
	   "... then asked again");
}

int main(void)
{
	plan(13);
	test_kernel(AF_INET, "IPv4");
	test_kernel(AF_INET6, "IPv6");
	test_hostile();
	test_remembered();
	return done_testing();
}
