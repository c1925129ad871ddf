/* Links clnet from an installed prefix, prints the version and checks every
 * selected device. Exit status 0 when all devices pass. */
#include <clnet.h>
#include <stdio.h>

int main(void) {
    printf("clnet %s (header %d.%d.%d)\n", clnet_version(), CLNET_VERSION_MAJOR,
           CLNET_VERSION_MINOR, CLNET_VERSION_PATCH);
    clnet_runtime *rt = NULL;
    if (clnet_runtime_create(&rt, NULL) != CLNET_OK) {
        fprintf(stderr, "consumer: %s\n", clnet_last_error());
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < clnet_runtime_device_count(rt); i++) {
        clnet_device_info info;
        clnet_runtime_device_info(rt, i, &info);
        clnet_status s = clnet_runtime_device_check(rt, i);
        printf("device %d %s: %s\n", info.index, info.name,
               s == CLNET_OK ? "ok" : clnet_last_error());
        bad |= s != CLNET_OK;
    }
    clnet_runtime_free(rt);
    return bad;
}
