#include <check.h>

#include "common/prng.h"
#include "common/heap.h"

START_TEST(pops_in_order)
{
	struct heap *h = heap_new(4, false);
	struct heap_entry t;
	static const uint64_t due[] = { 50, 10, 40, 30, 20, 60, 5 };

	for (uint32_t i = 0; i < 7; i++)
		ck_assert_int_eq(heap_push(h, due[i], i, NULL), 0);
	ck_assert_uint_eq(heap_size(h), 7);
	ck_assert(heap_peek(h, &t));
	ck_assert_uint_eq(t.due_ns, 5);
	ck_assert_uint_eq(t.id, 6);
	static const uint64_t want[] = { 5, 10, 20, 30, 40, 50, 60 };
	for (int i = 0; i < 7; i++) {
		ck_assert(heap_pop(h, &t));
		ck_assert_uint_eq(t.due_ns, want[i]);
	}
	ck_assert(!heap_pop(h, &t));
	ck_assert(!heap_peek(h, &t));
	heap_free(h);
}
END_TEST

START_TEST(ties_are_fifo)
{
	struct heap *h = heap_new(2, false);
	struct heap_entry t;

	for (uint32_t i = 0; i < 100; i++)
		heap_push(h, 1000, i, NULL);
	for (uint32_t i = 0; i < 100; i++) {
		ck_assert(heap_pop(h, &t));
		ck_assert_uint_eq(t.id, i);
	}
	heap_free(h);
}
END_TEST

START_TEST(random_order_sorted)
{
	struct heap *h = heap_new(16, false);
	struct heap_entry t;
	struct prng rng;
	uint64_t last = 0;

	prng_seed(&rng, 7);
	for (uint32_t i = 0; i < 10000; i++)
		heap_push(h, prng_below(&rng, 1000000), i, NULL);
	for (uint32_t i = 0; i < 5000; i++) {
		ck_assert(heap_pop(h, &t));
		ck_assert_uint_ge(t.due_ns, last);
		last = t.due_ns;
	}
	/* interleave pushes after some pops: later ones still come in order */
	for (uint32_t i = 0; i < 1000; i++)
		heap_push(h, last + prng_below(&rng, 1000), i, NULL);
	ck_assert_uint_eq(heap_size(h), 6000);
	while (heap_pop(h, &t)) {
		ck_assert_uint_ge(t.due_ns, last);
		last = t.due_ns;
	}
	ck_assert_uint_eq(heap_size(h), 0);
	heap_free(h);
}
END_TEST

Suite *heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, pops_in_order);
	tcase_add_test(tc, ties_are_fifo);
	tcase_add_test(tc, random_order_sorted);
	suite_add_tcase(s, tc);
	return s;
}
