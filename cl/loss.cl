// Softmax with cross-entropy, fused, one work-item per sample.
// logits (n, K), labels (n). For sample b:
//   loss[b]    = log(sum_j e^(z_j - m)) - (z_label - m), m = max_j z_j (log-sum-exp: no overflow)
//   correct[b] = 1 if the first maximum of z is the label
//   probs      = softmax(z)                    (for prediction)
//   dz         = softmax(z) - onehot(label)    (the gradient of loss[b]; written when dz != 0)
// With label smoothing eps (PyTorch's cross_entropy(..., label_smoothing=eps)) the target
// is (1 - eps) onehot + eps / K:
//   loss[b]    = (1 - eps) (log_sum - (z_label - m)) + eps (log_sum - (1/K) sum_j (z_j - m))
//   dz         = softmax(z) - (1 - eps) onehot(label) - eps / K
// (eps 0 gives the plain loss and gradient bit for bit).
// A label outside [0, K) gives loss NaN and correct -1, which the host reports;
// the probabilities are written whatever the labels hold.

__kernel void softmax_xent(uint n, uint K, __global const float *z, uint zoff,
                           __global const int *labels, __global float *loss,
                           __global int *correct, __global float *probs, uint poff,
                           __global float *dz, uint dzoff, uint want_grad, float eps) {
    const uint b = get_global_id(0);
    if (b >= n) return;
    __global const float *row = z + zoff + b * K;
    const float spread = eps / (float)K;
    float m = row[0];
    uint best = 0;
    for (uint j = 1; j < K; j++)
        if (row[j] > m) {
            m = row[j];
            best = j;
        }
    float sum = 0.0f, shifted = 0.0f; // shifted: sum_j (z_j - m)
    for (uint j = 0; j < K; j++) {
        sum += exp(row[j] - m);
        shifted += row[j] - m;
    }
    const float log_sum = log(sum);
    const int label = labels[b], valid = label >= 0 && label < (int)K;
    loss[b] = valid ? (1.0f - eps) * (log_sum - (row[label] - m)) +
                          eps * (log_sum - shifted / (float)K)
                    : NAN;
    correct[b] = valid ? best == (uint)label : -1;
    for (uint j = 0; j < K; j++) { // probabilities always: prediction reads them
        const float p = exp(row[j] - m - log_sum);
        probs[poff + b * K + j] = p;
        if (want_grad)
            dz[dzoff + b * K + j] = p - (valid && j == (uint)label ? 1.0f - eps : 0.0f) - spread;
    }
}

// Cross-entropy at every position (softmax_cross_entropy per=position),
// one work-item per sample: z (n, K, P) holds K class scores at each of P
// positions, t (n, P) the class of each position as a float. probs gets the
// softmax over the classes at each position, always (prediction reads it,
// with no classes given: t then holds anything); loss[b] is the mean over b's
// positions of -log softmax(z[b, :, p])[t], correct[b] the positions whose
// first maximum is the class, and dz the gradient of loss[b],
// (softmax - onehot) / P. A target that is not a class gives NaN and -1. With
// label smoothing eps each position's loss and gradient are softmax_xent's above.
__kernel void softmax_xent_positions(uint n, uint K, uint P, __global const float *z, uint zoff,
                                     __global const float *t, __global float *loss,
                                     __global int *correct, __global float *probs, uint poff,
                                     __global float *dz, uint dzoff, uint want_grad,
                                     float eps) {
    const uint b = get_global_id(0);
    if (b >= n) return;
    const size_t base = (size_t)b * K * P;
    const float share = 1.0f / (float)P, spread = eps / (float)K;
    float sum_loss = 0.0f;
    int right = 0, bad = 0;
    for (uint p = 0; p < P; p++) {
        __global const float *at = z + zoff + base + p; // class j at at[j * P]
        const float target = t[(size_t)b * P + p];
        const int valid = target >= 0.0f && target < (float)K && target == floor(target);
        const uint label = valid ? (uint)target : K; // K: no class
        bad |= !valid;
        float m = at[0];
        uint best = 0;
        for (uint j = 1; j < K; j++)
            if (at[j * P] > m) {
                m = at[j * P];
                best = j;
            }
        float sum = 0.0f, shifted = 0.0f; // shifted: sum_j (z_j - m)
        for (uint j = 0; j < K; j++) {
            sum += exp(at[j * P] - m);
            shifted += at[j * P] - m;
        }
        const float log_sum = log(sum);
        if (valid)
            sum_loss += (1.0f - eps) * (log_sum - (at[label * P] - m)) +
                        eps * (log_sum - shifted / (float)K);
        right += best == label;
        for (uint j = 0; j < K; j++) {
            const float q = exp(at[j * P] - m - log_sum);
            const size_t i = base + (size_t)j * P + p;
            probs[poff + i] = q;
            if (want_grad) dz[dzoff + i] = (q - (j == label ? 1.0f - eps : 0.0f) - spread) * share;
        }
    }
    loss[b] = bad ? NAN : sum_loss * share;
    correct[b] = bad ? -1 : right;
}

// Regression and reconstruction losses, one work-item per sample: the
// prediction z (n, E) against the target t (n, E), each sample's loss the MEAN
// over its E elements of
//   mse:             (z - t)^2
//   l1:              |z - t|
//   bce_with_logits: max(z, 0) - z t + log(1 + e^-|z|)   (no overflow for any z)
// so that the mean over the batch is PyTorch's mean over all elements. out is
// z itself (mse, l1) or sigmoid(z) (bce_with_logits): what `predict` gives.
// With want_grad, dz (and dt where want_target: the target's own gradient, for
// a target that is a layer's output) get the gradient of loss[b], overwritten
// or added to as clnet_store_dx says. There are no correct answers: correct 0.
#define LOSS_MSE 0
#define LOSS_L1 1
#define LOSS_BCE 2

inline float point_loss(uint kind, float z, float t, float *dz, float *dt) {
    const float d = z - t;
    if (kind == LOSS_MSE) {
        *dz = 2.0f * d;
        *dt = -2.0f * d;
        return d * d;
    }
    if (kind == LOSS_L1) {
        *dz = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f; // sign, 0 at 0 as PyTorch
        *dt = -*dz;
        return fabs(d);
    }
    const float e = exp(-fabs(z));
    const float sig = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    *dz = sig - t;
    *dt = -z;
    return fmax(z, 0.0f) - z * t + log1p(e);
}

__kernel void regression_loss(uint n, uint E, uint kind, __global const float *z, uint zoff,
                              __global const float *t, uint toff, __global float *loss,
                              __global int *correct, __global float *out, uint ooff,
                              __global float *dz, uint dzoff, uint dzadd, __global float *dt,
                              uint dtoff, uint dtadd, uint want_grad, uint want_target) {
    const uint b = get_global_id(0);
    if (b >= n) return;
    const float scale = 1.0f / (float)E;
    float sum = 0.0f;
    for (uint j = 0; j < E; j++) {
        const size_t at = (size_t)b * E + j;
        const float zj = z[zoff + at];
        float gz, gt;
        sum += point_loss(kind, zj, t[toff + at], &gz, &gt);
        if (want_grad) clnet_store_dx(dz + dzoff + at, gz * scale, dzadd);
        if (want_grad && want_target) clnet_store_dx(dt + dtoff + at, gt * scale, dtadd);
        out[ooff + at] = kind == LOSS_BCE ? 1.0f / (1.0f + exp(-zj)) : zj;
    }
    loss[b] = sum * scale;
    correct[b] = 0;
}
