/* storm --sweep's grid: parsing its axes, and writing it as text, CSV, JSON and an SVG heat map. */
#include "lab/storm_sweep.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"

#define CELL_W 56
#define CELL_H 22
#define LEFT 60
#define TOP 46

int sweep_parse_loads(const char *s, struct sweep_grid *g, char *why, size_t wl)
{
	char buf[256], *save = NULL;
	uint64_t v;

	if (strlen(s) >= sizeof(buf))
		return snprintf(why, wl, "is too long"), -1;
	strcpy(buf, s);
	g->nloads = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(t);

		if (n > 0 && t[n - 1] == '%')
			t[n - 1] = '\0';
		if (g->nloads == SWEEP_MAX_AXIS || parse_u64(t, 1, 200, &v, NULL, 0) != 0)
			return snprintf(why, wl, "is not a list of at most %d loads in percent of capacity (1-200), "
			                "such as 50,70,90", SWEEP_MAX_AXIS), -1;
		g->loads[g->nloads++] = (double)v / 100.0;
	}
	return g->nloads > 0 ? 0 : (snprintf(why, wl, "is empty"), -1);
}

int sweep_parse_lengths(const char *s, struct sweep_grid *g, char *why, size_t wl)
{
	char buf[256], *save = NULL;
	uint64_t v;

	if (strlen(s) >= sizeof(buf))
		return snprintf(why, wl, "is too long"), -1;
	strcpy(buf, s);
	g->nlens = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (g->nlens == SWEEP_MAX_AXIS || parse_duration(t, &v, NULL, 0) != 0 || v < 10 * NS_PER_MS ||
		    v > 60 * NS_PER_SEC)
			return snprintf(why, wl, "is not a list of at most %d trigger lengths (10ms-60s), such as "
			                "500ms,1s,2s", SWEEP_MAX_AXIS), -1;
		g->lens[g->nlens++] = v;
	}
	return g->nlens > 0 ? 0 : (snprintf(why, wl, "is empty"), -1);
}

static void cell_text(const struct sweep_cell *c, char *buf, size_t len)
{
	if (c->recovered)
		snprintf(buf, len, "%.1fs", (double)c->recovered_ns / 1e9);
	else
		snprintf(buf, len, "no");
}

void sweep_print(FILE *f, const struct sweep_grid *g, size_t p)
{
	char t[32];

	fprintf(f, "%s: recovered after (from the trigger's end; no: not within %.0fs)\n", g->policies[p],
	        (double)g->after_ns / 1e9);
	fprintf(f, "%-12s", "load \\ trig");
	for (size_t j = 0; j < g->nlens; j++) {
		parse_format_duration(g->lens[j], t, sizeof(t));
		fprintf(f, " %7s", t);
	}
	fputc('\n', f);
	for (size_t i = 0; i < g->nloads; i++) {
		fprintf(f, "%10.0f%% ", g->loads[i] * 100);
		for (size_t j = 0; j < g->nlens; j++) {
			cell_text(&g->cells[p][i][j], t, sizeof(t));
			fprintf(f, " %7s", t);
		}
		fputc('\n', f);
	}
}

static FILE *open_in(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *name, char *err, size_t errlen)
{
	int bad = ferror(f) != 0;

	bad |= fclose(f) != 0;
	if (bad)
		snprintf(err, errlen, "cannot write %s", name);
	return bad ? -1 : 0;
}

static int write_csv(const char *dir, const struct sweep_grid *g, char *err, size_t errlen)
{
	FILE *f = open_in(dir, "sweep.csv", err, errlen);

	if (f == NULL)
		return -1;
	fprintf(f, "policy,load,trigger_s,recovered,recovered_after_s,goodput_before,goodput_after\n");
	for (size_t p = 0; p < g->npolicies; p++)
		for (size_t i = 0; i < g->nloads; i++)
			for (size_t j = 0; j < g->nlens; j++) {
				const struct sweep_cell *c = &g->cells[p][i][j];

				fprintf(f, "%s,%.2f,%.3f,%s,", g->policies[p], g->loads[i], (double)g->lens[j] / 1e9,
				        c->recovered ? "true" : "false");
				if (c->recovered)
					fprintf(f, "%.1f", (double)c->recovered_ns / 1e9);
				fprintf(f, ",%.1f,%.1f\n", c->before, c->after);
			}
	return close_out(f, "sweep.csv", err, errlen);
}

static json_t *grid_json(const struct sweep_grid *g, size_t p)
{
	json_t *rows = json_array();

	for (size_t i = 0; rows != NULL && i < g->nloads; i++) {
		json_t *row = json_array();

		for (size_t j = 0; row != NULL && j < g->nlens; j++) {
			const struct sweep_cell *c = &g->cells[p][i][j];

			json_array_append_new(row, json_pack("{s:b,s:o,s:f}", "recovered", c->recovered,
			                      "recovered_after_s", c->recovered ? json_real((double)c->recovered_ns / 1e9)
			                                                        : json_null(), "goodput_after", c->after));
		}
		json_array_append_new(rows, row);
	}
	return json_pack("{s:s,s:o}", "policy", g->policies[p], "cells", rows);
}

static int write_json(const char *dir, const struct sweep_grid *g, char *err, size_t errlen)
{
	json_t *loads = json_array(), *lens = json_array(), *grids = json_array(), *doc;
	FILE *f;
	int rc = -1;

	for (size_t i = 0; i < g->nloads; i++)
		json_array_append_new(loads, json_real(g->loads[i]));
	for (size_t j = 0; j < g->nlens; j++)
		json_array_append_new(lens, json_real((double)g->lens[j] / 1e9));
	for (size_t p = 0; p < g->npolicies; p++)
		json_array_append_new(grids, grid_json(g, p));
	doc = json_pack("{s:o,s:o,s:f,s:o}", "loads", loads, "trigger_s", lens, "after_s", (double)g->after_ns / 1e9,
	                "grids", grids);
	if (doc == NULL || (f = open_in(dir, "sweep.json", err, errlen)) == NULL)
		goto put;
	json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', f);
	rc = close_out(f, "sweep.json", err, errlen);
put:
	if (doc == NULL)
		snprintf(err, errlen, "out of memory");
	json_decref(doc);
	return rc;
}

/* A cell's colour: red when it did not recover, else green fading to yellow as recovery takes longer. */
static void cell_colour(const struct sweep_grid *g, const struct sweep_cell *c, char *buf, size_t len)
{
	double x;

	if (!c->recovered) {
		snprintf(buf, len, "#c0392b");
		return;
	}
	x = (double)c->recovered_ns / (double)(g->after_ns ? g->after_ns : 1);
	x = x > 1 ? 1 : x;
	snprintf(buf, len, "rgb(%d,%d,%d)", (int)(46 + x * 195), (int)(204 - x * 8), (int)(113 - x * 98));
}

/* One policy's panel, its top-left corner at (x, y). */
static void svg_panel(FILE *f, const struct sweep_grid *g, size_t p, int x, int y)
{
	char t[32], col[40];

	fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", x, y - 26, g->policies[p]);
	for (size_t j = 0; j < g->nlens; j++) {
		parse_format_duration(g->lens[j], t, sizeof(t));
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
		        x + (int)j * CELL_W + CELL_W / 2, y - 6, t);
	}
	for (size_t i = 0; i < g->nloads; i++) {
		int cy = y + (int)(g->nloads - 1 - i) * CELL_H;

		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f%%</text>\n", x - 6, cy + 15,
		        g->loads[i] * 100);
		for (size_t j = 0; j < g->nlens; j++) {
			cell_colour(g, &g->cells[p][i][j], col, sizeof(col));
			cell_text(&g->cells[p][i][j], t, sizeof(t));
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#fff\"/>"
			        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#fff\">%s</text>\n",
			        x + (int)j * CELL_W, cy, CELL_W, CELL_H, col, x + (int)j * CELL_W + CELL_W / 2, cy + 15, t);
		}
	}
}

static int write_svg(const char *dir, const struct sweep_grid *g, const char *title, char *err, size_t errlen)
{
	int pw = LEFT + (int)g->nlens * CELL_W + 30, ph = TOP + (int)g->nloads * CELL_H + 30;
	int cols = g->npolicies < 2 ? 1 : 2, rows = (int)(g->npolicies + 1) / 2;
	FILE *f = open_in(dir, "sweep.svg", err, errlen);

	if (f == NULL)
		return -1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
	        "font-size=\"12\">\n<text x=\"10\" y=\"20\" font-size=\"14\">%s</text>\n"
	        "<text x=\"10\" y=\"38\" fill=\"#555\">rows: offered load (share of capacity); columns: trigger "
	        "length; cell: seconds to recover after the trigger, or no</text>\n", cols * pw, rows * ph + 50, title);
	for (size_t p = 0; p < g->npolicies; p++)
		svg_panel(f, g, p, LEFT + (int)(p % 2) * pw, 50 + TOP + (int)(p / 2) * ph);
	fprintf(f, "</svg>\n");
	return close_out(f, "sweep.svg", err, errlen);
}

int sweep_write(const char *dir, const struct sweep_grid *g, const char *title, char *err, size_t errlen)
{
	if (write_csv(dir, g, err, errlen) != 0 || write_json(dir, g, err, errlen) != 0)
		return -1;
	return write_svg(dir, g, title, err, errlen);
}
