#include "server/http/headers.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/httpdate.h"
#include "common/parse.h"

/* The draft's problem types live in IANA's HTTP Problem Types registry. */
#define HEADERS_PROBLEM_BASE "https://iana.org/assignments/http-problem-types#"

/* A bounded appender: snprintf costs more than the rest of a rejection, so text is built by hand. */
struct hbuf {
	char *p;
	size_t n, cap;
	bool over;
};

static void put(struct hbuf *b, const char *s, size_t n)
{
	if (b->over || n >= b->cap - b->n) {
		b->over = true;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_lit(struct hbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A string literal, its length known at compile time (no strlen on the reject path). */
#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

static void putu(struct hbuf *b, uint64_t v)
{
	char tmp[PARSE_U64_CHARS];

	put(b, tmp, parse_format_u64(tmp, v));
}

/* Exact milliseconds: integer part, then up to 6 decimals without trailing zeros. */
static void put_ms(struct hbuf *b, uint64_t ns)
{
	uint64_t f = ns % NS_PER_MS;
	char frac[8];
	int digits = 6;

	putu(b, ns / NS_PER_MS);
	if (f == 0)
		return;
	while (f % 10 == 0) {
		f /= 10;
		digits--;
	}
	frac[0] = '.';
	for (int i = digits; i >= 1; i--) {
		frac[i] = (char)('0' + f % 10);
		f /= 10;
	}
	put(b, frac, (size_t)digits + 1);
}

uint64_t headers_ceil_secs(uint64_t ns)
{
	return ns / NS_PER_SEC + (ns % NS_PER_SEC != 0);
}

uint64_t headers_retry_after_secs(uint64_t wait_ns)
{
	uint64_t s = headers_ceil_secs(wait_ns);

	return s ? s : 1;
}

void headers_policy_name(const struct limiter_params *p, bool layered, int layer, char *buf, size_t len)
{
	struct hbuf b = { buf, 0, len, len == 0 };

	(void)p;
	if (!layered) {
		puts_lit(&b, "default");
		return;
	}
	put(&b, "l", 1);
	putu(&b, (uint64_t)(layer < 0 ? 0 : layer));
}

void headers_format_u64(uint64_t v, char *buf, size_t len)
{
	struct hbuf b = { buf, 0, len, len == 0 };

	putu(&b, v);
}

static int policy_item(char *buf, size_t len, size_t *used, const char *name, uint64_t q, uint64_t w_ns)
{
	uint64_t w = headers_ceil_secs(w_ns);
	int n = snprintf(buf + *used, len - *used, "%s\"%s\";q=%" PRIu64 ";w=%" PRIu64,
	                 *used ? ", " : "", name, q, w ? w : 1);

	if (n < 0 || (size_t)n >= len - *used)
		return -1;
	*used += (size_t)n;
	return 0;
}

int headers_policy(const struct limiter_params *p, bool layered, char *buf, size_t len)
{
	char name[16];
	size_t used = 0;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	if (!layered)
		return policy_item(buf, len, &used, "default", p->limit, p->window_ns);
	for (size_t i = 0; i < p->nlayers; i++) {
		headers_policy_name(p, true, (int)i, name, sizeof(name));
		if (policy_item(buf, len, &used, name, p->layers[i].limit, p->layers[i].window_ns) < 0)
			return -1;
	}
	return 0;
}

uint64_t headers_reset_secs(const struct limiter_decision *d)
{
	return d->admitted ? headers_ceil_secs(d->reset_ns) : headers_retry_after_secs(d->wait_ns);
}

uint64_t headers_next_secs(const struct limiter_decision *d)
{
	return d->admitted ? headers_ceil_secs(d->next_ns) : headers_retry_after_secs(d->wait_ns);
}

/* The dialect words and their bits; `none` and `retry-after-only` stand alone. */
static const struct {
	const char *word;
	enum headers_mode bits;
} DIALECTS[] = {
	{ "ietf", HEADERS_IETF },
	{ "draft-03", HEADERS_DRAFT03 },
	{ "x-ratelimit", HEADERS_XRATELIMIT },
	{ "github", HEADERS_GITHUB },
	{ "legacy", HEADERS_LEGACY },
	{ "both", HEADERS_BOTH },
	{ "retry-after-only", HEADERS_NONE },
	{ "none", HEADERS_SILENT },
};

const char *headers_dialect_names(void)
{
	return "ietf, draft-03, x-ratelimit, github, legacy, both, retry-after-only, none";
}

/* The bits of one word, or -1. */
static int dialect_bits(const char *w, size_t n)
{
	for (size_t i = 0; i < sizeof(DIALECTS) / sizeof(DIALECTS[0]); i++)
		if (strlen(DIALECTS[i].word) == n && memcmp(DIALECTS[i].word, w, n) == 0)
			return (int)DIALECTS[i].bits;
	return -1;
}

int headers_parse_dialects(const char *list, enum headers_mode *mode, char *why, size_t wl)
{
	/* legacy, x-ratelimit and github all send X-RateLimit-Limit (field names ignore case). */
	const unsigned x_names = HEADERS_LEGACY | HEADERS_XRATELIMIT | HEADERS_GITHUB;
	unsigned m = 0, words = 0;
	bool alone = false;

	for (const char *s = list;; s++) {
		size_t n = strcspn(s, ",");
		int bits = dialect_bits(s, n);

		if (bits < 0 && n == strlen(list))
			return snprintf(why, wl, "is not one of %s", headers_dialect_names()), -1;
		if (bits < 0)
			return snprintf(why, wl, "has '%.*s', not one of %s", (int)n, s, headers_dialect_names()), -1;
		if ((unsigned)bits & x_names && m & x_names)
			return snprintf(why, wl, "sends X-RateLimit-Limit twice (legacy, x-ratelimit and github "
			                "each send it: pick one)"), -1;
		alone |= bits == HEADERS_NONE || bits == HEADERS_SILENT;
		m |= (unsigned)bits;
		words++;
		s += n;
		if (*s == '\0')
			break;
	}
	if (alone && words > 1)
		return snprintf(why, wl, "mixes none or retry-after-only with another dialect (they go alone)"), -1;
	*mode = (enum headers_mode)m;
	return 0;
}

/* Next field of out: its name and a number as its value. */
static void field_u64(struct headers_field *f, const char *name, uint64_t v)
{
	f->name = name;
	headers_format_u64(v, f->buf, sizeof(f->buf));
	f->value = f->buf;
}

/* The three fields of a Limit/Remaining/Reset dialect, names in that order. */
static size_t trio(struct headers_field *out, const char *const names[3], const struct limiter_decision *d)
{
	field_u64(&out[0], names[0], d->limit);
	field_u64(&out[1], names[1], d->remaining);
	field_u64(&out[2], names[2], headers_reset_secs(d));
	return 3;
}

size_t headers_fields(enum headers_mode mode, const struct limiter_params *p, bool layered, const char *policy,
                      const struct limiter_decision *d, uint64_t now_wall_ns, struct headers_field *out)
{
	static const char *const draft03[3] = { "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset" };
	static const char *const envoy[3] = { "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset" };
	static const char *const legacy[3] = { "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset" };
	size_t n = 0;

	if (mode & HEADERS_IETF) {
		out[n++] = (struct headers_field){ .name = "RateLimit-Policy", .value = policy };
		if (headers_ratelimit(p, layered, d, out[n].buf, sizeof(out[n].buf)) == 0) {
			out[n].name = "RateLimit";
			out[n].value = out[n].buf;
			n++;
		}
	}
	if (mode & HEADERS_DRAFT03)
		n += trio(out + n, draft03, d);
	if (mode & HEADERS_XRATELIMIT)
		n += trio(out + n, envoy, d);
	if (mode & HEADERS_LEGACY)
		n += trio(out + n, legacy, d);
	if (mode & HEADERS_GITHUB) {
		field_u64(&out[n++], "X-RateLimit-Limit", d->limit);
		field_u64(&out[n++], "X-RateLimit-Remaining", d->remaining);
		field_u64(&out[n++], "X-RateLimit-Used", d->limit > d->remaining ? d->limit - d->remaining : 0);
		field_u64(&out[n++], "X-RateLimit-Reset", headers_github_reset(d, now_wall_ns));
		out[n].name = "X-RateLimit-Resource";
		headers_policy_name(p, layered, d->layer, out[n].buf, sizeof(out[n].buf));
		out[n].value = out[n].buf;
		n++;
	}
	return n;
}

int headers_ratelimit(const struct limiter_params *p, bool layered, const struct limiter_decision *d,
                      char *buf, size_t len)
{
	char name[16];
	struct hbuf b = { buf, 0, len, len == 0 };

	headers_policy_name(p, layered, d->layer, name, sizeof(name));
	put(&b, "\"", 1);
	puts_lit(&b, name);
	put(&b, "\";r=", 4);
	putu(&b, d->remaining);
	put(&b, ";t=", 3);
	putu(&b, headers_next_secs(d));
	return b.over ? -1 : 0;
}

uint64_t headers_wall_second_after(uint64_t now_wall_ns, uint64_t after_ns)
{
	return (now_wall_ns + after_ns + NS_PER_SEC - 1) / NS_PER_SEC;
}

uint64_t headers_github_reset(const struct limiter_decision *d, uint64_t now_wall_ns)
{
	return d->admitted ? headers_wall_second_after(now_wall_ns, d->reset_ns)
	                   : headers_retry_after_date(d->wait_ns, now_wall_ns);
}

uint64_t headers_retry_after_date(uint64_t wait_ns, uint64_t now_wall_ns)
{
	uint64_t at = headers_wall_second_after(now_wall_ns, wait_ns), next = now_wall_ns / NS_PER_SEC + 1;

	return at > next ? at : next;
}

bool headers_retry_after(enum headers_retry_after mode, uint64_t wait_ns, uint64_t now_wall_ns, char *buf,
                         size_t len)
{
	uint64_t s = headers_retry_after_secs(wait_ns);
	char date[HTTPDATE_LEN];

	switch (mode) {
	case HEADERS_RA_SECONDS:
		headers_format_u64(s, buf, len);
		return true;
	case HEADERS_RA_HTTPDATE:
		httpdate_format((time_t)headers_retry_after_date(wait_ns, now_wall_ns), date);
		snprintf(buf, len, "%s", date);
		return true;
	case HEADERS_RA_NONE:
	default:
		return false;
	}
}

int headers_problem_head(int status, const char *limiter, const struct limiter_params *p, bool layered,
                         const struct limiter_decision *d, char *buf, size_t len)
{
	char name[16];
	struct hbuf b = { buf, 0, len, len == 0 };

	headers_policy_name(p, layered, d->layer, name, sizeof(name));
	if (status == 503)
		PUT_LIT(&b, "{\"type\":\"" HEADERS_PROBLEM_BASE "temporary-reduced-capacity\","
		            "\"title\":\"Service Unavailable\",\"status\":");
	else
		PUT_LIT(&b, "{\"type\":\"" HEADERS_PROBLEM_BASE "quota-exceeded\","
		            "\"title\":\"Too Many Requests\",\"status\":");
	putu(&b, (uint64_t)status);
	PUT_LIT(&b, ",\"violated-policies\":[\"");
	puts_lit(&b, name);
	PUT_LIT(&b, "\"],\"limiter\":\"");
	puts_lit(&b, limiter);
	PUT_LIT(&b, "\",\"policy\":{\"name\":\"");
	puts_lit(&b, name);
	PUT_LIT(&b, "\",\"quota\":");
	putu(&b, d->limit);
	PUT_LIT(&b, ",\"window_s\":");
	putu(&b, headers_ceil_secs(d->window_ns));
	PUT_LIT(&b, "},\"remaining\":");
	putu(&b, d->remaining);
	PUT_LIT(&b, ",\"layer\":");
	putu(&b, (uint64_t)d->layer);
	return b.over ? -1 : (int)b.n;
}

int headers_problem_tail(const struct limiter_decision *d, char *buf, size_t len)
{
	char ms[32];
	uint64_t ra = headers_retry_after_secs(d->wait_ns);
	struct hbuf b = { buf, 0, len, len == 0 }, m = { ms, 0, sizeof(ms), false };

	put_ms(&m, d->wait_ns);  /* said twice: format once */
	PUT_LIT(&b, ",\"retry_after_s\":");
	putu(&b, ra);
	PUT_LIT(&b, ",\"wait_ms\":");
	put(&b, ms, m.n);
	PUT_LIT(&b, ",\"detail\":\"rate limit exceeded: retry in ");
	put(&b, ms, m.n);
	PUT_LIT(&b, " ms (Retry-After rounds up to ");
	putu(&b, ra);
	PUT_LIT(&b, " s)\"}\n");
	return b.over ? -1 : (int)b.n;
}

int headers_problem_body(int status, const char *limiter, const struct limiter_params *p, bool layered,
                         const struct limiter_decision *d, char *buf, size_t len)
{
	int head = headers_problem_head(status, limiter, p, layered, d, buf, len);
	int tail = head < 0 ? -1 : headers_problem_tail(d, buf + head, len - (size_t)head);

	return tail < 0 ? -1 : head + tail;
}
