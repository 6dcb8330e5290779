/*
 * bench-hello: the bare libmicrohttpd baseline for `make bench`.
 *
 * It is configured the way the house style says a ratelab server should be:
 * internal polling thread + epoll + a thread pool, a connection limit and
 * timeout, one constant response built at start-up, queued on the *second*
 * call of the access handler so keep-alive survives.  Whatever ratelab serve
 * adds on top of this (routing, limiter, headers, stats) is the cost the
 * benchmark shows.
 *
 * usage: bench-hello [--port N] [--threads N] [--turbo] [--memory N]
 * Prints "listening on http://127.0.0.1:PORT" once ready; SIGINT/SIGTERM stop it (exit 0).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#define HELLO_BODY "hello\n"
#define HELLO_MAX_CONNECTIONS 10000
#define HELLO_CONNECTION_TIMEOUT_S 30

struct hello_opts {
	unsigned port;
	unsigned threads;
	unsigned memory_limit; /* per-connection pool bytes; 0 = MHD's default (32 KiB) */
	bool turbo;
};

static const char HELLO_USAGE[] =
	"usage: bench-hello [--port N] [--threads N] [--turbo] [--memory N]\n"
	"  --port N      TCP port on 127.0.0.1 (default 0: pick a free one)\n"
	"  --threads N   MHD thread-pool size (default: number of online cores)\n"
	"  --turbo       add MHD_USE_TURBO (for comparison; off by default)\n"
	"  --memory N    per-connection memory pool in bytes (default: MHD's 32768)\n";

/* The one response, shared by every connection; MHD reference-counts it. */
static struct MHD_Response *hello_response;

static enum MHD_Result hello_access(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
	static int first_call_marker;

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)upload_data;
	/* Answering on the first call makes MHD close the connection; wait for the second. */
	if (*con_cls == NULL) {
		*con_cls = &first_call_marker;
		return MHD_YES;
	}
	*upload_data_size = 0;
	return MHD_queue_response(conn, MHD_HTTP_OK, hello_response);
}

static int hello_parse_uint(const char *flag, const char *val, unsigned min, unsigned max,
                            unsigned *out)
{
	char *end = NULL;
	unsigned long v;

	if (val == NULL) {
		fprintf(stderr, "bench-hello: %s needs a value\n", flag);
		return -1;
	}
	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno != 0 || end == val || *end != '\0' || val[0] == '-' || v < min || v > max) {
		fprintf(stderr, "bench-hello: bad value for %s: '%s'\n", flag, val);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* Returns 0 to run, 1 after --help, -1 on a usage error (message printed). */
static int hello_parse_args(int argc, char **argv, struct hello_opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	o->port = 0;
	o->turbo = false;
	o->memory_limit = 0;
	o->threads = ncpu > 0 ? (unsigned)ncpu : 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(HELLO_USAGE, stdout);
			return 1;
		} else if (strcmp(a, "--port") == 0) {
			if (hello_parse_uint(a, v, 0, 65535, &o->port) != 0)
				return -1;
			i++;
		} else if (strcmp(a, "--threads") == 0) {
			if (hello_parse_uint(a, v, 1, 256, &o->threads) != 0)
				return -1;
			i++;
		} else if (strcmp(a, "--memory") == 0) {
			if (hello_parse_uint(a, v, 1024, 1U << 24, &o->memory_limit) != 0)
				return -1;
			i++;
		} else if (strcmp(a, "--turbo") == 0) {
			o->turbo = true;
		} else {
			fprintf(stderr, "bench-hello: unknown flag '%s'\n", a);
			return -1;
		}
	}
	return 0;
}

static struct MHD_Daemon *hello_start(const struct hello_opts *o)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	struct sockaddr_in sa;

	if (o->turbo)
		flags |= MHD_USE_TURBO;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, hello_access, NULL,
	                        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	                        MHD_OPTION_THREAD_POOL_SIZE, o->threads,
	                        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HELLO_MAX_CONNECTIONS,
	                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HELLO_CONNECTION_TIMEOUT_S,
	                        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1U,
	                        o->memory_limit ? MHD_OPTION_CONNECTION_MEMORY_LIMIT : MHD_OPTION_END,
	                        (size_t)o->memory_limit,
	                        MHD_OPTION_END);
}

static unsigned hello_bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);

	return info != NULL ? info->port : 0;
}

int main(int argc, char **argv)
{
	struct hello_opts o;
	struct MHD_Daemon *d;
	sigset_t stop;
	int sig = 0;
	int rc = 2;

	switch (hello_parse_args(argc, argv, &o)) {
	case 1: return 0;
	case -1: return 2;
	default: break;
	}
	/* Block the stop signals before MHD starts threads so only sigwait sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	hello_response = MHD_create_response_from_buffer(strlen(HELLO_BODY), (void *)HELLO_BODY,
	                                                 MHD_RESPMEM_PERSISTENT);
	if (hello_response == NULL) {
		fprintf(stderr, "bench-hello: cannot build the response\n");
		return 1;
	}
	MHD_add_response_header(hello_response, "Content-Type", "text/plain");
	d = hello_start(&o);
	if (d == NULL) {
		fprintf(stderr, "bench-hello: cannot listen on port %u\n", o.port);
		rc = 1;
		goto free_response;
	}
	printf("listening on http://127.0.0.1:%u\n", hello_bound_port(d));
	fflush(stdout);
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);
	rc = 0;
free_response:
	MHD_destroy_response(hello_response);
	return rc;
}
