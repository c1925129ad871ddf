/* The tuning database reader: lines, fields, numbers, CRCs; entries of the
 * device "fuzz-device" over the candidates "fuzz-space" are kept, other
 * devices' skipped, stale and damaged ones discarded. */
#include "fuzz.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_file("tune.db", data, size);
    clnet_tune_table table = {0};
    int discarded = 0;
    if (path) (void)clnet_tune_db_read(path, "fuzz-device", "fuzz-space", &table, &discarded);
    for (int i = 0; i < table.count; i++)
        (void)clnet_tune_table_find(&table, table.entries[i].key, table.entries[i].bucket);
    clnet_tune_table_free(&table);
    return 0;
}
