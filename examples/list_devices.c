/* The worked example from the top of clnet.h: list the devices clnet would
 * use (honouring $CLNET_DEVICES) and check that each runs clnet's kernels. */
#include <clnet.h>
#include <stdio.h>

int main(void) {
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) { /* NULL: $CLNET_DEVICES or "all" */
        fprintf(stderr, "clnet: %s\n", clnet_last_error());
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, i, &info);
        clnet_status s = clnet_runtime_device_check(rt, i);
        printf("%d %s: %s\n", info.index, info.name, s == CLNET_OK ? "ok" : clnet_last_error());
        failed += s != CLNET_OK;
    }
    clnet_runtime_free(rt);
    return failed ? 1 : 0;
}
