/* Random numbers that are the same on every machine and in every order of
 * calls: splitmix64 (seeds, counter-based streams) and xoshiro256** (long
 * streams), both Vigna's. */
#ifndef CLNET_RANDOM_H
#define CLNET_RANDOM_H

#include <stdint.h>

#define CLNET_GOLDEN 0x9E3779B97F4A7C15ull /* 2^64 / the golden ratio: splitmix64's step */

/* splitmix64's output function: a bijection of 64-bit words that mixes well. */
uint64_t clnet_mix64(uint64_t z);

/* The next word of the splitmix64 stream at *state. */
uint64_t clnet_splitmix64(uint64_t *state);

typedef struct {
    uint64_t s[4];
} clnet_xoshiro;

/* A generator whose state is four words of splitmix64 from key. */
clnet_xoshiro clnet_xoshiro_from(uint64_t key);
uint64_t clnet_xoshiro_next(clnet_xoshiro *r);

/* Uniform in [0, bound), bound >= 1, without modulo bias. */
uint32_t clnet_uniform_below(clnet_xoshiro *r, uint32_t bound);

#endif
