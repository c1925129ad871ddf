/* Host memory for the library, counted. Every allocation clnet makes goes
 * through these, and so do thread starts and device buffers (counted where
 * they happen), so a test can prove that a steady-state training step
 * allocates nothing (clnet_debug_counters in clnet.h). */
#ifndef CLNET_ALLOC_H
#define CLNET_ALLOC_H

#include <stddef.h>

void *clnet_malloc(size_t bytes);
void *clnet_calloc(size_t count, size_t size);
void *clnet_realloc(void *p, size_t bytes);

/* Counts one thread start or one device buffer (memory.c, worker.c, data.c). */
void clnet_count_thread(void);
void clnet_count_device_alloc(void);
/* Counts one program build and one kernel look-up by name (program.c). */
void clnet_count_build(void);
void clnet_count_lookup(void);
void clnet_count_first_launch(void);
void clnet_count_launch(void); /* every kernel enqueued */
/* Counts one time the host waits for a device's queue to drain: a finish, a
 * blocking transfer or a blocking map (memory.c's clnet_finish and copies). */
void clnet_count_wait(void);
/* Counts one exchange with other devices during which its device ran other
 * work (replica.c's exchanges on their way). */
void clnet_count_overlap(void);

#endif
