// Batch normalization over x (n, C, S): channel c's n*S values are
// x[(b*C + c)*S + s]. The statistics kernels run one work-group per channel
// (local size a power of two) and add in a fixed tree order, so the results
// are the same on every run. The host merges what the devices computed
// (src/layers/batchnorm.c) and sends back what the other kernels read.

// The running statistics update must give the same floats on every device,
// whatever its compiler would contract into fused multiply-adds.
#pragma OPENCL FP_CONTRACT OFF

// Channel c's value i of n*S.
inline uint bn_index(uint i, uint c, uint C, uint S) {
    const uint b = i / S;
    return (b * C + c) * S + (i - b * S);
}

// Per channel, in two passes over the share: the mean, then the centred sum
// of squares M2 = sum (x - mean)^2. stats[c] = mean, stats[C + c] = M2.
__kernel void bn_stats(uint n, uint C, uint S, __global const float *x, uint xoff,
                       __global float *stats, uint soff, __local float *tmp) {
    const uint c = get_group_id(0), count = n * S;
    float acc = 0.0f;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0))
        acc += x[xoff + bn_index(i, c, C, S)];
    const float mean = clnet_group_sum(tmp, acc) / (float)count;
    acc = 0.0f;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0)) {
        const float d = x[xoff + bn_index(i, c, C, S)] - mean;
        acc += d * d;
    }
    const float m2 = clnet_group_sum(tmp, acc);
    if (get_local_id(0) == 0) {
        stats[soff + c] = mean;
        stats[soff + C + c] = m2;
    }
}

// y = (x - mean) * invstd * gamma + beta, with norm = (mean (C), invstd (C)).
// gamma and beta lie at params[poff], params[poff + C].
__kernel void bn_forward(uint n, uint C, uint S, __global const float *x, uint xoff,
                         __global float *y, uint yoff, __global const float *norm, uint noff,
                         __global const float *params, uint poff) {
    const uint s = get_global_id(0), bc = get_global_id(1);
    if (s >= S || bc >= n * C) return;
    const uint c = bc % C, i = bc * S + s;
    const float xhat = (x[xoff + i] - norm[noff + c]) * norm[noff + C + c];
    y[yoff + i] = xhat * params[poff + c] + params[poff + C + c];
}

// Evaluation: the running mean and variance, at buffers[moff], buffers[voff].
__kernel void bn_forward_eval(uint n, uint C, uint S, __global const float *x, uint xoff,
                              __global float *y, uint yoff, __global const float *buffers,
                              uint moff, uint voff, __global const float *params, uint poff,
                              float eps) {
    const uint s = get_global_id(0), bc = get_global_id(1);
    if (s >= S || bc >= n * C) return;
    const uint c = bc % C, i = bc * S + s;
    const float invstd = 1.0f / sqrt(buffers[voff + c] + eps);
    const float xhat = (x[xoff + i] - buffers[moff + c]) * invstd;
    y[yoff + i] = xhat * params[poff + c] + params[poff + C + c];
}

// running = (1 - momentum) * running + momentum * batch, for the mean (at
// buffers[moff]) and the variance (buffers[voff]): batch = (mean (C),
// unbiased variance (C)) of the whole step, as the host merged them.
__kernel void bn_running(uint C, __global float *buffers, uint moff, uint voff,
                         __global const float *batch, uint boff, float momentum) {
    const uint c = get_global_id(0);
    if (c >= C) return;
    const float keep = 1.0f - momentum;
    buffers[moff + c] = keep * buffers[moff + c] + momentum * batch[boff + c];
    buffers[voff + c] = keep * buffers[voff + c] + momentum * batch[boff + C + c];
}

// Per channel over the share: sums[c] = sum dy, sums[C + c] = sum dy * xhat.
// They are also this share's gradients of beta and gamma (added to what the
// gradient buffer holds when accumulate is set).
__kernel void bn_backward_sums(uint n, uint C, uint S, __global const float *x, uint xoff,
                               __global const float *dy, uint dyoff, __global const float *norm,
                               uint noff, __global float *sums, uint soff, __global float *grads,
                               uint goff, uint accumulate, __local float *tmp) {
    const uint c = get_group_id(0), count = n * S;
    const float mean = norm[noff + c], invstd = norm[noff + C + c];
    float a = 0.0f, b = 0.0f;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0)) {
        const uint k = bn_index(i, c, C, S);
        const float g = dy[dyoff + k];
        a += g;
        b += g * ((x[xoff + k] - mean) * invstd);
    }
    const float sum_dy = clnet_group_sum(tmp, a);
    const float sum_dy_xhat = clnet_group_sum(tmp, b);
    if (get_local_id(0) == 0) {
        sums[soff + c] = sum_dy;
        sums[soff + C + c] = sum_dy_xhat;
        grads[goff + c] = accumulate ? grads[goff + c] + sum_dy_xhat : sum_dy_xhat;
        grads[goff + C + c] = accumulate ? grads[goff + C + c] + sum_dy : sum_dy;
    }
}

// dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), with the
// means over the normalized batch: means = (mean dy (C), mean dy*xhat (C)).
__kernel void bn_backward_dx(uint n, uint C, uint S, __global const float *x, uint xoff,
                             __global const float *dy, uint dyoff, __global float *dx, uint dxoff,
                             __global const float *norm, uint noff, __global const float *means,
                             uint moff, __global const float *params, uint poff) {
    const uint s = get_global_id(0), bc = get_global_id(1);
    if (s >= S || bc >= n * C) return;
    const uint c = bc % C, i = bc * S + s;
    const float invstd = norm[noff + C + c];
    const float xhat = (x[xoff + i] - norm[noff + c]) * invstd;
    const float g = dy[dyoff + i] - means[moff + c] - xhat * means[moff + C + c];
    clnet_store_dx(&dx[dxoff + i], params[poff + c] * invstd * g);
}
