/* Request paths for route matching: the normal form and the segment-boundary prefix match. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/prng.h"
#include "server/http/path.h"

/* The normal form of in, in a static buffer ("<error>" when refused). */
static const char *norm(const char *in)
{
	static char out[256];
	size_t n = 0;

	if (path_normalize(in, strlen(in), out, sizeof(out), &n) != 0)
		return "<error>";
	ck_assert_uint_eq(n, strlen(out));
	return out;
}

/* The route of the issue's two-route server (/api and /) that a raw path lands on. */
static const char *route_of(const char *raw)
{
	static const char *const routes[] = { "/api", "/" };  /* longest first */
	const char *p = norm(raw);

	for (size_t i = 0; i < 2; i++)
		if (path_prefix_covers(routes[i], strlen(routes[i]), p, strlen(p)))
			return routes[i];
	return "<none>";
}

START_TEST(issue_cases)
{
	ck_assert_str_eq(norm("//api"), "/api");
	ck_assert_str_eq(norm("/./api"), "/api");
	ck_assert_str_eq(norm("/x/../api"), "/api");
	ck_assert_str_eq(norm("/%61pi"), "/api");
	ck_assert_str_eq(norm("/apix"), "/apix");
	ck_assert_str_eq(norm("/api/"), "/api/");
	ck_assert_str_eq(norm("/.."), "/");
	ck_assert_str_eq(norm(""), "/");
	ck_assert_str_eq(norm("/a%2Fb"), "/a%2Fb");
	ck_assert_str_eq(norm("/a%2fb"), "/a%2Fb");
	/* What the server with routes /api (limited) and / (not) did wrong: these now meet /api. */
	ck_assert_str_eq(route_of("//api"), "/api");
	ck_assert_str_eq(route_of("/./api"), "/api");
	ck_assert_str_eq(route_of("/x/../api"), "/api");
	ck_assert_str_eq(route_of("/%61pi"), "/api");
	ck_assert_str_eq(route_of("/%61%70%69/x"), "/api");
	ck_assert_str_eq(route_of("/api/"), "/api");
	ck_assert_str_eq(route_of("/api"), "/api");
	/* ... and these do not. */
	ck_assert_str_eq(route_of("/apix"), "/");
	ck_assert_str_eq(route_of("/API"), "/");
	ck_assert_str_eq(route_of("/api%2Fx"), "/");
	ck_assert_str_eq(route_of("/.."), "/");
}
END_TEST

START_TEST(dot_segments)
{
	ck_assert_str_eq(norm("/a/./b/../../c"), "/c");
	ck_assert_str_eq(norm("/../../../api"), "/api");
	ck_assert_str_eq(norm("/api/."), "/api/");
	ck_assert_str_eq(norm("/api/x/.."), "/api/");
	ck_assert_str_eq(norm("/api/x/../"), "/api/");
	ck_assert_str_eq(norm("/a/b/.."), "/a/");
	ck_assert_str_eq(norm("/."), "/");
	ck_assert_str_eq(norm("/./"), "/");
	ck_assert_str_eq(norm("/..."), "/...");
	ck_assert_str_eq(norm("/..a/.b/c."), "/..a/.b/c.");
	/* Escaped dots are dots: decoded before the segments are resolved. */
	ck_assert_str_eq(norm("/x/%2e%2e/api"), "/api");
	ck_assert_str_eq(norm("/x/.%2E/api"), "/api");
	ck_assert_str_eq(norm("/%2e/api"), "/api");
	/* An encoded '/' is part of a segment: "..%2F" is no dot segment. */
	ck_assert_str_eq(norm("/x/..%2Fapi"), "/x/..%2Fapi");
}
END_TEST

START_TEST(slashes_and_form)
{
	ck_assert_str_eq(norm("/a//b///c"), "/a/b/c");
	ck_assert_str_eq(norm("///"), "/");
	ck_assert_str_eq(norm("/"), "/");
	ck_assert_str_eq(norm("/a/"), "/a/");
	ck_assert_str_eq(norm("/a//"), "/a/");
	ck_assert_str_eq(norm("api"), "/api");
	ck_assert_str_eq(norm("/API/Users"), "/API/Users");
	ck_assert_str_eq(norm("/api?x=/../y"), "/api");
	ck_assert_str_eq(norm("/api/#frag"), "/api/");
	ck_assert_str_eq(norm("/caf\xc3\xa9"), "/caf\xc3\xa9");
}
END_TEST

START_TEST(escapes)
{
	ck_assert_str_eq(norm("/%41%5a%61%7a%30%39%2d%2e%5f%7e"), "/AZaz09-._~");
	ck_assert_str_eq(norm("/%7E"), "/~");
	ck_assert_str_eq(norm("/%20x"), "/%20x");
	ck_assert_str_eq(norm("/%3f"), "/%3F");
	ck_assert_str_eq(norm("/%00"), "/%00");
	ck_assert_str_eq(norm("/%25"), "/%25");
	ck_assert_str_eq(norm("/%c3%a9"), "/%C3%A9");
	ck_assert_str_eq(norm("/%"), "<error>");
	ck_assert_str_eq(norm("/%4"), "<error>");
	ck_assert_str_eq(norm("/a%zz"), "<error>");
	ck_assert_str_eq(norm("/%4g"), "<error>");
	ck_assert_str_eq(norm("/%%41"), "<error>");
	/* After the path, a '%' is the query's business. */
	ck_assert_str_eq(norm("/a?%zz"), "/a");
}
END_TEST

/* A NUL byte would cut the path short for every C-string comparison after it: refused. */
START_TEST(nul_refused)
{
	char out[16];
	size_t n = 0;

	ck_assert_int_eq(path_normalize("/a\0pi", 5, out, sizeof(out), &n), -1);
	ck_assert_int_eq(path_normalize("\0", 1, out, sizeof(out), &n), -1);
	ck_assert_int_eq(path_normalize("/a?\0", 4, out, sizeof(out), &n), 0);
	ck_assert_str_eq(out, "/a");
}
END_TEST

/* The output never outgrows len + 1; a buffer one byte short is refused, never overrun. */
START_TEST(bounds)
{
	enum { LONG = 8000 };
	char *in = malloc(LONG + 1), *out = malloc(LONG + 2);
	char small[8];
	size_t n = 0;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	memset(in, 'a', LONG);
	in[LONG] = '\0';
	ck_assert_int_eq(path_normalize(in, LONG, out, LONG + 2, &n), 0);
	ck_assert_uint_eq(n, LONG + 1);
	ck_assert_int_eq(out[0], '/');
	ck_assert_int_eq(path_normalize(in, LONG, out, LONG + 1, &n), -1);
	/* 2,000 "../" climb no higher than the root. */
	for (int i = 0; i < 2000; i++)
		memcpy(in + 3 * i, "../", 3);
	memcpy(in + 6000, "api", 4);
	ck_assert_int_eq(path_normalize(in, strlen(in), out, LONG + 2, &n), 0);
	ck_assert_str_eq(out, "/api");
	ck_assert_int_eq(path_normalize("/abcdef", 7, small, 8, &n), 0);
	ck_assert_str_eq(small, "/abcdef");
	ck_assert_int_eq(path_normalize("/abcdefg", 8, small, 8, &n), -1);
	ck_assert_int_eq(path_normalize("/", 1, small, 1, &n), -1);
	free(in);
	free(out);
}
END_TEST

START_TEST(prefix_boundaries)
{
	ck_assert(path_prefix_covers("/", 1, "/", 1));
	ck_assert(path_prefix_covers("/", 1, "/anything/at/all", 16));
	ck_assert(path_prefix_covers("/api", 4, "/api", 4));
	ck_assert(path_prefix_covers("/api", 4, "/api/", 5));
	ck_assert(path_prefix_covers("/api", 4, "/api/x", 6));
	ck_assert(!path_prefix_covers("/api", 4, "/apix", 5));
	ck_assert(!path_prefix_covers("/api", 4, "/ap", 3));
	ck_assert(!path_prefix_covers("/api", 4, "/API", 4));
	ck_assert(!path_prefix_covers("/api", 4, "/", 1));
	ck_assert(path_prefix_covers("/api/", 5, "/api/x", 6));
	ck_assert(path_prefix_covers("/api/", 5, "/api/", 5));
	ck_assert(!path_prefix_covers("/api/", 5, "/api", 4));
	ck_assert(path_prefix_covers("/a/b", 4, "/a/b/c", 6));
	ck_assert(!path_prefix_covers("/a/b", 4, "/a/bc", 5));
	ck_assert(!path_prefix_covers("", 0, "/", 1));
}
END_TEST

/* Random paths: the normal form is a fixed point, starts with '/', and has no empty or dot segment. */
START_TEST(normal_form_is_stable)
{
	static const char alphabet[] = "//..%%2eE5fFaA?x";
	struct prng rng;
	char in[40], once[64], twice[64];
	size_t n1, n2;

	prng_seed(&rng, 15);
	for (int t = 0; t < 20000; t++) {
		size_t len = (size_t)prng_below(&rng, sizeof(in));

		for (size_t i = 0; i < len; i++)
			in[i] = alphabet[prng_below(&rng, sizeof(alphabet) - 1)];
		if (path_normalize(in, len, once, sizeof(once), &n1) != 0)
			continue;
		ck_assert_int_eq(once[0], '/');
		ck_assert_int_eq(path_normalize(once, n1, twice, sizeof(twice), &n2), 0);
		ck_assert_str_eq(once, twice);
		ck_assert_ptr_null(strstr(once, "//"));
		ck_assert_ptr_null(strstr(once, "/./"));
		ck_assert_ptr_null(strstr(once, "/../"));
		ck_assert(!(n1 >= 2 && strcmp(once + n1 - 2, "/.") == 0));
		ck_assert(!(n1 >= 3 && strcmp(once + n1 - 3, "/..") == 0));
		ck_assert_ptr_null(strchr(once, '?'));
	}
}
END_TEST

Suite *path_suite(void)
{
	Suite *s = suite_create("path");
	TCase *tc = tcase_create("path");

	tcase_add_test(tc, issue_cases);
	tcase_add_test(tc, dot_segments);
	tcase_add_test(tc, slashes_and_form);
	tcase_add_test(tc, escapes);
	tcase_add_test(tc, nul_refused);
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, prefix_boundaries);
	tcase_add_test(tc, normal_form_is_stable);
	suite_add_tcase(s, tc);
	return s;
}
