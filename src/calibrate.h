/* Measuring each device's speed for the first split (see calibrate.c). */
#ifndef CLNET_CALIBRATE_H
#define CLNET_CALIBRATE_H

#include "trainer.h"

/* Measures each replica's speed on probes bounded in time into the
 * balancer's rates, the same on every rank; nothing with one device. */
clnet_status clnet_calibrate(clnet_trainer *t);

#endif
