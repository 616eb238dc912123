/* real.h — the element type. Every kernel is written once against `real`; the normal build
 * compiles it as float, the gradcheck build (-DVG_DOUBLE) compiles the same sources as double. */
#ifndef VG_REAL_H
#define VG_REAL_H
#ifdef VG_DOUBLE
typedef double real;
#define VG_REAL_NAME "float64"
#else
typedef float real;
#define VG_REAL_NAME "float32"
#endif
#endif
