// Activations, elementwise over x, y (count). Backward passes use the
// forward's output y, which is all each derivative needs. dx is overwritten,
// or added to with add = 1 (clnet_store_dx).

__kernel void relu_forward(uint count, __global const float *x, uint xoff, __global float *y,
                           uint yoff) {
    const uint i = get_global_id(0);
    if (i < count) y[yoff + i] = fmax(x[xoff + i], 0.0f);
}

// Forward was y = max(x, 0), so dx = dy where y > 0, else 0.
__kernel void relu_backward(uint count, __global const float *dy, uint dyoff,
                            __global const float *y, uint yoff, __global float *dx, uint dxoff,
                            uint add) {
    const uint i = get_global_id(0);
    if (i < count) clnet_store_dx(dx + dxoff + i, y[yoff + i] > 0.0f ? dy[dyoff + i] : 0.0f, add);
}

// y = max(a + b, 0): the last input of an add that took in the relu after it
// (src/layers/add.c); a may be y itself.
__kernel void add_relu_forward(uint count, __global const float *a, uint aoff,
                               __global const float *b, uint boff, __global float *y, uint yoff) {
    const uint i = get_global_id(0);
    if (i < count) y[yoff + i] = fmax(a[aoff + i] + b[boff + i], 0.0f);
}

__kernel void sigmoid_forward(uint count, __global const float *x, uint xoff, __global float *y,
                              uint yoff) {
    const uint i = get_global_id(0);
    if (i < count) y[yoff + i] = 1.0f / (1.0f + exp(-x[xoff + i]));
}

// Forward was y = 1 / (1 + e^-x), so dy/dx = y (1 - y).
__kernel void sigmoid_backward(uint count, __global const float *dy, uint dyoff,
                               __global const float *y, uint yoff, __global float *dx, uint dxoff,
                            uint add) {
    const uint i = get_global_id(0);
    if (i < count) {
        const float v = y[yoff + i];
        clnet_store_dx(dx + dxoff + i, dy[dyoff + i] * v * (1.0f - v), add);
    }
}

__kernel void tanh_forward(uint count, __global const float *x, uint xoff, __global float *y,
                           uint yoff) {
    const uint i = get_global_id(0);
    if (i < count) y[yoff + i] = tanh(x[xoff + i]);
}

// Forward was y = tanh(x), so dy/dx = 1 - y^2.
__kernel void tanh_backward(uint count, __global const float *dy, uint dyoff,
                            __global const float *y, uint yoff, __global float *dx, uint dxoff,
                            uint add) {
    const uint i = get_global_id(0);
    if (i < count) {
        const float v = y[yoff + i];
        clnet_store_dx(dx + dxoff + i, dy[dyoff + i] * (1.0f - v * v), add);
    }
}
