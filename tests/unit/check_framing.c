/* A request head's body framing: the heads refused as smuggling, and the ones that pass. */
#include <check.h>
#include <stddef.h>

#include "server/http/framing.h"

/* The refusal (or NULL) of a head with these headers (name, value pairs, NULL-terminated). */
static const char *judge(const char *const *hv, bool http10, struct framing *f)
{
	framing_init(f);
	for (size_t i = 0; hv[i]; i += 2)
		framing_add(f, hv[i], hv[i + 1]);
	return framing_refusal(f, http10);
}

START_TEST(refused_heads)
{
	static const struct {
		const char *hv[9];
		bool http10;
		const char *why;
	} cases[] = {
		{ { "Transfer-Encoding", "chunked", "Content-Length", "5", NULL }, false,
		  "Transfer-Encoding and Content-Length together" },
		{ { "content-length", "0", "transfer-encoding", "CHUNKED", NULL }, false,
		  "Transfer-Encoding and Content-Length together" },
		{ { "Content-Length", "5", "Content-Length", "6", NULL }, false, "Content-Length values that differ" },
		{ { "Content-Length", "5, 6", NULL }, false, "Content-Length values that differ" },
		{ { "Content-Length", "5", "Content-Length", "x", NULL }, false, "Content-Length values that differ" },
		{ { "Transfer-Encoding", "gzip, chunked", NULL }, false, "a Transfer-Encoding other than one chunked" },
		{ { "Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked", NULL }, false,
		  "a Transfer-Encoding other than one chunked" },
		{ { "Transfer-Encoding", "xchunked", NULL }, false, "a Transfer-Encoding other than one chunked" },
		{ { "Transfer-Encoding", "chunked", NULL }, true, "Transfer-Encoding in an HTTP/1.0 request" },
		/* what MHD hands over for `Transfer-Encoding : chunked` and a folded `Transfer-Encoding:\r\n chunked` */
		{ { "Transfer-Encoding ", "chunked", "Content-Length", "41", NULL }, false,
		  "whitespace before a header's colon, or a folded header line" },
		{ { "Transfer-Encodingchunked", "", "Content-Length", "41", NULL }, false,
		  "whitespace before a header's colon, or a folded header line" },
		{ { "Content-Length\t", "5", NULL }, false, "whitespace before a header's colon, or a folded header line" },
		{ { "X-Other Name", "1", NULL }, false, "whitespace before a header's colon, or a folded header line" },
	};
	struct framing f;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = judge(cases[i].hv, cases[i].http10, &f);

		ck_assert_msg(why != NULL, "case %zu passed", i);
		ck_assert_str_eq(why, cases[i].why);
	}
}
END_TEST

START_TEST(sound_heads)
{
	static const char *const none[] = { "Host", "x", NULL };
	static const char *const cl[] = { "Content-Length", " 12 ", NULL };
	static const char *const same[] = { "Content-Length", "7", "content-length", "7", NULL };
	static const char *const list[] = { "Content-Length", "7, 7", NULL };
	static const char *const te[] = { "Transfer-Encoding", " Chunked\t", NULL };
	static const char *const zero[] = { "Content-Length", "0", NULL };
	struct framing f;

	ck_assert_ptr_null(judge(none, false, &f));
	ck_assert(!framing_has_body(&f));
	ck_assert_ptr_null(judge(cl, false, &f));
	ck_assert_uint_eq(f.length, 12);
	ck_assert(framing_has_body(&f));
	ck_assert_ptr_null(judge(same, false, &f));
	ck_assert_uint_eq(f.length, 7);
	ck_assert_ptr_null(judge(list, true, &f));
	ck_assert_ptr_null(judge(te, false, &f));
	ck_assert(framing_has_body(&f));
	ck_assert_ptr_null(judge(zero, false, &f));
	ck_assert(!framing_has_body(&f));
}
END_TEST

Suite *framing_suite(void)
{
	Suite *s = suite_create("framing");
	TCase *tc = tcase_create("framing");

	tcase_add_test(tc, refused_heads);
	tcase_add_test(tc, sound_heads);
	suite_add_tcase(s, tc);
	return s;
}
