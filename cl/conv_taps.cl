// The taps of a convolution's window as compile-time constants, for the
// kernels built for one kernel size (conv_implicit.cl, conv_lanes.cl, which
// include this file): IKD x IKH x IKW taps, 1 along an axis not given; IK in
// all. No kernels of its own.

#ifndef IKD
#define IKD 1
#endif
#ifndef IKH
#define IKH 1
#endif
#ifndef IKW
#define IKW 1
#endif
#define IK (IKD * IKH * IKW)
