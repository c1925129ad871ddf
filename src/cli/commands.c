/* Every command's table (cli.h). */
#include "cli.h"

#include <stddef.h>

const cli_command *const cli_commands[] = {
    &cli_devices_cmd, &cli_train_cmd, &cli_eval_cmd,
    &cli_predict_cmd, &cli_bench_cmd, &cli_tune_cmd,
    &cli_layers_cmd,  &cli_warm_cmd,  &cli_export_cmd,
    &cli_summary_cmd, NULL,
};
