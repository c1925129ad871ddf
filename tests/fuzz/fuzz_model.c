/* The model-file parser: lines, options, values, names and inputs, and the
 * shapes they make (sizes whose products overflow included). */
#include "fuzz.h"

#include "clnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_file("model.cfg", data, size);
    clnet_net *net = NULL;
    if (path && clnet_net_load(&net, path) == CLNET_OK) (void)clnet_net_param_count(net);
    clnet_net_free(net);
    return 0;
}
