/* Status strings, the per-thread error message, warnings. */
#include "alloc.h"
#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large enough for a typical build log; longer text is cut in the middle. */
#define MESSAGE_CAP 32768

static _Thread_local char thread_message[MESSAGE_CAP];

const char *clnet_version(void) {
#define STR_(x) #x
#define STR(x)  STR_(x)
    return STR(CLNET_VERSION_MAJOR) "." STR(CLNET_VERSION_MINOR) "." STR(CLNET_VERSION_PATCH);
#undef STR
#undef STR_
}

const char *clnet_status_string(clnet_status s) {
    switch (s) {
#define CLNET_STATUS_CASE(name, value, text)                                                       \
    case name:                                                                                     \
        return text;
        CLNET_STATUS_LIST(CLNET_STATUS_CASE)
#undef CLNET_STATUS_CASE
    }
    return "unknown status";
}

const char *clnet_last_error(void) {
    return thread_message;
}

static void set_message(const char *text) {
    size_t n = strlen(text);
    if (n < MESSAGE_CAP) {
        memcpy(thread_message, text, n + 1);
        return;
    }
    /* Keep the head (what failed) and the tail (the end of a build log). */
    static const char cut[] = "\n[... cut ...]\n";
    size_t head = MESSAGE_CAP / 2;
    size_t tail = MESSAGE_CAP - head - sizeof cut;
    memcpy(thread_message, text, head);
    memcpy(thread_message + head, cut, sizeof cut - 1);
    memcpy(thread_message + head + sizeof cut - 1, text + n - tail, tail);
    thread_message[MESSAGE_CAP - 1] = '\0';
}

clnet_status clnet_fail_at(clnet_status s, const char *file, int line, const char *fmt, ...) {
    char text[MESSAGE_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const char *debug = getenv("CLNET_DEBUG");          /* read here alone: env.h says why */
    if (!debug || !*debug || strcmp(debug, "0") == 0) { /* the place is for bug reports */
        set_message(text);
        return s;
    }
    /* file:line after the message, so the message reads first. */
    const char *base = strrchr(file, '/');
    char *all = NULL;
    size_t n = strlen(text) + strlen(file) + 32;
    all = clnet_malloc(n);
    if (!all) {
        set_message(text);
        return s;
    }
    snprintf(all, n, "%s [%s:%d]", text, base ? base + 1 : file, line);
    set_message(all);
    free(all);
    return s;
}

clnet_status clnet_fail_cl_at(cl_int err, const char *call, const char *file, int line) {
    clnet_status s = CLNET_ERR_OPENCL;
    if (err == CL_OUT_OF_HOST_MEMORY) s = CLNET_ERR_OUT_OF_MEMORY;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_INVALID_BUFFER_SIZE)
        s = CLNET_ERR_DEVICE_MEMORY;
    return clnet_fail_at(s, file, line, "%s failed: %s (%d)", call, clnet_cl_error_name(err), err);
}

/* Whether the message already names this context: as one of its
 * "context: " segments, or at its head more precisely ("training step 0: "
 * for "training step"). Levels that each name the device then name it once. */
static int says_already(const char *message, const char *prefix) {
    size_t n = strlen(prefix);
    if (n == 0) return 1;
    if (strncmp(message, prefix, n) == 0 && (message[n] == ':' || message[n] == ' ')) return 1;
    for (const char *at = strstr(message, prefix); at; at = strstr(at + 1, prefix))
        if (at >= message + 2 && at[-2] == ':' && at[-1] == ' ' && strncmp(at + n, ": ", 2) == 0)
            return 1;
    return 0;
}

clnet_status clnet_error_context(clnet_status s, const char *fmt, ...) {
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (says_already(thread_message, prefix)) return s;
    size_t n = strlen(prefix) + strlen(thread_message) + 3;
    char *all = clnet_malloc(n);
    if (!all) return s;
    snprintf(all, n, "%s: %s", prefix, thread_message);
    set_message(all);
    free(all);
    return s;
}

void clnet_error_append(const char *text) {
    size_t n = strlen(thread_message) + strlen(text) + 1;
    char *all = clnet_malloc(n);
    if (!all) return;
    snprintf(all, n, "%s%s", thread_message, text);
    set_message(all);
    free(all);
}

void clnet_error_save(clnet_error_slot *slot, clnet_status s) {
    slot->status = s;
    slot->message = s == CLNET_OK ? NULL : strdup(thread_message);
}

clnet_status clnet_error_restore(clnet_error_slot *slot) {
    clnet_status s = slot->status;
    if (s != CLNET_OK) set_message(slot->message ? slot->message : clnet_status_string(s));
    free(slot->message);
    slot->message = NULL;
    return s;
}

/* ---- warnings ------------------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static clnet_log_fn log_fn;
static void *log_user;

void clnet_set_log_handler(clnet_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void clnet_warn(const char *fmt, ...) {
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_fn)
        log_fn(text, log_user);
    else
        fprintf(stderr, "clnet: warning: %s\n", text);
    pthread_mutex_unlock(&log_lock);
}

/* ---- OpenCL error names ---------------------------------------------------- */

const char *clnet_cl_error_name(cl_int err) {
    switch (err) {
#define NAME(code)                                                                                 \
    case code:                                                                                     \
        return #code;
        NAME(CL_SUCCESS)
        NAME(CL_DEVICE_NOT_FOUND)
        NAME(CL_DEVICE_NOT_AVAILABLE)
        NAME(CL_COMPILER_NOT_AVAILABLE)
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        NAME(CL_OUT_OF_RESOURCES)
        NAME(CL_OUT_OF_HOST_MEMORY)
        NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
        NAME(CL_MEM_COPY_OVERLAP)
        NAME(CL_IMAGE_FORMAT_MISMATCH)
        NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        NAME(CL_BUILD_PROGRAM_FAILURE)
        NAME(CL_MAP_FAILURE)
        NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        NAME(CL_COMPILE_PROGRAM_FAILURE)
        NAME(CL_LINKER_NOT_AVAILABLE)
        NAME(CL_LINK_PROGRAM_FAILURE)
        NAME(CL_DEVICE_PARTITION_FAILED)
        NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        NAME(CL_INVALID_VALUE)
        NAME(CL_INVALID_DEVICE_TYPE)
        NAME(CL_INVALID_PLATFORM)
        NAME(CL_INVALID_DEVICE)
        NAME(CL_INVALID_CONTEXT)
        NAME(CL_INVALID_QUEUE_PROPERTIES)
        NAME(CL_INVALID_COMMAND_QUEUE)
        NAME(CL_INVALID_HOST_PTR)
        NAME(CL_INVALID_MEM_OBJECT)
        NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        NAME(CL_INVALID_IMAGE_SIZE)
        NAME(CL_INVALID_SAMPLER)
        NAME(CL_INVALID_BINARY)
        NAME(CL_INVALID_BUILD_OPTIONS)
        NAME(CL_INVALID_PROGRAM)
        NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        NAME(CL_INVALID_KERNEL_NAME)
        NAME(CL_INVALID_KERNEL_DEFINITION)
        NAME(CL_INVALID_KERNEL)
        NAME(CL_INVALID_ARG_INDEX)
        NAME(CL_INVALID_ARG_VALUE)
        NAME(CL_INVALID_ARG_SIZE)
        NAME(CL_INVALID_KERNEL_ARGS)
        NAME(CL_INVALID_WORK_DIMENSION)
        NAME(CL_INVALID_WORK_GROUP_SIZE)
        NAME(CL_INVALID_WORK_ITEM_SIZE)
        NAME(CL_INVALID_GLOBAL_OFFSET)
        NAME(CL_INVALID_EVENT_WAIT_LIST)
        NAME(CL_INVALID_EVENT)
        NAME(CL_INVALID_OPERATION)
        NAME(CL_INVALID_GL_OBJECT)
        NAME(CL_INVALID_BUFFER_SIZE)
        NAME(CL_INVALID_MIP_LEVEL)
        NAME(CL_INVALID_GLOBAL_WORK_SIZE)
        NAME(CL_INVALID_PROPERTY)
        NAME(CL_INVALID_IMAGE_DESCRIPTOR)
        NAME(CL_INVALID_COMPILER_OPTIONS)
        NAME(CL_INVALID_LINKER_OPTIONS)
        NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
        NAME(CL_PLATFORM_NOT_FOUND_KHR)
#undef NAME
    }
    return "CL_UNKNOWN_ERROR";
}
