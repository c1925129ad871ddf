/* An epoch's figure watched: its best value and early stopping (PyTorch
 * Lightning's EarlyStopping), and reduce-on-plateau
 * (torch.optim.lr_scheduler.ReduceLROnPlateau as PyTorch 1.13 steps it). */
#include "error.h"

#include <math.h>
#include <string.h>

void clnet_monitor_defaults(clnet_monitor *m, int maximize) {
    if (!m) return;
    memset(m, 0, sizeof *m);
    m->maximize = maximize != 0;
    m->last = m->best = NAN;
    m->stop_best = maximize ? -INFINITY : INFINITY;
}

clnet_status clnet_monitor_observe(clnet_monitor *m, double value, int *improved, int *stop) {
    if (!m) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_monitor_observe: m is NULL");
    if (!(m->min_delta >= 0) || !isfinite(m->min_delta) || m->patience < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_monitor_observe: min_delta %g must be finite and >= 0, patience "
                          "%d >= 0",
                          m->min_delta, m->patience);
    int better =
        isfinite(value) && (isnan(m->best) || (m->maximize ? value > m->best : value < m->best));
    if (better) m->best = value, m->best_epoch = m->epochs + 1;
    m->epochs++;
    m->last = value;
    int halt = 0;
    if (!isfinite(value)) { /* Lightning's check_finite: a NaN or infinity stops at once */
        halt = 1;
    } else if (m->maximize ? value - m->min_delta > m->stop_best
                           : value + m->min_delta < m->stop_best) {
        m->stop_best = value;
        m->wait = 0;
    } else {
        halt = ++m->wait >= m->patience;
    }
    if (improved) *improved = better;
    if (stop) *stop = halt && m->patience > 0;
    return CLNET_OK;
}

void clnet_plateau_defaults(clnet_plateau *p, int maximize) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->maximize = maximize != 0;
    p->factor = 0.1;
    p->patience = 10;
    p->threshold = 1e-4;
    p->eps = 1e-8;
    p->best = maximize ? -INFINITY : INFINITY;
    p->scale = 1.0;
}

/* ReduceLROnPlateau.is_better(a, best) */
static int plateau_better(const clnet_plateau *p, double a) {
    if (p->threshold_abs)
        return p->maximize ? a > p->best + p->threshold : a < p->best - p->threshold;
    return p->maximize ? a > p->best * (1.0 + p->threshold) : a < p->best * (1.0 - p->threshold);
}

clnet_status clnet_plateau_observe(clnet_plateau *p, double metric, double lr, int *reduced) {
    if (!p) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_plateau_observe: p is NULL");
    if (!(p->factor > 0 && p->factor < 1) || p->patience < 0 || !(p->threshold >= 0) ||
        p->cooldown < 0 || !(p->min_lr >= 0) || !(p->eps >= 0))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_plateau_observe: factor %g must be in (0, 1); patience %d, "
                          "threshold %g, cooldown %d, min_lr %g and eps %g >= 0",
                          p->factor, p->patience, p->threshold, p->cooldown, p->min_lr, p->eps);
    if (!(lr > 0) || !isfinite(lr))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_plateau_observe: learning rate %g must be finite and > 0", lr);
    int made = 0;
    p->epochs++;
    if (plateau_better(p, metric)) /* a NaN is never better: a bad epoch */
        p->best = metric, p->bad_epochs = 0;
    else
        p->bad_epochs++;
    if (p->cooldown_left > 0) p->cooldown_left--, p->bad_epochs = 0; /* ignored in cooldown */
    if (p->bad_epochs > p->patience) {
        double lower = lr * p->factor, next = lower > p->min_lr ? lower : p->min_lr;
        if (lr - next > p->eps) { /* _reduce_lr */
            p->scale = next == lower ? p->scale * p->factor : p->scale * (next / lr);
            p->reductions++;
            made = 1;
        }
        p->cooldown_left = p->cooldown;
        p->bad_epochs = 0;
    }
    if (reduced) *reduced = made;
    return CLNET_OK;
}
