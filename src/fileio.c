/* Atomic file writes, shared by checkpoints, the kernel cache and plots. */
#include "alloc.h"
#include "fileio.h"
#include "error.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

clnet_status clnet_atomic_open(clnet_atomic_file *f, const char *path) {
    static atomic_uint serial;
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = path;
    size_t cap = strlen(path) + 48;
    f->tmp = clnet_malloc(cap);
    if (!f->tmp) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (int attempt = 0; f->fd < 0; attempt++) {
        snprintf(f->tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1u));
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd < 0 && (errno != EEXIST || attempt >= 100)) {
            clnet_status s =
                clnet_fail(CLNET_ERR_IO, "%s: cannot create a temporary file next to it: %s", path,
                           strerror(errno));
            free(f->tmp);
            f->tmp = NULL;
            return s;
        }
    }
    return CLNET_OK;
}

clnet_status clnet_atomic_write(clnet_atomic_file *f, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return clnet_fail(CLNET_ERR_IO, "%s: writing %s failed: %s", f->path, f->tmp,
                              strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return CLNET_OK;
}

/* Makes the folder entry durable too; a failure here cannot undo the rename,
 * so it is ignored (the data itself was synced before). */
static void sync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

clnet_status clnet_atomic_commit(clnet_atomic_file *f) {
    clnet_status status = CLNET_OK;
    if (fsync(f->fd) != 0)
        FAIL(CLNET_ERR_IO, "%s: fsync of %s failed: %s", f->path, f->tmp, strerror(errno));
    int closed = close(f->fd);
    f->fd = -1;
    if (closed != 0)
        FAIL(CLNET_ERR_IO, "%s: closing %s failed: %s", f->path, f->tmp, strerror(errno));
    if (rename(f->tmp, f->path) != 0)
        FAIL(CLNET_ERR_IO, "%s: renaming %s into place failed: %s", f->path, f->tmp,
             strerror(errno));
    free(f->tmp);
    f->tmp = NULL;
    sync_folder(f->path);
cleanup:
    return status;
}

void clnet_atomic_abort(clnet_atomic_file *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (f->tmp) unlink(f->tmp);
    free(f->tmp);
    f->tmp = NULL;
}

void clnet_atomic_clean_stale(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096], prefix[1024];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1,
             slash ? path : ".");
    snprintf(prefix, sizeof prefix, "%s.tmp.", slash ? slash + 1 : path);
    DIR *d = opendir(dir);
    if (!d) return;
    size_t plen = strlen(prefix);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, plen) != 0) continue;
        char *end = NULL;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || *end != '.') continue;                    /* not a temporary file of ours */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* its process runs */
        char stale[4096 + 256];
        snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
        if (unlink(stale) == 0) clnet_warn("removed %s, left by a save that was killed", stale);
    }
    closedir(d);
}

int clnet_make_dirs(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

uint64_t clnet_fnv1a(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint32_t clnet_crc32(const void *data, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *p = data;
    /* zlib takes uInt lengths: feed it in pieces. */
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

clnet_status clnet_read_file(const char *path, unsigned char **bytes, size_t *size) {
    clnet_status status = CLNET_OK;
    struct stat st;
    unsigned char *p = NULL;
    FILE *fp = fopen(path, "rb");
    *bytes = NULL;
    *size = 0;
    if (!fp) FAIL(CLNET_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(fp), &st) != 0)
        FAIL(CLNET_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) FAIL(CLNET_ERR_IO, "%s: not a regular file", path);
    p = clnet_malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!p)
        FAIL(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory for %lld bytes", path,
             (long long)st.st_size);
    if (fread(p, 1, (size_t)st.st_size, fp) != (size_t)st.st_size)
        FAIL(CLNET_ERR_IO, "%s: read failed: %s", path,
             ferror(fp) ? strerror(errno) : "the file shrank while being read");
    *bytes = p;
    *size = (size_t)st.st_size;
    p = NULL;
cleanup:
    if (fp) fclose(fp);
    free(p);
    return status;
}
