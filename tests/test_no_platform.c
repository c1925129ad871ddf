/* Run with OCL_ICD_VENDORS pointing at an empty folder: the ICD loader finds
 * no platform and clnet must say so clearly, not crash. */
#include "harness.h"

#include <string.h>

START_TEST(no_platform_is_a_clear_error) {
    clnet_runtime *rt = (clnet_runtime *)1;
    clnet_status s = clnet_runtime_create(&rt, NULL);
    ck_assert_int_eq(s, CLNET_ERR_NO_PLATFORM);
    ck_assert_ptr_null(rt);
    const char *m = clnet_last_error();
    ck_assert_msg(strstr(m, "no OpenCL platform found"), "%s", m);
    ck_assert_msg(strstr(m, "CL_PLATFORM_NOT_FOUND_KHR"), "%s", m);
    ck_assert_msg(strstr(m, "OCL_ICD_VENDORS"), "%s", m);
    /* every spec gives the same answer, before the spec is even looked at */
    ck_assert_int_eq(clnet_runtime_create(&rt, "gpu"), CLNET_ERR_NO_PLATFORM);
}
END_TEST

int main(void) {
    Suite *s = suite_create("no_platform");
    TCase *t = tcase_create("no_platform");
    tcase_add_test(t, no_platform_is_a_clear_error);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
