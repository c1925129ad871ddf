/* The tuning database: which candidate won an operation on a device.
 *
 * One text file, `tune.db` in the kernel cache's folder, shared by every
 * device and process. One line per entry, tab-separated:
 *
 *   clnet-tune-1  DEVICE  SPACE  KEY  BUCKET  CHOICE  MICROSECONDS  CRC
 *
 * DEVICE names the device, its driver and platform; SPACE is a hash of the
 * candidates the device had when the entry was measured (their kernels'
 * source and parameters); KEY is the operation and its per-sample shape
 * ("gemm NT M=50 N=500 K=676n": n is the number of samples); BUCKET the
 * power of two the samples were rounded up to (0: no dimension follows the
 * batch); CRC the CRC-32 of everything before it on the line, in hex.
 *
 * Reading checks every line: a damaged or truncated line, or an entry of
 * this device measured over other candidates (a stale one), is discarded
 * with a warning and counts as never measured. Writing merges under a lock
 * (flock on tune.db.lock) and replaces the file atomically, so two processes
 * tuning at once leave a valid file holding both their entries, and an
 * interrupted write loses nothing. Deleting the file is always safe. */
#ifndef CLNET_TUNE_H
#define CLNET_TUNE_H

#include "clnet.h"

#include <stddef.h>

#define CLNET_TUNE_KEY_CAP    96
#define CLNET_TUNE_CHOICE_CAP 48

typedef struct {
    char key[CLNET_TUNE_KEY_CAP];
    int bucket;
    char choice[CLNET_TUNE_CHOICE_CAP];
    double us; /* the winner's time, microseconds */
} clnet_tune_entry;

typedef struct {
    clnet_tune_entry *entries;
    int count, cap;
} clnet_tune_table;

/* "<folder>/tune.db". */
void clnet_tune_db_path(const char *folder, char *out, size_t cap);

/* Adds this device's entries of the file at `path` to `table` (a missing
 * file adds none). Damaged lines and stale entries only warn; *discarded
 * (may be NULL) counts them. Fails only when out of memory. */
clnet_status clnet_tune_db_read(const char *path, const char *device, const char *space,
                                clnet_tune_table *table, int *discarded);

/* Merges `count` entries of this device into the file: an entry replaces
 * one with the same key and bucket; this device's damaged and stale lines
 * are dropped, other devices' lines kept as they are. */
clnet_status clnet_tune_db_write(const char *path, const char *device, const char *space,
                                 const clnet_tune_entry *entries, int count);

/* Sets (adds or replaces) an entry of a table. */
clnet_status clnet_tune_table_set(clnet_tune_table *t, const clnet_tune_entry *e);

/* The entry for `key` whose bucket is nearest `bucket` (by factors of two;
 * the larger on a tie), or NULL. */
const clnet_tune_entry *clnet_tune_table_find(const clnet_tune_table *t, const char *key,
                                              int bucket);

void clnet_tune_table_free(clnet_tune_table *t);

/* The power of two at or above n (0 for n <= 0). */
int clnet_tune_bucket(int n);

#endif
