/*
 * hostile_plugin.c — one source for the plugins that misbehave on purpose:
 * each fault the host must survive is one define. Like
 * fake_plugin.c it sees only attn_plugin.h. Every variant accepts arch
 * "hostile" unless its fault is in the predicate.
 *
 *   HOSTILE_NAME="x"             descriptor name
 *   HOSTILE_CREATE_UNTERMINATED  create fills all of err without a NUL and fails
 *   HOSTILE_FORWARD_UNTERMINATED forward does the same
 *   HOSTILE_PROBE_UNTERMINATED   probe_devices fills all of err without a NUL, NO_DEVICE
 *   HOSTILE_DEVICE_UNTERMINATED  one device whose arch and name have no NUL
 *   HOSTILE_DEVICE_COUNT         probe says it found a million devices
 *   HOSTILE_WRITES_SHAPE         a predicate writes through its const shape, then accepts
 *   HOSTILE_REASON=n             a predicate rejects with reason code n
 *   HOSTILE_LONG_VERSION         a version string of 300 bytes
 *   HOSTILE_PREDICATE_COUNT      num_predicates says 100000 (the array has 1)
 *   HOSTILE_CTOR_EXIT            the library's constructor calls exit(3)
 *   HOSTILE_CTOR_ABORT           ... calls abort()
 *   HOSTILE_CTOR_SEGV            ... raises SIGSEGV
 *   HOSTILE_CTOR_HANG            ... never returns
 *   HOSTILE_CTOR_MARKER          ... creates the file named by $HOSTILE_MARKER
 *                                (the setuid test: it must never run)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_plugin.h"

#ifndef HOSTILE_NAME
#define HOSTILE_NAME "hostile"
#endif

#if defined(HOSTILE_CTOR_EXIT) || defined(HOSTILE_CTOR_ABORT) || defined(HOSTILE_CTOR_SEGV) ||     \
    defined(HOSTILE_CTOR_MARKER) || defined(HOSTILE_CTOR_HANG)
__attribute__((constructor)) static void hostile_constructor(void)
{
#if defined(HOSTILE_CTOR_EXIT)
    exit(3);
#elif defined(HOSTILE_CTOR_ABORT)
    abort();
#elif defined(HOSTILE_CTOR_SEGV)
    raise(SIGSEGV);
#elif defined(HOSTILE_CTOR_HANG)
    for (;;)
        pause();
#else
    const char *marker = getenv("HOSTILE_MARKER");
    if (marker && *marker) {
        FILE *f = fopen(marker, "w");
        if (f) {
            fputs("the hostile constructor ran\n", f);
            fclose(f);
        }
    }
#endif
}
#endif

static const char *const hostile_built_archs[] = {"hostile", NULL};

/* A buffer of `size` bytes without a NUL anywhere. Marked unused: only the
 * *_UNTERMINATED variants call it, and clang warns about an unused static
 * function in the others. */
__attribute__((unused)) static void fill_unterminated(char *buf, size_t size)
{
    memset(buf, 'X', size);
}

static int hostile_pred(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    if (strncmp(shape->arch, "hostile", sizeof shape->arch) != 0)
        return attn_reject(v, ATTN_REASON_ARCH, "runs only on hostile");
#if defined(HOSTILE_WRITES_SHAPE)
    /* What a const pointer does not prevent. */
    attn_shape *writable = (attn_shape *)(uintptr_t)shape;
    writable->head_dim = 4242;
    writable->max_q_len = 4242;
#endif
#if defined(HOSTILE_REASON)
    return attn_reject(v, (attn_reason)(HOSTILE_REASON), "rejected with a code of my choosing");
#else
    return attn_accept(v);
#endif
}

static const attn_predicate hostile_predicates[] = {{"hostile", hostile_pred}};

static attn_status hostile_init(attn_plugin_context *ctx)
{
    (void)ctx;
    return ATTN_OK;
}

typedef struct hostile_backend {
    int unused;
} hostile_backend;

static attn_status hostile_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                  void **backend, char *err, size_t err_size)
{
    (void)ctx;
    (void)shape;
#if defined(HOSTILE_CREATE_UNTERMINATED)
    (void)backend;
    fill_unterminated(err, err_size);
    return ATTN_ERR_CREATE_FAILED;
#else
    (void)err;
    (void)err_size;
    *backend = calloc(1, sizeof(hostile_backend));
    return *backend ? ATTN_OK : ATTN_ERR_NO_MEMORY;
#endif
}

static attn_status hostile_workspace_size(void *backend, const attn_batch_limits *limits,
                                          size_t *bytes)
{
    (void)backend;
    (void)limits;
    *bytes = 0;
    return ATTN_OK;
}

static attn_status hostile_forward(void *backend, const attn_forward_args *args, char *err,
                                   size_t err_size)
{
    (void)backend;
    (void)args;
#if defined(HOSTILE_FORWARD_UNTERMINATED)
    fill_unterminated(err, err_size);
    return ATTN_ERR_RUNTIME;
#else
    (void)err;
    (void)err_size;
    return ATTN_OK;
#endif
}

static void hostile_destroy(void *backend)
{
    free(backend);
}

static attn_status hostile_probe(const attn_plugin_context *ctx, attn_device_info *devices,
                                 uint32_t capacity, uint32_t *count, char *err, size_t err_size)
{
    (void)ctx;
#if defined(HOSTILE_PROBE_UNTERMINATED)
    (void)devices;
    (void)capacity;
    *count = 0;
    fill_unterminated(err, err_size);
    return ATTN_ERR_NO_DEVICE;
#else
    (void)err;
    (void)err_size;
    if (capacity > 0) {
        memset(&devices[0], 0, sizeof devices[0]);
        devices[0].struct_size = sizeof devices[0];
        snprintf(devices[0].arch, sizeof devices[0].arch, "hostile");
        snprintf(devices[0].name, sizeof devices[0].name, "Hostile Device");
#if defined(HOSTILE_DEVICE_UNTERMINATED)
        fill_unterminated(devices[0].arch, sizeof devices[0].arch);
        fill_unterminated(devices[0].name, sizeof devices[0].name);
#endif
    }
#if defined(HOSTILE_DEVICE_COUNT)
    *count = 1000000;
#else
    *count = 1;
#endif
    return ATTN_OK;
#endif
}

#if defined(HOSTILE_LONG_VERSION)
#define HOSTILE_X10 "XXXXXXXXXX"
#define HOSTILE_X100                                                                               \
    HOSTILE_X10 HOSTILE_X10 HOSTILE_X10 HOSTILE_X10 HOSTILE_X10 HOSTILE_X10 HOSTILE_X10            \
        HOSTILE_X10 HOSTILE_X10 HOSTILE_X10
#define HOSTILE_VERSION HOSTILE_X100 HOSTILE_X100 HOSTILE_X100
#else
#define HOSTILE_VERSION "6.6.6"
#endif
#if defined(HOSTILE_PREDICATE_COUNT)
#define HOSTILE_NUM_PREDICATES 100000
#else
#define HOSTILE_NUM_PREDICATES 1
#endif

ATTN_PLUGIN_DEFINE(.name = HOSTILE_NAME, .version = HOSTILE_VERSION,
                   .description = "misbehaves on purpose", .built_archs = hostile_built_archs,
                   .predicates = hostile_predicates, .num_predicates = HOSTILE_NUM_PREDICATES,
                   .init = hostile_init, .create = hostile_create,
                   .workspace_size = hostile_workspace_size, .forward = hostile_forward,
                   .destroy = hostile_destroy, .probe_devices = hostile_probe)
