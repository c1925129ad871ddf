// Global pooling: one value per plane of any number of spatial dimensions.

// Global average pooling (PyTorch's AdaptiveAvgPool2d(1)): x (n, C, S) ->
// y (n, C), S the spatial positions of one plane (H*W for an image, any number
// of spatial dimensions). One work-item per plane: the planes it meets are
// small (7x7 at the end of ResNet-18) and many (n*C).
__kernel void global_avgpool_forward(uint planes, uint S, __global const float *x, uint xoff,
                                     __global float *y, uint yoff) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    __global const float *plane = x + xoff + bc * S;
    float s = 0.0f;
    for (uint i = 0; i < S; i++) s += plane[i];
    y[yoff + bc] = s / (float)S;
}

// y = the largest value of each plane (global_maxpool): one work-item per plane.
// As PyTorch's AdaptiveMaxPool picks it: the first largest value, or the last
// NaN (a NaN always wins).
inline uint global_argmax(__global const float *plane, uint S) {
    uint best = 0;
    float m = plane[0];
    for (uint i = 1; i < S; i++)
        if (plane[i] > m || isnan(plane[i])) {
            m = plane[i];
            best = i;
        }
    return best;
}

__kernel void global_maxpool_forward(uint planes, uint S, __global const float *x, uint xoff,
                                     __global float *y, uint yoff) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    __global const float *plane = x + xoff + bc * S;
    y[yoff + bc] = plane[global_argmax(plane, S)];
}

// Forward took one value of each plane, so dx is dy there and 0 elsewhere; the
// place is found again from x. One work-item per plane.
__kernel void global_maxpool_backward(uint planes, uint S, __global const float *x, uint xoff,
                                      __global const float *dy, uint dyoff, __global float *dx,
                                      uint dxoff, uint add) {
    const uint bc = get_global_id(0);
    if (bc >= planes) return;
    const uint best = global_argmax(x + xoff + bc * S, S);
    const float g = dy[dyoff + bc];
    for (uint i = 0; i < S; i++) clnet_store_dx(dx + dxoff + bc * S + i, i == best ? g : 0.0f, add);
}

// Forward was y = sum(plane) / S, so backward is dx = dy / S at every position
// of the plane. Work-items run over (position, b*C + c).
__kernel void global_avgpool_backward(uint planes, uint S, __global const float *dy, uint dyoff,
                                      __global float *dx, uint dxoff, uint add) {
    const uint i = get_global_id(0), bc = get_global_id(1);
    if (i >= S || bc >= planes) return;
    clnet_store_dx(dx + dxoff + bc * S + i, dy[dyoff + bc] / (float)S, add);
}
