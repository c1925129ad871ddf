/* A convolution algorithm made up by the tests (conv_made_up.c). */
#ifndef CLNET_CONV_MADE_UP_H
#define CLNET_CONV_MADE_UP_H

#include "layers/conv.h"

extern const conv_algo conv_made_up;
extern int conv_made_up_chunks; /* the chunks its passes ran */

#endif
