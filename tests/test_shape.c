/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_shape.c — shape defaults, validation and formatting.
 *
 * Validation is what separates "invalid" (no backend could ever run it, so
 * the host has a bug) from "unsupported" (valid, but nothing enabled takes
 * it). The brief's seed bug was a misleading surface error, so the messages
 * matter as much as the verdicts.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

#define MSG_SIZE 512

/* Validate and return the verdict; the message lands in `msg`. */
static int validate(const attn_shape *s, char *msg)
{
    memset(msg, 'x', MSG_SIZE);
    msg[MSG_SIZE - 1] = '\0';
    return attn_shape_validate(s, msg, MSG_SIZE);
}

static void assert_valid(const attn_shape *s)
{
    char msg[MSG_SIZE];
    int ok = validate(s, msg);
    ck_assert_msg(ok == 1, "valid shape rejected: %s", msg);
    ck_assert_str_eq(msg, "");
}

START_TEST(defaults)
{
    attn_shape s;
    memset(&s, 0xab, sizeof s);
    attn_shape_init(&s);
    ck_assert_uint_eq(s.struct_size, sizeof s);
    ck_assert_str_eq(s.arch, "cpu");
    ck_assert_int_eq(s.num_q_heads, 1);
    /* "MHA": either spelled 0 (same as q) or 1. */
    ck_assert_msg(s.num_kv_heads == 0 || s.num_kv_heads == 1, "num_kv_heads %d",
                  (int)s.num_kv_heads);
    ck_assert_int_eq(s.head_dim, 128);
    ck_assert_msg(s.head_dim_v == 0 || s.head_dim_v == 128, "head_dim_v %d", (int)s.head_dim_v);
    ck_assert_int_eq(s.q_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(s.kv_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(s.compute_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(s.out_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(s.page_size, 16);
    ck_assert_int_eq(s.max_q_len, 1);
    ck_assert_int_eq(s.max_kv_len, 1);
    ck_assert_int_eq(s.causal, 1);
    ck_assert_int_eq(s.window_left, -1);
    ck_assert_int_eq(s.window_right, -1);
    ck_assert(s.softcap == 0.0f);
    ck_assert_int_eq(s.has_sinks, 0);
    /* The arch string is NUL-padded: shapes are compared and hashed whole. */
    {
        size_t i;
        for (i = strlen(s.arch); i < sizeof s.arch; i++)
            ck_assert_int_eq(s.arch[i], 0);
    }
    assert_valid(&s);
}
END_TEST

START_TEST(divisibility_message_exact)
{
    attn_shape s;
    char msg[MSG_SIZE];
    attn_shape_init(&s);
    s.num_q_heads = 32;
    s.num_kv_heads = 5;
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_str_eq(msg, "requires num_heads (32) to be a multiple of num_kv_heads (5)");

    /* The real numbers, not a canned sentence. */
    s.num_q_heads = 12;
    s.num_kv_heads = 8;
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_str_eq(msg, "requires num_heads (12) to be a multiple of num_kv_heads (8)");

    /* More KV heads than query heads is the same rule. */
    s.num_q_heads = 4;
    s.num_kv_heads = 8;
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_str_eq(msg, "requires num_heads (4) to be a multiple of num_kv_heads (8)");
}
END_TEST

START_TEST(grouped_shapes_valid)
{
    /* The brief's first failure: GQA shapes refused by a wrong guard. MHA,
     * GQA and MQA are all valid whenever the ratio is whole. */
    static const int pairs[][2] = {{32, 0}, {32, 32}, {32, 8}, {32, 1}, {16, 1}, {64, 8}, {1, 1}};
    size_t i;
    for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        attn_shape s;
        attn_shape_init(&s);
        s.num_q_heads = pairs[i][0];
        s.num_kv_heads = pairs[i][1];
        assert_valid(&s);
    }
}
END_TEST

/* One field set to a bad value, for the table below. */
typedef struct bad_field {
    const char *what;
    size_t offset; /* of an int32_t field */
    int32_t value;
} bad_field;

#define BAD(field, v)                                                                              \
    {                                                                                              \
#field " = " #v, offsetof(attn_shape, field), v                                            \
    }

static const bad_field bad_fields[] = {
    BAD(num_q_heads, 0),
    BAD(num_q_heads, -1),
    BAD(num_kv_heads, -1),
    BAD(num_kv_heads, -8),
    BAD(head_dim, 0),
    BAD(head_dim, -128),
    BAD(head_dim_v, -1),
    BAD(page_size, 0),
    BAD(page_size, -16),
    BAD(max_q_len, 0),
    BAD(max_q_len, -1),
    BAD(max_kv_len, 0),
    BAD(max_kv_len, -1),
    BAD(q_dtype, 0),
    BAD(q_dtype, 99),
    BAD(q_dtype, -1),
    BAD(kv_dtype, 0),
    BAD(kv_dtype, ATTN_DTYPE_COUNT),
    BAD(compute_dtype, 0),
    BAD(compute_dtype, 77),
    BAD(out_dtype, 0),
    BAD(out_dtype, 6),
    /* Flags are 0/1 and windows are -1 or a size: anything else is a host
     * bug that no backend should be asked to interpret. */
    BAD(causal, 2),
    BAD(has_sinks, 2),
    BAD(window_left, -2),
    BAD(window_right, -5),
};

START_TEST(invalid_fields)
{
    const bad_field *b = &bad_fields[_i];
    attn_shape s;
    char msg[MSG_SIZE];
    attn_shape_init(&s);
    s.max_kv_len = 64; /* so q len changes below stay <= kv len */
    memcpy((char *)&s + b->offset, &b->value, sizeof b->value);
    ck_assert_msg(validate(&s, msg) == 0, "%s was accepted", b->what);
    ck_assert_msg(msg[0] != '\0', "%s: rejected without a message", b->what);
    ck_assert_msg(strlen(msg) < MSG_SIZE - 1, "%s: message not terminated", b->what);
}
END_TEST

START_TEST(invalid_softcap_and_arch)
{
    attn_shape s;
    char msg[MSG_SIZE];
    attn_shape_init(&s);
    s.softcap = -1.0f;
    ck_assert_int_eq(validate(&s, msg), 0);
    s.softcap = NAN;
    ck_assert_int_eq(validate(&s, msg), 0);
    s.softcap = INFINITY;
    ck_assert_int_eq(validate(&s, msg), 0);
    attn_shape_init(&s);
    s.arch[0] = '\0';
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_msg(msg[0] != '\0', "empty arch rejected without a message");
    /* Not terminated within its 32 bytes. */
    memset(s.arch, 'x', sizeof s.arch);
    ck_assert_int_eq(validate(&s, msg), 0);
}
END_TEST

START_TEST(messages_name_the_problem)
{
    /* Each kind of fault gets its own sentence: a generic "invalid shape"
     * for all of them would be the misleading error the brief complains
     * about. Compare the messages of different faults pairwise. */
    static const bad_field distinct[] = {
        BAD(num_q_heads, 0), BAD(head_dim, 0),    BAD(page_size, 0),     BAD(max_q_len, 0),
        BAD(max_kv_len, 0),  BAD(q_dtype, 0),     BAD(kv_dtype, 0),      BAD(compute_dtype, 0),
        BAD(out_dtype, 0),   BAD(head_dim_v, -1), BAD(num_kv_heads, -1),
    };
    char msgs[sizeof distinct / sizeof distinct[0]][MSG_SIZE];
    size_t i, j;
    for (i = 0; i < sizeof distinct / sizeof distinct[0]; i++) {
        attn_shape s;
        attn_shape_init(&s);
        s.max_kv_len = 64;
        memcpy((char *)&s + distinct[i].offset, &distinct[i].value, sizeof(int32_t));
        ck_assert_int_eq(validate(&s, msgs[i]), 0);
        for (j = 0; j < i; j++)
            ck_assert_msg(strcmp(msgs[i], msgs[j]) != 0,
                          "\"%s\" and \"%s\" get the same message: %s", distinct[i].what,
                          distinct[j].what, msgs[i]);
    }
}
END_TEST

START_TEST(q_len_longer_than_kv_len)
{
    attn_shape s;
    char msg[MSG_SIZE];
    attn_shape_init(&s);
    s.max_q_len = 8;
    s.max_kv_len = 4;
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_msg(msg[0] != '\0', "no message");
    /* Equal is fine: prefill of a fresh sequence sees exactly its own keys. */
    s.max_q_len = 4;
    assert_valid(&s);
}
END_TEST

START_TEST(optional_fields_valid)
{
    attn_shape s;
    attn_shape_init(&s);
    s.head_dim_v = 0; /* = head_dim */
    s.num_kv_heads = 0;
    assert_valid(&s);
    s.head_dim = 192;
    s.head_dim_v = 128; /* MLA-style: V narrower than K */
    assert_valid(&s);
    s.window_left = 128;
    s.window_right = 0;
    s.softcap = 30.0f;
    s.has_sinks = 1;
    s.causal = 0;
    s.max_q_len = 4096;
    s.max_kv_len = 131072;
    assert_valid(&s);
    ts_set_arch(&s, "gfx950");
    assert_valid(&s);
}
END_TEST

START_TEST(validate_without_buffer)
{
    attn_shape s;
    attn_shape_init(&s);
    ck_assert_int_eq(attn_shape_validate(&s, NULL, 0), 1);
    s.num_q_heads = 32;
    s.num_kv_heads = 5;
    ck_assert_int_eq(attn_shape_validate(&s, NULL, 0), 0);
}
END_TEST

START_TEST(validate_small_buffer_truncates)
{
    attn_shape s;
    char buf[16];
    memset(buf, 'x', sizeof buf);
    attn_shape_init(&s);
    s.num_q_heads = 32;
    s.num_kv_heads = 5;
    ck_assert_int_eq(attn_shape_validate(&s, buf, 8), 0);
    ck_assert_int_eq(buf[7], '\0'); /* terminated inside the buffer */
    ck_assert_int_eq(buf[8], 'x');  /* and nothing written past it */
    ck_assert_int_eq(strncmp(buf, "requires", 7), 0);
}
END_TEST

START_TEST(struct_size_too_small_rejected)
{
    /* has_sinks was in the first published layout, so no host ever had a
     * shape without it: a smaller struct_size is a host bug (an
     * uninitialised shape), reported as such rather than read as garbage. */
    attn_shape s;
    char msg[MSG_SIZE];
    attn_shape_init(&s);
    s.struct_size = (uint32_t)offsetof(attn_shape, has_sinks);
    ck_assert_int_eq(validate(&s, msg), 0);
    ck_assert_msg(strstr(msg, "struct_size") != NULL, "message \"%s\" does not say why", msg);
    s.struct_size = 0;
    ck_assert_int_eq(validate(&s, msg), 0);
}
END_TEST

START_TEST(struct_size_from_newer_host_accepted)
{
    /* Growth rule (attn_types.h): fields are only appended and a reader
     * uses only those it knows, so a newer host's longer shape is valid and
     * its unknown tail is ignored. */
    struct {
        attn_shape shape;
        int32_t future[4];
    } newer;
    attn_shape_init(&newer.shape);
    newer.shape.struct_size = (uint32_t)sizeof newer;
    memset(newer.future, 0x7f, sizeof newer.future);
    assert_valid(&newer.shape);
}
END_TEST

START_TEST(format_contains_fields)
{
    attn_shape s;
    char buf[512];
    ts_mtp_shape(&s);
    buf[0] = 'x';
    attn_shape_format(&s, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "arch=gfx950") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "q_heads=16") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "kv_heads=1") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "256") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "fp8_e4m3fn") != NULL, "%s", buf);
    ck_assert_msg(strchr(buf, '\n') == NULL, "not one line: %s", buf);

    /* Too small: truncated and terminated, never overrun. */
    memset(buf, 'x', sizeof buf);
    attn_shape_format(&s, buf, 10);
    ck_assert_msg(memchr(buf, '\0', 10) != NULL, "not terminated within 10 bytes");
    ck_assert_int_eq(buf[10], 'x');
}
END_TEST

static Suite *shape_suite(void)
{
    Suite *s = suite_create("shape");
    TCase *tc = tcase_create("validate");
    ts_add_fixtures(tc, 10);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, divisibility_message_exact);
    tcase_add_test(tc, grouped_shapes_valid);
    tcase_add_loop_test(tc, invalid_fields, 0, (int)(sizeof bad_fields / sizeof bad_fields[0]));
    tcase_add_test(tc, invalid_softcap_and_arch);
    tcase_add_test(tc, messages_name_the_problem);
    tcase_add_test(tc, q_len_longer_than_kv_len);
    tcase_add_test(tc, optional_fields_valid);
    tcase_add_test(tc, validate_without_buffer);
    tcase_add_test(tc, validate_small_buffer_truncates);
    tcase_add_test(tc, struct_size_too_small_rejected);
    tcase_add_test(tc, struct_size_from_newer_host_accepted);
    tcase_add_test(tc, format_contains_fields);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(shape_suite());
}
