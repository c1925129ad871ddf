/* Counted host allocation and the debug counters. */
#include "alloc.h"
#include "clnet.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_ullong host_allocs, device_allocs, threads, builds, lookups, first_launches, launches,
    waits, overlaps;

void *clnet_malloc(size_t bytes) {
    atomic_fetch_add_explicit(&host_allocs, 1, memory_order_relaxed);
    return malloc(bytes);
}

void *clnet_calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&host_allocs, 1, memory_order_relaxed);
    return calloc(count, size);
}

void *clnet_realloc(void *p, size_t bytes) {
    atomic_fetch_add_explicit(&host_allocs, 1, memory_order_relaxed);
    return realloc(p, bytes);
}

void clnet_count_thread(void) {
    atomic_fetch_add_explicit(&threads, 1, memory_order_relaxed);
}

void clnet_count_device_alloc(void) {
    atomic_fetch_add_explicit(&device_allocs, 1, memory_order_relaxed);
}

void clnet_count_build(void) {
    atomic_fetch_add_explicit(&builds, 1, memory_order_relaxed);
}

void clnet_count_lookup(void) {
    atomic_fetch_add_explicit(&lookups, 1, memory_order_relaxed);
}

void clnet_count_first_launch(void) {
    atomic_fetch_add_explicit(&first_launches, 1, memory_order_relaxed);
}

void clnet_count_launch(void) {
    atomic_fetch_add_explicit(&launches, 1, memory_order_relaxed);
}

void clnet_count_wait(void) {
    atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
}

void clnet_count_overlap(void) {
    atomic_fetch_add_explicit(&overlaps, 1, memory_order_relaxed);
}

void clnet_debug_counters(clnet_counters *out) {
    if (!out) return;
    out->host_allocs = atomic_load(&host_allocs);
    out->device_allocs = atomic_load(&device_allocs);
    out->threads = atomic_load(&threads);
    out->builds = atomic_load(&builds);
    out->lookups = atomic_load(&lookups);
    out->first_launches = atomic_load(&first_launches);
    out->launches = atomic_load(&launches);
    out->waits = atomic_load(&waits);
    out->overlaps = atomic_load(&overlaps);
}
