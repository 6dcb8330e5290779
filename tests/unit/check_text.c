/* common/text.c: outside text made fit to show, as a label value, and read whole from any file. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/text.h"

START_TEST(printable_keeps_letters)
{
	char buf[16];

	text_printable("Jos\xc3\xa9 \xe9\x01", 8, buf, sizeof(buf));
	ck_assert_str_eq(buf, "Jos\xc3\xa9 ??");
	/* a letter that does not fit whole is left out */
	text_printable("ab\xc3\xa9", 4, buf, 4);
	ck_assert_str_eq(buf, "ab");
	ck_assert_uint_eq(text_fit("Jos\xc3\xa9", 4), 3);
	ck_assert_uint_eq(text_fit("Jos\xc3\xa9", 5), 5);
	ck_assert_uint_eq(text_fit("ab", 40), 2);
	/* a header's value without its trailing spaces and tabs; inner ones stay */
	ck_assert_uint_eq(text_field_len("a b \t "), 3);
	ck_assert_uint_eq(text_field_len(" \t"), 0);
	ck_assert_uint_eq(text_field_len(""), 0);
}
END_TEST

START_TEST(label_values_are_escaped)
{
	char buf[32];

	text_label_value("a\"b\\c\nd", buf, sizeof(buf));
	ck_assert_str_eq(buf, "a\\\"b\\\\c\\nd");
	/* cut before an escape, never inside one */
	text_label_value("ab\"", buf, 4);
	ck_assert_str_eq(buf, "ab");
}
END_TEST

/* A file is read whole: from a pipe (serve --config <(...) said "unreadable"), at exactly max, and refused past it. */
START_TEST(read_file_from_a_pipe_and_bounded)
{
	char path[64], tmp[] = "/tmp/ratelab-text-XXXXXX";
	enum text_read_error why = 0;
	size_t len = 0;
	int fds[2], fd = mkstemp(tmp);
	char *t;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "{\"routes\": []}", 14), 14);
	close(fds[1]);
	snprintf(path, sizeof(path), "/dev/fd/%d", fds[0]);
	t = text_read_file(path, 100, &len, &why);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "{\"routes\": []}");
	ck_assert_uint_eq(len, 14);
	free(t);
	close(fds[0]);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	t = text_read_file(tmp, 10, &len, &why);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(len, 10);
	free(t);
	ck_assert_ptr_null(text_read_file(tmp, 9, &len, &why));
	ck_assert_int_eq(why, TEXT_READ_TOO_BIG);
	unlink(tmp);
	ck_assert_ptr_null(text_read_file(tmp, 9, &len, &why));
	ck_assert_int_eq(why, TEXT_READ_OPEN);
	ck_assert_ptr_null(text_read_file("/tmp", 9, &len, &why));
	ck_assert_int_eq(why, TEXT_READ_FAILED);
}
END_TEST

Suite *text_suite(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, printable_keeps_letters);
	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, read_file_from_a_pipe_and_bounded);
	suite_add_tcase(s, tc);
	return s;
}
