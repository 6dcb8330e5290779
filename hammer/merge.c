/* ratelab merge: a joined run's results from Redis, or --json files of separate runs, as one result. */
#include "hammer/merge.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "hammer/expect.h"
#include "hammer/join.h"
#include "hammer/plot.h"
#include "hammer/report.h"
#include "hammer/result_codec.h"
#include "hammer/result_text.h"
#include "common/timeline.h"

#define MERGE_MAX_FILES 256
#define ERRLEN 512

struct merge_opts {
	const char *inputs[MERGE_MAX_FILES];
	uint32_t ninputs;
	const char *json_path, *timeline_path, *plot_path, *round;
	struct expect *expect;
	uint64_t max_skew_ns;
	uint64_t timeout_ns;
	bool quiet;
};

/* What was merged, however it came. */
struct merged {
	struct hammer_result r;
	bool have_r;
	struct report_info info;
	json_t *join;                  /* the "join" object of the output (owned) */
	char lines[640];               /* under the summary: the nodes line, who is missing */
	bool complete;
	char missing[512];             /* for --expect's message */
};

static int opt_expect(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct merge_opts *m = base;
	char inner[256];

	(void)o;
	expect_free(m->expect);
	m->expect = expect_parse(v, inner, sizeof(inner));
	if (m->expect == NULL)
		return snprintf(why, wl, "is not a list of checks such as ok>=30,429<=5,wall<=10s"), -1;
	return 0;
}

#define MO(member) CLI_FIELD(struct merge_opts, member)

static const struct cli_option MERGE_OPTIONS[] = {
	{ "INPUT", CLI_LIST, MO(inputs), .max = MERGE_MAX_FILES, CLI_COUNT(struct merge_opts, ninputs), .required = true },
	{ "--max-skew", CLI_DURATION, MO(max_skew_ns), .max = UINT64_MAX, .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "files: refuse runs whose starts are further apart (default 100ms)" },
	{ "--round", CLI_STRING, MO(round), .section = CLI_SEC_RUN, .arg = "NAME",
	  .help = "redis://: one round of a run with several (herd: a policy)" },
	{ "--timeout", CLI_DURATION, MO(timeout_ns), .min = NS_PER_MS, .max = UINT64_MAX, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "redis://: the longest wait for a node still running (default 30s)" },
	{ "--json", CLI_STRING, MO(json_path), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "the merged figures as JSON (with -, the summary goes to stderr)" },
	{ "--timeline", CLI_STRING, MO(timeline_path), .section = CLI_SEC_OUTPUT, .arg = "FILE.csv",
	  .help = "the merged per-interval counts" },
	{ "--plot", CLI_STRING, MO(plot_path), .section = CLI_SEC_OUTPUT, .arg = "FILE.svg",
	  .help = "the merged timeline, stacked by status" },
	{ "--expect", CLI_CUSTOM, .fn = opt_expect, .section = CLI_SEC_OUTPUT, .arg = "CHECKS",
	  .help = "as for hammer (e.g. 'ok>=30,429<=5'); an incomplete result fails it" },
	{ "--quiet", CLI_BOOL, MO(quiet), .section = CLI_SEC_OUTPUT,
	  .help = "no summary" },
	{ NULL },
};

static const struct cli_option *const MERGE_TABLES[] = { MERGE_OPTIONS, NULL };

static const struct cli_help MERGE_HELP = {
	.usage = "ratelab merge redis://HOST:PORT/RUNID [options]\n"
	         "ratelab merge FILE.json... [options]",
	.about = "One result out of many.  With redis://, the results the nodes of a joined run "
	         "(hammer --join ... --nodes N) wrote: what node 0 printed, with a node that died "
	         "named and the result marked incomplete.  With files, results written by --json in "
	         "separate runs, laid on their absolute start times (to the nearest interval).",
	.tables = MERGE_TABLES,
	.exits = "0\tmerged\n"
	         "2\ta bad flag or value, or results that cannot be merged\n"
	         "3\t--expect failed\n"
	         "4\tRedis unreachable or no such run\n"
	         CLI_EXIT_WRITE_LINE,
};

static const struct cli_command MERGE_CLI = { "merge", NULL, &MERGE_HELP };

#define MERGE_OUTPUTS 3

static void merge_outputs(const struct merge_opts *o, struct cli_output out[MERGE_OUTPUTS])
{
	out[0] = (struct cli_output){ "--json", o->json_path };
	out[1] = (struct cli_output){ "--timeline", o->timeline_path };
	out[2] = (struct cli_output){ "--plot", o->plot_path };
}

static int parse(struct merge_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	struct cli_output outs[MERGE_OUTPUTS];
	struct cli_group g = { MERGE_OPTIONS, o };
	bool redis;
	int rc;

	memset(o, 0, sizeof(*o));
	o->max_skew_ns = 100 * NS_PER_MS;
	o->timeout_ns = 30 * NS_PER_SEC;
	rc = cli_parse(&MERGE_CLI, &g, 1, argc, argv, err, errlen);
	if (rc != 0)
		return rc;
	redis = strncmp(o->inputs[0], "redis://", 8) == 0;
	if (redis && o->ninputs > 1)
		return cli_fail(err, errlen, "merge", "give one redis://HOST:PORT/RUNID, or files, not both");
	for (uint32_t i = 1; i < o->ninputs; i++)
		if (strncmp(o->inputs[i], "redis://", 8) == 0)
			return cli_fail(err, errlen, "merge", "give one redis://HOST:PORT/RUNID, or files, not both");
	if (!redis && o->round != NULL)
		return cli_fail(err, errlen, "merge", "--round is for a redis:// run");
	if (redis) {
		char host[256], run[JOIN_RUN_MAX], why[200];
		int port;

		/* a malformed URL is a bad value (2), not an unreachable Redis (4) */
		if (join_parse_url(o->inputs[0], host, sizeof(host), &port, run, sizeof(run), why, sizeof(why)) != 0)
			return cli_fail(err, errlen, "merge", "'%.200s' %s", o->inputs[0], why);
	}
	merge_outputs(o, outs);
	return cli_check_outputs(err, errlen, "merge", outs, MERGE_OUTPUTS);
}

/* ---- from Redis ---- */

static int from_redis(const struct merge_opts *o, struct join **jp, struct merged *m, char *err, size_t errlen)
{
	struct join_summary s;
	struct join *j = join_open(o->inputs[0], o->timeout_ns, err, errlen);
	size_t n;

	if (j == NULL)
		return 4;
	*jp = j;
	join_round(j, o->round ? o->round : "");
	if (join_collect(j, &m->r, &s, err, errlen) != 0) {
		m->have_r = m->r.timeline != NULL;
		return 4;
	}
	m->have_r = true;
	report_info_from_json(&m->info, s.config);
	join_summary_line(&s, m->lines, sizeof(m->lines));
	n = strlen(m->lines);
	if (s.missing[0] != '\0')
		snprintf(m->lines + n, sizeof(m->lines) - n, "\n%s", s.missing);
	snprintf(m->missing, sizeof(m->missing), "%s", s.missing);
	m->complete = s.complete;
	m->join = json_incref(s.json);
	join_summary_destroy(&s);
	if (s.merged == 0)
		return snprintf(err, errlen, "%s: no node wrote a result%s%.*s%s", join_url(j), s.missing[0] ? " (" : "",
		                (int)strcspn(s.missing, "\n"), s.missing, s.missing[0] ? ")" : ""), 4;
	return 0;
}

/* ---- from files ---- */

struct file_in {
	const char *path;
	json_t *doc;                   /* the whole --json document; once merged, what is kept */
	const json_t *raw;
	uint64_t start_ns, interval_ns;
	char why[512];                 /* why it does not read ("" when it does) */
};

/*
 * Read file fi into fi->doc and fi->raw (and its start); -1 with fi->why
 * when it does not read as a result (not JSON, over the bounds, no start),
 * or with *missing set when it cannot be opened.
 */
static int load_file(struct file_in *fi, bool *missing)
{
	char why[200];

	fi->doc = result_text_load_file(fi->path, missing, why, sizeof(why));
	if (fi->doc == NULL)
		return snprintf(fi->why, sizeof(fi->why), "cannot read %s: %s", fi->path, why), -1;
	fi->raw = json_object_get(fi->doc, "raw");
	fi->start_ns = result_codec_start_ns(fi->raw);
	fi->interval_ns = result_codec_interval_ns(fi->raw);
	if (!json_is_object(fi->raw) || fi->start_ns == 0)
		return snprintf(fi->why, sizeof(fi->why), "%s is not a result written by --json (no \"raw\" with its "
		                "start)", fi->path), -1;
	return 0;
}

/*
 * Read every file's start, one file in memory at a time.  One that cannot be
 * opened is a usage error (2); one that does not read as a result is noted
 * in its why and left out, like a node without a result.
 */
static int load_files(const struct merge_opts *o, struct file_in *f, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < o->ninputs; i++) {
		bool missing;

		f[i].path = o->inputs[i];
		if (load_file(&f[i], &missing) != 0 && missing)
			return cli_fail(err, errlen, "merge", "%s", f[i].why);
		json_decref(f[i].doc);
		f[i].doc = NULL;
		f[i].raw = NULL;
	}
	return 0;
}

/* The earliest and the latest start of the files that read; refused (exit 2) when more than --max-skew apart. */
static int check_skew(const struct merge_opts *o, const struct file_in *f, uint32_t *first, char *err, size_t errlen)
{
	uint32_t last = UINT32_MAX;
	char skew[32], max[32];

	*first = UINT32_MAX;
	for (uint32_t i = 0; i < o->ninputs; i++) {
		if (f[i].why[0] != '\0')
			continue;
		if (*first == UINT32_MAX || f[i].start_ns < f[*first].start_ns)
			*first = i;
		if (last == UINT32_MAX || f[i].start_ns > f[last].start_ns)
			last = i;
	}
	if (*first == UINT32_MAX) {
		for (uint32_t i = 0; i < o->ninputs; i++)
			if (strncmp(f[i].why, "cannot read", 11) == 0)
				return cli_fail(err, errlen, "merge", "%s", f[i].why);
		return cli_fail(err, errlen, "merge", "%s", f[0].why);
	}
	if (f[last].start_ns - f[*first].start_ns <= o->max_skew_ns)
		return 0;
	parse_format_duration(f[last].start_ns - f[*first].start_ns, skew, sizeof(skew));
	parse_format_duration(o->max_skew_ns, max, sizeof(max));
	return cli_fail(err, errlen, "merge", "%s started %s after %s, more than --max-skew %s apart "
	                "(not one run; --max-skew %s merges them anyway)", f[last].path, skew, f[*first].path, max, skew);
}

/*
 * Add file fi into m, its rows `late` ns after the first start; the merged
 * wall and last 2xx count from that start.  -1 with fi->why when it does not
 * read (m untouched).
 */
static int add_file(struct merged *m, struct file_in *fi, uint64_t late, uint64_t interval)
{
	uint64_t rows = (late + interval / 2) / interval;
	char why[200];

	/* each run's rows land on the merged run's, to the nearest interval */
	if (result_codec_add(&m->r, fi->raw, (uint32_t)(rows < TIMELINE_MAX_ROWS ? rows : TIMELINE_MAX_ROWS), why,
	                     sizeof(why)) != 0) {
		snprintf(fi->why, sizeof(fi->why), "%s: %s", fi->path, why);
		return -1;
	}
	/* result_codec_add checked both (at most RESULT_CODEC_MAX_NS): the sums do not wrap */
	if (late + (uint64_t)json_integer_value(json_object_get(fi->raw, "wall_ns")) > m->r.wall_ns)
		m->r.wall_ns = late + (uint64_t)json_integer_value(json_object_get(fi->raw, "wall_ns"));
	if (json_integer_value(json_object_get(fi->raw, "last_ok_ns")) > 0 &&
	    late + (uint64_t)json_integer_value(json_object_get(fi->raw, "last_ok_ns")) > m->r.last_ok_ns)
		m->r.last_ok_ns = late + (uint64_t)json_integer_value(json_object_get(fi->raw, "last_ok_ns"));
	return 0;
}

/*
 * Once fi is merged into r, keep only what r and the report point into: the
 * server URLs r took from it, and (first: the first file merged) what the
 * report reads of its config (report_config_kept).  Whatever else a file
 * holds is dropped, so that memory does not grow with the files.
 */
static void keep_what_is_used(struct file_in *fi, const struct hammer_result *r, bool first)
{
	json_t *keep = json_pack("{s:o,s:o?}", "urls", result_codec_kept(fi->raw, r), "config",
	                         first ? report_config_kept(json_object_get(fi->doc, "config")) : NULL);

	/* out of memory: the whole document stays */
	if (keep == NULL)
		return;
	json_decref(fi->doc);
	fi->doc = keep;
	fi->raw = NULL;
}

/* Name the files left out in m (missing lines, the "missing" array); the merge is then incomplete. */
static void note_left_out(const struct merge_opts *o, const struct file_in *f, struct merged *m, uint32_t merged)
{
	json_t *missing = json_array();
	size_t n = 0;

	for (uint32_t i = 0; i < o->ninputs; i++) {
		if (f[i].why[0] == '\0')
			continue;
		json_array_append_new(missing, json_string(f[i].path));
		if (n < sizeof(m->missing))
			n += (size_t)snprintf(m->missing + n, sizeof(m->missing) - n, "%s%s", n ? "\n" : "", f[i].why);
	}
	m->complete = merged == o->ninputs;
	json_object_set_new(m->join, "merged", json_integer(merged));
	json_object_set_new(m->join, "complete", json_boolean(m->complete));
	json_object_set_new(m->join, "missing", missing);
}

static int merge_files(const struct merge_opts *o, struct file_in *f, struct merged *m, char *err, size_t errlen)
{
	uint32_t first, merged = 0;
	uint64_t interval, spread = 0;
	size_t n;

	if (load_files(o, f, err, errlen) != 0 || check_skew(o, f, &first, err, errlen) != 0)
		return 2;
	interval = f[first].interval_ns;
	if (interval == 0 || hammer_result_init(&m->r, interval) != 0)
		return cli_fail(err, errlen, "merge", "%s has no timeline interval", f[first].path), 2;
	m->have_r = true;
	for (uint32_t i = 0; i < o->ninputs; i++) {
		uint64_t late = f[i].start_ns - f[first].start_ns;

		/* again, one at a time; what stays is what the merged result points into (URLs, config) */
		if (f[i].why[0] != '\0' || load_file(&f[i], &(bool){ false }) != 0 || f[i].start_ns < f[first].start_ns ||
		    add_file(m, &f[i], late, interval) != 0) {
			json_decref(f[i].doc);
			f[i].doc = NULL;
			continue;
		}
		keep_what_is_used(&f[i], &m->r, merged == 0);
		merged++;
		spread = late > spread ? late : spread;
	}
	if (merged == 0)
		return cli_fail(err, errlen, "merge", "%s", f[first].why), 2;
	/* the config the first merged file kept */
	for (uint32_t i = 0; i < o->ninputs && m->info.url == NULL; i++)
		if (json_is_object(json_object_get(f[i].doc, "config")))
			report_info_from_json(&m->info, json_object_get(f[i].doc, "config"));
	if (m->info.url == NULL)
		report_info_from_json(&m->info, NULL);
	n = (size_t)snprintf(m->lines, sizeof(m->lines), "%" PRIu32 " runs", o->ninputs);
	if (merged < o->ninputs)
		n += (size_t)snprintf(m->lines + n, sizeof(m->lines) - n, " (%" PRIu32 " merged, the result is incomplete)",
		                      merged);
	snprintf(m->lines + n, sizeof(m->lines) - n, ", start spread %.1f ms", (double)spread / 1e6);
	m->join = json_pack("{s:I,s:f}", "runs", (json_int_t)o->ninputs, "start_spread_ms", (double)spread / 1e6);
	note_left_out(o, f, m, merged);
	if (m->missing[0] != '\0') {
		n = strlen(m->lines);
		snprintf(m->lines + n, sizeof(m->lines) - n, "\n%s", m->missing);
	}
	return 0;
}

/* ---- output ---- */

static int write_outputs(const struct merge_opts *o, struct merged *m, char *err, size_t errlen)
{
	struct cli_output outs[MERGE_OUTPUTS];
	FILE *text;
	char title[200], subtitle[400];

	merge_outputs(o, outs);
	text = cli_outputs_take_stdout(outs, MERGE_OUTPUTS) ? stderr : stdout;
	m->info.join = m->join;
	if (!o->quiet) {
		report_text(text, &m->r);
		fprintf(text, "%s\n", m->lines);
	}
	fflush(stdout);
	/* the subtitle: the policy, and the nodes line up to its first newline (who is missing follows it) */
	snprintf(title, sizeof(title), "merged: %s %s, %u clients", m->info.method, m->info.url, m->info.concurrency);
	snprintf(subtitle, sizeof(subtitle), "policy %s; %.*s", m->info.policy, (int)strcspn(m->lines, "\n"), m->lines);
	if ((o->json_path != NULL && report_write_json(o->json_path, &m->r, &m->info, err, errlen) != 0) ||
	    (o->timeline_path != NULL && report_write_timeline(o->timeline_path, m->r.timeline, err, errlen) != 0) ||
	    (o->plot_path != NULL && plot_write_svg(o->plot_path, m->r.timeline, title, subtitle, err, errlen) != 0))
		return -1;
	return 0;
}

/* --expect on the merged result; an incomplete one fails it.  0 or 3. */
static int verdict(const struct merge_opts *o, const struct merged *m)
{
	const struct hammer_result *r = &m->r;
	struct expect_facts f = { r->status, RETRY_STATUS_MAX, r->ok, r->failed, r->requests, r->calls,
	                          r->retries, 0, r->wall_ns };
	char why[512];

	if (o->expect == NULL)
		return 0;
	for (int e = RETRY_ERR_REFUSED; e < HAMMER_ERR_KINDS; e++)
		f.errors += r->final_errors[e];
	if (!m->complete) {
		fprintf(stderr, "ratelab merge: expect failed: the result is incomplete: %s\n",
		        strchr(m->missing, '\n') ? "several nodes are missing" : m->missing);
		return 3;
	}
	if (!expect_check(o->expect, &f, why, sizeof(why))) {
		fprintf(stderr, "ratelab merge: expect failed: %s\n", why);
		return 3;
	}
	return 0;
}

int merge_main(int argc, char **argv)
{
	struct merge_opts o;
	struct merged m = { 0 };
	struct file_in *files = NULL;
	struct join *j = NULL;
	char err[ERRLEN] = "";
	int rc = parse(&o, argc, argv, err, sizeof(err));

	if (rc != 0) {
		expect_free(o.expect);
		return cli_exit(&MERGE_CLI, rc, err);
	}
	result_text_malloc_tune();
	if (strncmp(o.inputs[0], "redis://", 8) == 0) {
		rc = from_redis(&o, &j, &m, err, sizeof(err));
	} else if ((files = calloc(o.ninputs, sizeof(*files))) == NULL) {
		snprintf(err, sizeof(err), "ratelab merge: out of memory");
		rc = 2;
	} else {
		rc = merge_files(&o, files, &m, err, sizeof(err));
	}
	if (rc != 0) {
		fprintf(stderr, "%s%s\n", strncmp(err, "ratelab ", 8) == 0 ? "" : "ratelab merge: ", err);
		goto done;
	}
	if (write_outputs(&o, &m, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab merge: %s\n", err);
		rc = CLI_EXIT_WRITE;
		goto done;
	}
	rc = verdict(&o, &m);
done:
	if (m.have_r)
		hammer_result_destroy(&m.r);
	json_decref(m.join);
	for (uint32_t i = 0; files != NULL && i < o.ninputs; i++)
		json_decref(files[i].doc);
	free(files);
	join_free(j);
	expect_free(o.expect);
	return rc;
}
