/* A training step clipped by the gradient's global norm against PyTorch's
 * (tests/fixtures/optim/clip_*.safetensors, made by make_optim_fixtures.py):
 * for test_optim.c on one device and test_multi.c split over two. */
#ifndef CLNET_TEST_CLIP_FIXTURE_H
#define CLNET_TEST_CLIP_FIXTURE_H

#include "clnet.h"

/* One step of SGD (lr 0.1, momentum 0.9, weight decay 0.05) from clip_w0's weights on
 * clip_data's batch of 8, clipped at a quarter of the gradient's norm (clipped) and at
 * four times it (not), as torch.nn.utils.clip_grad_norm_ then torch.optim.SGD take it:
 * on `one` (a runtime of one device), each within 1e-5 of the largest update of PyTorch's
 * step, the norm the step reports within 1e-5 of PyTorch's; and where `two` is not NULL
 * (a runtime of two devices), split over both equally and 3:1, the same within 1e-5 of
 * PyTorch's and of one device's. Asserts. */
void test_clipped_step_matches_pytorch(clnet_runtime *one, clnet_runtime *two);

#endif
