/* splitmix64 and xoshiro256** (random.h). */
#include "random.h"

uint64_t clnet_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t clnet_splitmix64(uint64_t *state) {
    return clnet_mix64(*state += CLNET_GOLDEN);
}

clnet_xoshiro clnet_xoshiro_from(uint64_t key) {
    clnet_xoshiro r;
    for (int i = 0; i < 4; i++) r.s[i] = clnet_splitmix64(&key);
    return r;
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t clnet_xoshiro_next(clnet_xoshiro *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Draws below 2^64 mod bound are thrown away. */
uint32_t clnet_uniform_below(clnet_xoshiro *r, uint32_t bound) {
    uint64_t reject_below = (0 - (uint64_t)bound) % bound;
    for (;;) {
        uint64_t x = clnet_xoshiro_next(r);
        if (x >= reject_below) return (uint32_t)(x % bound);
    }
}
