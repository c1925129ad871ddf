/* The public picture of training curves, drawn by the plot module. */
#include "error.h"
#include "plot.h"

clnet_status clnet_write_curves_svg(const char *path, const char *title, const double *epoch,
                                    const double *train_loss, const double *train_accuracy,
                                    const double *test_accuracy, int n) {
    if (!path || !epoch || !train_loss || !train_accuracy || n < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_write_curves_svg: no points to draw");
    clnet_plot_series loss[] = {{"train", epoch, train_loss, n}};
    clnet_plot_series acc[] = {{"train", epoch, train_accuracy, n},
                               {"test", epoch, test_accuracy, n}};
    return clnet_plot_svg(path, title ? title : "training", "epoch", loss, 1, acc,
                          test_accuracy ? 2 : 1);
}

clnet_status clnet_write_loss_curves_svg(const char *path, const char *title, const double *epoch,
                                         const double *train_loss, const double *test_loss, int n) {
    if (!path || !epoch || !train_loss || n < 1)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_write_loss_curves_svg: no points to draw");
    clnet_plot_series loss[] = {{"train", epoch, train_loss, n}, {"test", epoch, test_loss, n}};
    return clnet_plot_svg(path, title ? title : "training", "epoch", loss, test_loss ? 2 : 1, NULL,
                          0);
}
