// Dropout: y = x * keep / (1 - p), where keep is 0 with probability p. The
// mask is not stored: it is a hash of (seed, step, the sample's index in the
// global batch, the element's index in the sample), so every device draws
// the same mask for a sample whatever share it gets, and backward draws it
// again. x, y, dy, dx are (n, size); sample b is global sample first + b.

// murmur3's finaliser: a bijection on 32 bits that mixes every input bit.
inline uint clnet_mix(uint h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

// 1 when element e of global sample s is kept in step t.
inline int clnet_dropout_keep(uint seed, uint t, uint s, uint e, float p) {
    uint h = clnet_mix(seed ^ 0x9e3779b9u);
    h = clnet_mix(h ^ t);
    h = clnet_mix(h ^ s);
    h = clnet_mix(h ^ e);
    return (float)(h >> 8) * (1.0f / 16777216.0f) >= p; // uniform in [0, 1), 24 bits
}

// Forward and backward are one map: y = x * keep * scale, and, forward being
// that, dx = dy * keep * scale with the same mask. Forward runs it with
// add = 0 (clnet_store_dx overwriting), backward as the graph says.
__kernel void dropout_apply(uint n, uint size, __global const float *x, uint xoff, __global float *y,
                            uint yoff, float p, float scale, uint seed, uint step, uint first,
                            uint add) {
    const uint e = get_global_id(0), b = get_global_id(1);
    if (e >= size || b >= n) return;
    const uint i = b * size + e;
    clnet_store_dx(y + yoff + i,
                   clnet_dropout_keep(seed, step, first + b, e, p) ? x[xoff + i] * scale : 0.0f, add);
}
