/* The test hooks (fault.h): parsed once, asked by the step, async
 * training, calibration and saves. */
#include "fault.h"
#include "alloc.h"
#include "clock.h"
#include "error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLNET_THROTTLE: "INDEX:FACTOR[,...]" (a factor below 1 counts as 1). */
static clnet_status parse_throttle(clnet_faults *f, const char *text, const int *device_index) {
    const char *var = "CLNET_THROTTLE";
    if (!text || !*text) return CLNET_OK;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long index = strtol(p, &end, 10);
        if (end == p || *end != ':')
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s='%s': expected INDEX:VALUE[,...]",
                              var, text);
        p = end + 1;
        double value = strtod(p, &end);
        if (end == p || errno || !(value >= 0))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s='%s': expected INDEX:VALUE[,...]",
                              var, text);
        for (int i = 0; i < f->n; i++)
            if (device_index[i] == index) f->throttle[i] = value < 1 ? 1 : value;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s='%s': expected INDEX:VALUE[,...]",
                              var, text);
    }
    return CLNET_OK;
}

static const char *const fault_points[] = {"start", "kernels", "transfer", "reduce", "drift", NULL};

/* CLNET_FAULT: "INDEX:STEP[:POINT][,...]". */
static clnet_status parse_faults(clnet_faults *f, const char *text, const int *device_index) {
    for (const char *p = text; p && *p;) {
        char *end = NULL;
        long index = strtol(p, &end, 10),
             step = end > p && *end == ':' ? strtol(end + 1, &end, 10) : -1;
        int point = CLNET_FAULT_START;
        if (step >= 0 && *end == ':') {
            size_t len = strcspn(end + 1, ",");
            point = -1;
            for (int k = 0; fault_points[k]; k++)
                if (strlen(fault_points[k]) == len && !strncmp(end + 1, fault_points[k], len))
                    point = k;
            end += 1 + len;
        }
        if (step < 0 || point < 0 || (*end && *end != ','))
            return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                              "CLNET_FAULT='%s': expected INDEX:STEP[:POINT][,...] with POINT one "
                              "of start, kernels, transfer, reduce, drift",
                              text);
        for (int i = 0; i < f->n; i++)
            if (device_index[i] == index) f->step[i] = step, f->point[i] = point;
        p = *end ? end + 1 : end;
    }
    return CLNET_OK;
}

clnet_status clnet_faults_init(clnet_faults *f, const clnet_env *env, const int *device_index,
                               int n) {
    memset(f, 0, sizeof *f);
    f->n = n;
    f->throttle = clnet_calloc((size_t)n, sizeof *f->throttle);
    f->step = clnet_calloc((size_t)n, sizeof *f->step);
    f->point = clnet_calloc((size_t)n, sizeof *f->point);
    if (!f->throttle || !f->step || !f->point) {
        clnet_faults_free(f);
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < n; i++) f->throttle[i] = 1, f->step[i] = -1;
    clnet_status s = parse_throttle(f, env->throttle, device_index);
    if (s == CLNET_OK) s = parse_faults(f, env->fault, device_index);
    if (s != CLNET_OK) clnet_faults_free(f);
    return s;
}

void clnet_faults_free(clnet_faults *f) {
    free(f->throttle);
    free(f->step);
    free(f->point);
    memset(f, 0, sizeof *f);
}

/* The point is compared first: replica i's worker and the host's reducer
 * never touch the same replica's step at once (their points differ). */
int clnet_fault(clnet_faults *f, int i, int64_t step, clnet_fault_point point) {
    if (f->point[i] != (int)point || f->step[i] < 0 || f->step[i] > step) return 0;
    f->step[i] = -1; /* once: a step tried again goes through */
    return 1;
}

double clnet_throttle_factor(const clnet_faults *f, int i) {
    return f->throttle[i];
}

void clnet_throttle_wait(const clnet_faults *f, int i, double seconds) {
    clnet_sleep((f->throttle[i] - 1) * seconds);
}

void clnet_save_pause(const clnet_env *env) {
    const char *ms = env->save_pause;
    long n = ms ? strtol(ms, NULL, 10) : 0;
    if (n > 0) nanosleep(&(struct timespec){n / 1000, (n % 1000) * 1000000L}, NULL);
}

void clnet_loader_fault_arm(clnet_loader_fault *f, int epoch, int64_t position) {
    *f = (clnet_loader_fault){1, epoch, position};
}

int clnet_loader_fault_fires(clnet_loader_fault *f, int epoch, int64_t position) {
    if (!f->armed || f->epoch != epoch || f->position != position) return 0;
    f->armed = 0;
    return 1;
}
