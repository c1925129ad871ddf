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

// The activations below read x in backward (their derivatives are not
// functions of y alone), and each takes one parameter a, which only
// leaky_relu (the negative slope) and elu (alpha) use. Each derivative is
// PyTorch's, kinks included: leaky_relu and elu take the negative side's at 0,
// hardswish the middle piece's at -3 and the right one's at 3 (as PyTorch's
// vectorized loop does; its scalar loop, which tensors of under 8 elements
// take, gives the middle piece's there too).

inline float leaky_relu(float x, float a) {
    return x > 0.0f ? x : x * a;
}
inline float leaky_relu_grad(float x, float a) {
    return x > 0.0f ? 1.0f : a;
}

inline float elu(float x, float a) {
    return x > 0.0f ? x : a * expm1(x);
}
inline float elu_grad(float x, float a) {
    return x > 0.0f ? 1.0f : a * exp(x);
}

// x Phi(x), Phi the standard normal's distribution function
inline float gelu(float x, float a) {
    return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F));
}
inline float gelu_grad(float x, float a) {
    const float pdf = exp(-0.5f * x * x) * (M_2_SQRTPI_F * M_SQRT1_2_F * 0.5f);
    return 0.5f * (1.0f + erf(x * M_SQRT1_2_F)) + x * pdf;
}

// PyTorch's approximate='tanh': x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
#define GELU_K0 0.7978845608028654f
#define GELU_K1 0.044715f
inline float gelu_tanh(float x, float a) {
    return 0.5f * x * (1.0f + tanh(GELU_K0 * (x + GELU_K1 * x * x * x)));
}
inline float gelu_tanh_grad(float x, float a) {
    const float t = tanh(GELU_K0 * (x + GELU_K1 * x * x * x));
    const float du = GELU_K0 * (1.0f + 3.0f * GELU_K1 * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// x sigmoid(x)
inline float silu(float x, float a) {
    return x / (1.0f + exp(-x));
}
inline float silu_grad(float x, float a) {
    const float s = 1.0f / (1.0f + exp(-x));
    return s * (1.0f + x * (1.0f - s));
}

// x relu6(x + 3) / 6
inline float hardswish(float x, float a) {
    return x <= -3.0f ? 0.0f : x >= 3.0f ? x : x * (x + 3.0f) / 6.0f;
}
inline float hardswish_grad(float x, float a) {
    return x < -3.0f ? 0.0f : x < 3.0f ? x / 3.0f + 0.5f : 1.0f;
}

#define ACTIVATION_OF_X(f)                                                                         \
    __kernel void f##_forward(uint count, __global const float *x, uint xoff, __global float *y,   \
                              uint yoff, float a) {                                                \
        const uint i = get_global_id(0);                                                           \
        if (i < count) y[yoff + i] = f(x[xoff + i], a);                                            \
    }                                                                                              \
    __kernel void f##_backward(uint count, __global const float *dy, uint dyoff,                   \
                               __global const float *x, uint xoff, __global float *dx, uint dxoff, \
                               uint add, float a) {                                                \
        const uint i = get_global_id(0);                                                           \
        if (i < count)                                                                             \
            clnet_store_dx(dx + dxoff + i, dy[dyoff + i] * f##_grad(x[xoff + i], a), add);         \
    }
ACTIVATION_OF_X(leaky_relu)
ACTIVATION_OF_X(elu)
ACTIVATION_OF_X(gelu)
ACTIVATION_OF_X(gelu_tanh)
ACTIVATION_OF_X(silu)
ACTIVATION_OF_X(hardswish)
