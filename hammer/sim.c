/* The stated network of a run in virtual time: its defaults, its flag, its description. */
#include "hammer/sim.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"

void sim_net_defaults(struct sim_net *n)
{
	memset(n, 0, sizeof(*n));
	n->delay_ns = 100 * NS_PER_US;
}

static int delay_fail(const char *s, char *err, size_t errlen)
{
	snprintf(err, errlen, "--sim-delay: bad value '%s' (want MEAN[±SD], e.g. 10ms±2ms)", s);
	return -1;
}

int sim_net_parse_delay(const char *s, struct sim_net *n, char *err, size_t errlen)
{
	const char *pm = strstr(s, "±"), *ascii = strstr(s, "+-");
	const char *sep = pm ? pm : ascii;
	size_t seplen = pm ? strlen("±") : 2;
	char mean[64];
	uint64_t m, sd = 0;

	if (sep == NULL)
		sep = s + strlen(s);
	if ((size_t)(sep - s) >= sizeof(mean))
		return delay_fail(s, err, errlen);
	memcpy(mean, s, (size_t)(sep - s));
	mean[sep - s] = '\0';
	if (parse_duration(mean, &m, NULL, 0) != 0 || (*sep && parse_duration(sep + seplen, &sd, NULL, 0) != 0))
		return delay_fail(s, err, errlen);
	n->delay_ns = m;
	n->delay_sd_ns = sd;
	return 0;
}

void sim_net_describe(const struct sim_net *n, char *buf, size_t len)
{
	char d[32], sd[32], c[32];

	parse_format_duration(n->delay_ns, d, sizeof(d));
	parse_format_duration(n->delay_sd_ns, sd, sizeof(sd));
	parse_format_duration(n->connect_ns, c, sizeof(c));
	snprintf(buf, len, "delay %s%s%s one way, loss %g%%, connect %s", d, n->delay_sd_ns ? "±" : "",
	         n->delay_sd_ns ? sd : "", n->loss * 100, c);
}
