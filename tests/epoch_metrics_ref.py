#!/usr/bin/env python3
"""The references of test_optim.c's epoch-metric cases: PyTorch's own
torch.optim.lr_scheduler.ReduceLROnPlateau, and PyTorch Lightning's
EarlyStopping decision (pytorch_lightning/callbacks/early_stopping.py,
_evaluate_stopping_criteria with check_finite=True, its comparisons on torch
tensors; transcribed, Lightning not being installed) with the best-so-far
that --save-best keeps (strictly better than every earlier value).

usage: epoch_metrics_ref.py CASES_FILE
Each line of CASES_FILE is one case (numbers as C's %.17g writes them):
  maximize factor patience threshold threshold_abs cooldown min_lr eps lr0
  min_delta es_patience n v1 ... vn
For each case it prints one line of n results, separated by ';', each
  lr best num_bad_epochs cooldown_counter es_stop es_best es_wait improved
after scheduler.step(v) and the early-stopping decision on v.
Run with Debian's Python and its python3-torch (1.13)."""
import math
import sys

import torch


class EarlyStopping:
    """Lightning's EarlyStopping, the parts that decide (mode, min_delta, patience)."""

    def __init__(self, mode, min_delta, patience):
        self.monitor_op = torch.gt if mode == "max" else torch.lt
        self.min_delta = torch.tensor(min_delta if mode == "max" else -min_delta,
                                      dtype=torch.float64)
        self.patience = patience
        inf = torch.tensor(math.inf, dtype=torch.float64)
        self.best_score = -inf if mode == "max" else inf
        self.wait_count = 0

    def evaluate(self, current):
        current = torch.tensor(current, dtype=torch.float64)
        should_stop = False
        if not torch.isfinite(current):
            should_stop = True
        elif self.monitor_op(current - self.min_delta, self.best_score):
            self.best_score = current
            self.wait_count = 0
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                should_stop = True
        return should_stop


def run(fields):
    maximize, factor, patience, threshold, threshold_abs, cooldown = fields[:6]
    min_lr, eps, lr0, min_delta, es_patience, n = fields[6:12]
    values = fields[12:12 + int(n)]
    mode = "max" if int(maximize) else "min"
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=lr0)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode=mode, factor=factor, patience=int(patience), threshold=threshold,
        threshold_mode="abs" if int(threshold_abs) else "rel", cooldown=int(cooldown),
        min_lr=min_lr, eps=eps)
    es = EarlyStopping(mode, min_delta, int(es_patience))
    best, out = math.nan, []
    for v in values:
        sched.step(v)
        stop = es.evaluate(v)
        better = math.isfinite(v) and (math.isnan(best) or (v > best if mode == "max" else v < best))
        if better:
            best = v
        out.append("%.17g %.17g %d %d %d %.17g %d %d" % (
            opt.param_groups[0]["lr"], sched.best, sched.num_bad_epochs, sched.cooldown_counter,
            stop, float(es.best_score), es.wait_count, better))
    return ";".join(out)


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                print(run([float(x) for x in line.split()]))


if __name__ == "__main__":
    main()
