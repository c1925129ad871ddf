#include "elementwise_ref.h"

void ref_fill(float *x, size_t n, float value) {
    for (size_t i = 0; i < n; i++) x[i] = value;
}

void ref_scale(float *x, size_t n, float alpha) {
    for (size_t i = 0; i < n; i++) x[i] *= alpha;
}

void ref_axpy(size_t n, float alpha, const float *x, float *y) {
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

double ref_sum(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}
