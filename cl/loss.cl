// Softmax with cross-entropy, fused, one work-item per sample.
// logits (n, K), labels (n). For sample b:
//   loss[b]    = log(sum_j e^(z_j - m)) - (z_label - m), m = max_j z_j (log-sum-exp: no overflow)
//   correct[b] = 1 if the first maximum of z is the label
//   probs      = softmax(z)                    (for prediction)
//   dz         = softmax(z) - onehot(label)    (the gradient of loss[b]; written when dz != 0)
// A label outside [0, K) gives loss NaN and correct -1, which the host reports.

__kernel void softmax_xent(uint n, uint K, __global const float *z, uint zoff,
                           __global const int *labels, __global float *loss,
                           __global int *correct, __global float *probs, uint poff,
                           __global float *dz, uint dzoff, uint want_grad) {
    const uint b = get_global_id(0);
    if (b >= n) return;
    __global const float *row = z + zoff + b * K;
    float m = row[0];
    uint best = 0;
    for (uint j = 1; j < K; j++)
        if (row[j] > m) {
            m = row[j];
            best = j;
        }
    float sum = 0.0f;
    for (uint j = 0; j < K; j++) sum += exp(row[j] - m);
    const float log_sum = log(sum);
    const int label = labels[b];
    if (label < 0 || label >= (int)K) {
        loss[b] = NAN;
        correct[b] = -1;
        return;
    }
    loss[b] = log_sum - (row[label] - m);
    correct[b] = best == (uint)label;
    for (uint j = 0; j < K; j++) {
        const float p = exp(row[j] - m - log_sum);
        probs[poff + b * K + j] = p;
        if (want_grad) dz[dzoff + b * K + j] = p - (j == (uint)label ? 1.0f : 0.0f);
    }
}
