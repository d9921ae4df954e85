/* Unit tests of the job-end line (spank/end_report.h): the summary's JSON,
 * the line's words, the plugstack keys, and the polling client against an
 * in-process HTTP server that answers from a script (incomplete, then
 * complete; an unknown step; a refusal; silence), with a private munged
 * minting the credentials (with-munged.sh). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "spank/end_report.h"
#include "spank/spank_conf.h"
#include "tests/unit/tap.h"

#define INCOMPLETE                                                                                           \
	"{\"job_id\":7,\"step_id\":0,\"mode\":\"control\",\"node_count\":3,\"nodes_ended\":1,"               \
	"\"complete\":false,\"end_time\":null,\"end_time_ns\":null,\"exit_status\":null,\"incidents\":1,"    \
	"\"anomalies\":2,\"failovers\":3}"
#define COMPLETE                                                                                             \
	"{\"job_id\":7,\"step_id\":0,\"mode\":\"control\",\"node_count\":3,\"nodes_ended\":3,"               \
	"\"complete\":true,\"end_time\":\"2026-11-25T03:00:00+00\",\"end_time_ns\":1,\"exit_status\":0,"     \
	"\"incidents\":2,\"anomalies\":2,\"failovers\":4}"

static void test_parse_and_line(void)
{
	struct fq_end_summary s;
	char line[256];

	ok(fq_end_summary_parse(COMPLETE, &s) == 0 && s.complete && s.node_count == 3 && s.nodes_ended == 3 &&
	       s.incidents == 2 && s.anomalies == 2 && s.failovers == 4,
	   "a complete summary parses");
	fq_end_line(&s, 42, "0", line, sizeof(line));
	is_str(line, "fabriciq: step 42.0: 2 incidents, 4 lane failovers \u2014 fabriciq job 42", "the line");
	ok(fq_end_summary_parse(INCOMPLETE, &s) == 0 && !s.complete && s.nodes_ended == 1,
	   "an incomplete one too");
	fq_end_line(&s, 42, "0", line, sizeof(line));
	is_str(
	    line,
	    "fabriciq: step 42.0: 1 incident, 3 lane failovers \u2014 fabriciq job 42 (2 of 3 nodes had not "
	    "reported yet)",
	    "singular, and the nodes that had not reported");
	s = (struct fq_end_summary){.complete = true, .node_count = 2, .nodes_ended = 2, .anomalies = 0};
	fq_end_line(&s, 42, "0", line, sizeof(line));
	is_str(line, "", "a clean step: no line");
	s = (struct fq_end_summary){.complete = true, .node_count = 2, .nodes_ended = 2, .failovers = 1};
	fq_end_line(&s, 5, "interactive", line, sizeof(line));
	is_str(line, "fabriciq: step 5.interactive: 0 incidents, 1 lane failover \u2014 fabriciq job 5",
	       "failovers alone are worth a line");
	ok(fq_end_summary_parse("{\"complete\":true,\"node_count\":1}", &s) == -EPROTO &&
	       fq_end_summary_parse("not json", &s) == -EPROTO && fq_end_summary_parse(NULL, &s) == -EPROTO &&
	       fq_end_summary_parse("[1,2]", &s) == -EPROTO &&
	       fq_end_summary_parse(
		   "{\"complete\":\"yes\",\"node_count\":1,\"nodes_ended\":1,\"incidents\":0,"
		   "\"anomalies\":0,\"failovers\":0}",
		   &s) == -EPROTO &&
	       fq_end_summary_parse("{\"complete\":true,\"node_count\":1,\"nodes_ended\":1,\"incidents\":-1,"
				    "\"anomalies\":0,\"failovers\":0}",
				    &s) == -EPROTO,
	   "a missing field, not JSON, a wrong type, a negative count: refused");
}

static int parse(struct fq_spank_conf *c, char *err, const char *a)
{
	char *argv[1] = {(char *)a};

	fq_spank_conf_defaults(c, "/usr/lib/fabriciq");
	return fq_spank_conf_parse(c, a ? 1 : 0, argv, err, 256);
}

static void test_conf(void)
{
	struct fq_spank_conf c;
	char err[256];

	ok(parse(&c, err, NULL) == 0 && !c.controller[0] && !c.munge_socket[0] && c.end_wait_ms == 5000,
	   "defaults: no controller (no line), munge's socket, 5000 ms");
	ok(parse(&c, err, "controller=http://ctl:7180") == 0 && !strcmp(c.controller, "http://ctl:7180"),
	   "controller=http://ctl:7180");
	ok(parse(&c, err, "controller=https://ctl") == -EINVAL && strstr(err, "http://HOST"),
	   "https refused (the client speaks http): %s", err);
	ok(parse(&c, err, "controller=http://") == -EINVAL &&
	       parse(&c, err, "controller=http://a b") == -EINVAL,
	   "no host, or a blank: refused");
	ok(parse(&c, err, "end_wait_ms=0") == 0 && c.end_wait_ms == 0 &&
	       parse(&c, err, "end_wait_ms=60001") == -EINVAL,
	   "end_wait_ms 0 (no line) accepted, over 60000 refused");
	ok(parse(&c, err, "munge_socket=/run/m/s") == 0 && !strcmp(c.munge_socket, "/run/m/s") &&
	       parse(&c, err, "munge_socket=m") == -EINVAL,
	   "munge_socket: an absolute path");
}

/* ---- the client against a scripted server -------------------------------- */

struct server {
	int fd, port;
	const char *const *answers; /* status lines + bodies; the last repeats */
	int nanswers, requests, bad_requests;
	char want_path[96];
	pthread_t thread;
};

static void *serve(void *arg)
{
	struct server *sv = arg;
	int c;

	while ((c = accept(sv->fd, NULL, NULL)) >= 0) {
		char req[8192], want[160], resp[1024];
		const char *a = sv->answers[sv->requests < sv->nanswers ? sv->requests : sv->nanswers - 1];
		const char *body = strchr(a, '\n') + 1;
		ssize_t n = recv(c, req, sizeof(req) - 1, 0);

		req[n > 0 ? n : 0] = 0;
		snprintf(want, sizeof(want), "GET %s HTTP/1.1\r\n", sv->want_path);
		if (strncmp(req, want, strlen(want)) || !strstr(req, "\r\nAuthorization: MUNGE MUNGE:"))
			sv->bad_requests++;
		snprintf(
		    resp, sizeof(resp),
		    "HTTP/1.1 %.*s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
		    "close\r\n\r\n%s",
		    (int)(body - a - 1), a, strlen(body), body);
		sv->requests++;
		if (send(c, resp, strlen(resp), MSG_NOSIGNAL) < 0)
			diag("send: %s", strerror(errno));
		close(c);
	}
	return NULL;
}

static void server_start(struct server *sv, const char *const *answers, int n, const char *path)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	memset(sv, 0, sizeof(*sv));
	sv->answers = answers;
	sv->nanswers = n;
	snprintf(sv->want_path, sizeof(sv->want_path), "%s", path);
	sv->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (sv->fd < 0 || bind(sv->fd, (struct sockaddr *)&a, sizeof(a)) || listen(sv->fd, 8) ||
	    getsockname(sv->fd, (struct sockaddr *)&a, &len))
		skip_all("cannot listen on 127.0.0.1");
	sv->port = ntohs(a.sin_port);
	pthread_create(&sv->thread, NULL, serve, sv);
}

static void server_stop(struct server *sv)
{
	shutdown(sv->fd, SHUT_RDWR);
	pthread_join(sv->thread, NULL);
	close(sv->fd);
}

static int fetch(struct server *sv, const char *munge, int wait_ms, struct fq_end_summary *s, int64_t *ms,
		 char *err)
{
	char url[64];
	int64_t t0 = fq_clock_ns(CLOCK_MONOTONIC);
	int rc;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sv ? sv->port : 9);
	rc = fq_end_summary_fetch(url, munge, 7, "0", wait_ms, s, err, 512);
	*ms = (fq_clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
	return rc;
}

static void test_fetch(const char *munge)
{
	static const char *const later[] = {"200 OK\n" INCOMPLETE, "200 OK\n" INCOMPLETE,
					    "200 OK\n" COMPLETE};
	static const char *const unknown[] = {
	    "404 Not Found\n{\"error\":\"job 7 has no step 0 known to fabriciq\"}"};
	static const char *const refused[] = {"403 Forbidden\n{\"error\":\"no\"}"};
	static const char *const slow[] = {"200 OK\n" INCOMPLETE};
	static const char *const bad[] = {"200 OK\n{\"hello\":1}"};
	const char *path = "/api/v1/jobs/7.0/summary";
	struct fq_end_summary s;
	struct server sv;
	char err[512] = "";
	int64_t ms;
	int rc;

	server_start(&sv, later, 3, path);
	rc = fetch(&sv, munge, 5000, &s, &ms, err);
	server_stop(&sv);
	ok(rc == 0 && s.complete && s.incidents == 2 && s.failovers == 4 && sv.requests == 3 &&
	       !sv.bad_requests,
	   "incomplete twice, then complete: the complete counts after 3 requests (%d, %" PRId64 " ms): %s",
	   sv.requests, ms, err);
	ok(ms >= 2 * 250 && ms < 2500, "... asked again every 250 ms (%" PRId64 " ms)", ms);

	server_start(&sv, slow, 1, path);
	rc = fetch(&sv, munge, 800, &s, &ms, err);
	server_stop(&sv);
	ok(rc == 0 && !s.complete && s.incidents == 1 && sv.requests >= 2 && ms < 1500,
	   "never complete: what is known when the wait runs out (%d requests, %" PRId64 " ms)", sv.requests,
	   ms);

	server_start(&sv, unknown, 1, path);
	rc = fetch(&sv, munge, 800, &s, &ms, err);
	server_stop(&sv);
	ok(rc == -ENOENT && sv.requests >= 2 && ms < 1500 && strstr(err, "404"),
	   "an unknown step is asked for again until the wait runs out, then -ENOENT (%d requests): %s",
	   sv.requests, err);

	server_start(&sv, refused, 1, path);
	rc = fetch(&sv, munge, 5000, &s, &ms, err);
	server_stop(&sv);
	ok(rc == -EACCES && sv.requests == 1 && ms < 1000, "a refusal ends it at once: %s", err);

	server_start(&sv, bad, 1, path);
	rc = fetch(&sv, munge, 5000, &s, &ms, err);
	server_stop(&sv);
	ok(rc == -EPROTO && sv.requests == 1, "an answer that is no summary: -EPROTO: %s", err);

	rc = fetch(NULL, munge, 300, &s, &ms, err);
	ok(rc < 0 && rc != -ENOENT && ms < 1500,
	   "no server: an error, within the wait (%d, %" PRId64 " ms): %s", rc, ms, err);

	server_start(&sv, later, 3, path);
	rc = fetch(&sv, "/nonexistent/munge.socket", 5000, &s, &ms, err);
	server_stop(&sv);
	ok(rc == -ECONNREFUSED && sv.requests == 0 && ms < 1000,
	   "munged unreachable: -ECONNREFUSED, nothing sent: %s", err);
}

int main(void)
{
	const char *munge = getenv("FQ_TEST_MUNGE_SOCKET");

	plan(21);
	test_parse_and_line();
	test_conf();
	if (!munge) {
		skip(8, "FQ_TEST_MUNGE_SOCKET unset (run through with-munged.sh)");
		return done_testing();
	}
	test_fetch(munge);
	return done_testing();
}
