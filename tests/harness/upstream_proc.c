/* tests/harness/upstream.py, the proxy tests' upstream (upstream_proc.h). */
#include "tests/harness/upstream_proc.h"

#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

/* Start tests/harness/upstream.py and read its "listening on PORT" (at most 10 s); 0 or -1. */
int py_start(struct py_upstream *u)
{
	char script[4096], line[128] = "";
	int in[2], out[2];
	size_t n = 0;
	double deadline = testutil_mono_ms() + 10000;

	testutil_path("tests/harness/upstream.py", script, sizeof(script));
	if (pipe(in) < 0 || pipe(out) < 0 || (u->pid = fork()) < 0)
		return -1;
	if (u->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execlp("python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	u->in_fd = in[1];
	while (n < sizeof(line) - 1 && !strchr(line, '\n') && testutil_mono_ms() < deadline) {
		struct pollfd p = { out[0], POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((r = read(out[0], line + n, sizeof(line) - 1 - n)) <= 0)
			break;
		n += (size_t)r;
		line[n] = '\0';
	}
	close(out[0]);
	if (sscanf(line, "listening on %d", &u->port) != 1)
		return -1;
	snprintf(u->url, sizeof(u->url), "http://127.0.0.1:%d", u->port);
	return 0;
}

void py_stop(struct py_upstream *u)
{
	close(u->in_fd);
	if (testutil_wait(u->pid, 5000) != 0)
		kill(u->pid, SIGKILL);
}

/* The script's count of requests of `kind` (its /stats); -1 when it does not answer. */
long long py_count(const struct py_upstream *u, const char *kind)
{
	char url[128], *body = NULL;
	long status = 0;
	json_t *j;
	long long n = -1;

	snprintf(url, sizeof(url), "%s/stats", u->url);
	if (testutil_http("GET", url, NULL, &status, NULL, &body) == 0 && status == 200 && (j = json_loads(body, 0, NULL))) {
		n = json_is_integer(json_object_get(j, kind)) ? json_integer_value(json_object_get(j, kind)) : 0;
		json_decref(j);
	}
	free(body);
	return n;
}
