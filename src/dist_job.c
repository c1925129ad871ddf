/* What both builds know of the job without asking MPI: the rank and size a
 * launcher put in the environment (read by env.c, so that a build without
 * MPI can say it was started by mpirun), and how long a wait between ranks
 * may last. */
#include "dist.h"
#include "env.h"

static double timeout = 300.0;

void clnet_mpi_set_timeout(double seconds) {
    timeout = seconds > 0 ? seconds : 300.0;
}

double clnet_dist_timeout(void) {
    return timeout;
}

clnet_status clnet_job_launched(int *size, int *rank) {
    clnet_env env;
    clnet_status s = clnet_env_read(&env);
    *size = s == CLNET_OK ? env.job_size : 1;
    *rank = s == CLNET_OK ? env.job_rank : 0;
    clnet_env_free(&env);
    return s;
}
