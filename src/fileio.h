/* Writing a file atomically: a temporary file next to it (O_EXCL, mode 0666
 * less the umask), the contents, fsync, rename, then a sync of the folder.
 * Until commit succeeds the file at `path` is untouched, and abort removes
 * the temporary file, so a failed or interrupted save never damages what was
 * there. */
#ifndef CLNET_FILEIO_H
#define CLNET_FILEIO_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *path;
    char *tmp;
    int fd;
} clnet_atomic_file;

clnet_status clnet_atomic_open(clnet_atomic_file *f, const char *path);
clnet_status clnet_atomic_write(clnet_atomic_file *f, const void *data, size_t n);
clnet_status clnet_atomic_commit(clnet_atomic_file *f);
/* Closes and removes the temporary file if it is still there; harmless
 * after commit, and on a file never opened (all zeros). */
void clnet_atomic_abort(clnet_atomic_file *f);

/* Removes the temporary files of `path` that a process killed during a
 * save left (path.tmp.PID.N whose PID no longer runs); those of a running
 * process stay. */
void clnet_atomic_clean_stale(const char *path);

/* Checksums of file contents and keys: FNV-1a (64-bit; start from
 * CLNET_FNV_BASIS, or chain a previous result) and zlib's CRC-32. */
#define CLNET_FNV_BASIS 14695981039346656037ull
uint64_t clnet_fnv1a(const void *data, size_t n, uint64_t h);
uint32_t clnet_crc32(const void *data, size_t n);

/* A whole regular file into malloc'd memory (*bytes, *size); CLNET_ERR_IO
 * naming the file when it cannot be read. */
clnet_status clnet_read_file(const char *path, unsigned char **bytes, size_t *size);

/* mkdir -p: 0 when the folder exists afterwards, -1 (errno set) when not. */
int clnet_make_dirs(const char *dir);

#endif
