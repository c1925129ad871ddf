#include "elementwise_ref.h"

#include <math.h>

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

void ref_gemm(int ta, int tb, size_t M, size_t N, size_t K, double alpha, const float *A,
              size_t lda, const float *B, size_t ldb, double beta, float *C, size_t ldc,
              double *bound) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            double s = 0, mag = 0;
            for (size_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + m] : A[m * lda + k];
                double b = tb ? B[n * ldb + k] : B[k * ldb + n];
                s += a * b;
                mag += fabs(a * b);
            }
            double c = alpha * s;
            if (beta != 0) c += beta * C[m * ldc + n], mag += fabs(beta * C[m * ldc + n]);
            C[m * ldc + n] = (float)c;
            if (bound) bound[m * N + n] = fabs(alpha) * mag;
        }
}
