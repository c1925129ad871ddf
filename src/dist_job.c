/* What both builds know of the job without asking MPI: the rank and size a
 * launcher put in the environment (so that a build without MPI can say it
 * was started by mpirun), and how long a wait between ranks may last. */
#include "dist.h"

#include <stdlib.h>

static double timeout = 300.0;

void clnet_mpi_set_timeout(double seconds) {
    timeout = seconds > 0 ? seconds : 300.0;
}

double clnet_dist_timeout(void) {
    return timeout;
}

int clnet_job_launched(int *rank) {
    static const char *vars[][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                    {"PMI_SIZE", "PMI_RANK"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *size = getenv(vars[i][0]), *r = getenv(vars[i][1]);
        if (size && atoi(size) >= 1) {
            *rank = r ? atoi(r) : 0;
            return atoi(size);
        }
    }
    *rank = 0;
    return 1;
}
