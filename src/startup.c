/* The start-up report (CLNET_STARTUP=1): events kept in a table, printed
 * at exit, programs first, then first launches, then where the time went. */
#include "startup.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int device;
    int kind;        /* PROGRAM or LAUNCH */
    int from_cache;  /* a program loaded from clnet's cache */
    char family[32]; /* "conv" */
    char what[400];  /* a program's options, a launch's kernel and size */
    double seconds;  /* building, or the first launch */
    double readback; /* a program's binary read-back */
} event;

enum { PROGRAM, LAUNCH };

static event *events;
static size_t count, cap;
static int devices_count;
static double devices_seconds;
static pthread_once_t once = PTHREAD_ONCE_INIT; /* the report is printed at exit */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void print_events(int kind) {
    for (size_t i = 0; i < count; i++) {
        const event *e = &events[i];
        if (e->kind != kind) continue;
        if (kind == PROGRAM)
            fprintf(stderr, "  %2d  %-12s %7.3f %7.3f  %-6s %s\n", e->device, e->family, e->seconds,
                    e->readback, e->from_cache ? "cache" : "source",
                    *e->what ? e->what : "(no options)");
        else
            fprintf(stderr, "  %2d  %-12s %7.3f  %s\n", e->device, e->family, e->seconds, e->what);
    }
}

static void report(void) {
    double build = 0, readback = 0, launch = 0;
    size_t programs = 0, launches = 0;
    for (size_t i = 0; i < count; i++) {
        if (events[i].kind == PROGRAM) {
            programs++;
            build += events[i].seconds;
            readback += events[i].readback;
        } else {
            launches++;
            launch += events[i].seconds;
        }
    }
    fprintf(stderr, "clnet start-up report (CLNET_STARTUP=1):\n");
    fprintf(stderr,
            "programs, in the order built:\n  dev family        build readback  from   options\n");
    print_events(PROGRAM);
    fprintf(stderr, "first launches (each waited for, so they include the kernel's run):\n"
                    "  dev family       seconds  kernel [work-group size]\n");
    print_events(LAUNCH);
    fprintf(stderr,
            "total: opening %d device%s %.3f s; %zu programs %.3f s building, %.3f s reading "
            "binaries back; %zu first launches %.3f s\n",
            devices_count, devices_count == 1 ? "" : "s", devices_seconds, programs, build,
            readback, launches, launch);
    free(events);
    events = NULL;
    count = cap = 0;
}

static void report_at_exit(void) {
    atexit(report);
}

/* Whether env asks for the report, which is then printed at exit. */
static int on(const clnet_env *env) {
    if (!env->startup) return 0;
    pthread_once(&once, report_at_exit);
    return 1;
}

int clnet_startup_on(const clnet_device *d) {
    return on(d->env);
}

/* A new event, zeroed, with the lock held; NULL (lock released) when the
 * table cannot grow: the report then misses it. */
static event *add(const clnet_device *d, int kind, const char *family) {
    pthread_mutex_lock(&lock);
    if (count == cap) {
        size_t n = cap ? 2 * cap : 64;
        event *t = realloc(events, n * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        events = t, cap = n;
    }
    event *e = &events[count++];
    memset(e, 0, sizeof *e);
    e->device = d->info.index;
    e->kind = kind;
    snprintf(e->family, sizeof e->family, "%s", family);
    return e;
}

void clnet_startup_devices(const clnet_env *env, int n, double seconds) {
    if (!on(env)) return;
    pthread_mutex_lock(&lock);
    devices_count += n;
    devices_seconds += seconds;
    pthread_mutex_unlock(&lock);
}

void clnet_startup_program(const clnet_device *d, const char *family, const char *options,
                           int from_cache, double build, double readback) {
    if (!clnet_startup_on(d)) return;
    event *e = add(d, PROGRAM, family);
    if (!e) return;
    e->from_cache = from_cache;
    snprintf(e->what, sizeof e->what, "%s", options ? options : "");
    e->seconds = build;
    e->readback = readback;
    pthread_mutex_unlock(&lock);
}

void clnet_startup_launch(const clnet_device *d, const char *family, const char *name, int dims,
                          const size_t *local, double seconds) {
    if (!clnet_startup_on(d)) return;
    event *e = add(d, LAUNCH, family);
    if (!e) return;
    int n = snprintf(e->what, sizeof e->what, "%s [%s", name, local ? "" : "driver's choice");
    for (int i = 0; local && i < dims && n < (int)sizeof e->what; i++)
        n += snprintf(e->what + n, sizeof e->what - (size_t)n, i ? "x%zu" : "%zu", local[i]);
    if (n < (int)sizeof e->what) snprintf(e->what + n, sizeof e->what - (size_t)n, "]");
    e->seconds = seconds;
    pthread_mutex_unlock(&lock);
}
