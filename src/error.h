/* Error recording: every failure sets the calling thread's message and
 * returns a status. The CHECK macros jump to the function's `cleanup:` label
 * with `status` set, so resources are released on every path. */
#ifndef CLNET_ERROR_H
#define CLNET_ERROR_H

#include "clnet.h"
#include "cl.h"

/* Records "file:line: <message>" for this thread and returns s. */
clnet_status clnet_fail_at(clnet_status s, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define clnet_fail(s, ...) clnet_fail_at((s), __FILE__, __LINE__, __VA_ARGS__)

/* Records a failed OpenCL call: "<call> failed: CL_OUT_OF_RESOURCES (-5)". */
clnet_status clnet_fail_cl_at(cl_int err, const char *call, const char *file, int line);

/* Puts "<prefix>: " in front of this thread's message (to say which device,
 * which file); returns s unchanged. */
clnet_status clnet_error_context(clnet_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends text (a build log) to this thread's message. */
void clnet_error_append(const char *text);

/* OpenCL error code as its name ("CL_INVALID_VALUE"); "CL_UNKNOWN_ERROR" else. */
const char *clnet_cl_error_name(cl_int err);

/* Sends a warning to the log handler. */
void clnet_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Carrying a failure from a worker thread to the caller's thread. */
typedef struct {
    clnet_status status;
    char *message; /* heap copy, NULL when status is CLNET_OK */
} clnet_error_slot;
void clnet_error_save(clnet_error_slot *slot, clnet_status s); /* on the worker */
clnet_status clnet_error_restore(clnet_error_slot *slot);      /* on the caller; frees */

/* Checks an OpenCL return code; on failure records it and goes to cleanup. */
#define CL_CHECK(expr, call)                                                                       \
    do {                                                                                           \
        cl_int clnet_err_ = (expr);                                                                \
        if (clnet_err_ != CL_SUCCESS) {                                                            \
            status = clnet_fail_cl_at(clnet_err_, (call), __FILE__, __LINE__);                     \
            goto cleanup;                                                                          \
        }                                                                                          \
    } while (0)

/* Propagates a failed clnet_status (its message is already recorded). */
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        clnet_status clnet_s_ = (expr);                                                            \
        if (clnet_s_ != CLNET_OK) {                                                                \
            status = clnet_s_;                                                                     \
            goto cleanup;                                                                          \
        }                                                                                          \
    } while (0)

/* Records a failure and goes to cleanup. */
#define FAIL(s, ...)                                                                               \
    do {                                                                                           \
        status = clnet_fail((s), __VA_ARGS__);                                                     \
        goto cleanup;                                                                              \
    } while (0)

#endif
