/* The fuzz targets: one program per file parser, each feeding arbitrary bytes
 * to one reader of the library and freeing what it made. A reader may refuse
 * the bytes (that is its job); it must not crash, hang, leak or read out of
 * bounds.
 *
 * Each target defines LLVMFuzzerTestOneInput. Built with clang and
 * -fsanitize=fuzzer (scripts/fuzz.sh, -DCLNET_FUZZ=ON), libFuzzer drives it;
 * built normally, replay.c's main runs it over every file of the folders or
 * files it is given, so the normal suite replays the corpora under
 * tests/fuzz/corpus/ without clang. */
#ifndef CLNET_FUZZ_H
#define CLNET_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes the bytes to this process's scratch file `name` (a folder under
 * $TMPDIR made on the first call, removed at exit) and returns its path,
 * valid until the next call with the same name; NULL when it cannot. For
 * readers that take a path. */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* The scratch folder itself (made if needed); NULL when it cannot be. */
const char *fuzz_dir(void);

/* Reads every byte of p[0..bytes) (a sanitizer sees any out of bounds). */
void fuzz_use(const void *p, size_t bytes);

/* Silences the library's warnings (each damaged input would print one). */
void fuzz_quiet(void);

#endif
