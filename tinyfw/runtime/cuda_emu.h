#pragma once  // (several kernels' sources may be compiled as one, each including it)
// Runs CUDA C kernels on the CPU, so tinyfw can check CUDA source without a GPU.
// CUDA's built-in variables become thread-local variables; a launcher runs the grid block by
// block. Threads of a block run one after another, unless the kernel calls __syncthreads(): then
// each thread of the block is a real thread and __syncthreads() is a barrier between them.
// The C library's math functions the kernels call, declared here rather than by <math.h>: in C++,
// <math.h> brings all of <cmath> with it, which costs more than the rest of each kernel's compile.
extern "C" {
float exp2f(float); double exp2(double); float log2f(float); double log2(double);
float sinf(float); double sin(double); float sqrtf(float); double sqrt(double);
float truncf(float); double trunc(double); float fmodf(float, float); double fmod(double, double);
}
static inline float fmod(float a, float b) { return fmodf(a, b); }  // CUDA's float overload
#include <pthread.h>
#include <stdint.h>
#include <string.h>

struct tf_dim3 { unsigned x, y, z; };
static thread_local tf_dim3 threadIdx, blockIdx, blockDim, gridDim;
static thread_local pthread_barrier_t* tf_block_barrier;

#define __global__
#define __device__ static inline
#define __forceinline__
#define __restrict__
#define __shared__ static  // blocks run one after another: one copy serves each in turn
static inline void __syncthreads(void) { pthread_barrier_wait(tf_block_barrier); }
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }

// float16 kept as its 16 bits (CUDA's half, without the header NVRTC does not ship)
static inline float tf_h2f(unsigned short h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000 | (man << 13);          // inf, nan
  else if (exp) bits = sign | ((exp + 112) << 23) | (man << 13);    // normal
  else if (!man) bits = sign;                                        // zero
  else {                                                             // subnormal
    exp = 113;
    while (!(man & 0x400)) { man <<= 1; exp--; }
    bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
  }
  float f; memcpy(&f, &bits, 4); return f;
}
static inline unsigned short tf_f2h(float f) {
  uint32_t x; memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);         // inf, nan
  int e = (int)exp - 112;
  if (e >= 0x1f) return sign | 0x7c00;                               // too large: inf
  if (e <= 0) {                                                      // subnormal or zero
    if (e < -10) return sign;
    man |= 0x800000;
    uint32_t shift = 14 - e, half = man >> shift, rest = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;
    return sign | half;
  }
  uint32_t half = sign | (e << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;       // round to nearest even
  return half;
}

// tf_call(kernel, args) calls a kernel with args[i] as its i-th parameter, whatever the
// parameters' pointer types: the launcher needs no list of them (and no <utility>).
template <unsigned... I> struct tf_indices {};
template <unsigned N, unsigned... I>
struct tf_make_indices : tf_make_indices<N - 1, N - 1, I...> {};
template <unsigned... I> struct tf_make_indices<0, I...> { typedef tf_indices<I...> type; };
template <typename... P, unsigned... I>
static inline void tf_call_at(void (*fn)(P...), void** args, tf_indices<I...>) {
  fn(static_cast<P>(args[I])...);
}
template <typename... P>
static inline void tf_call(void (*fn)(P...), void** args) {
  tf_call_at(fn, args, typename tf_make_indices<sizeof...(P)>::type());
}

// TF_LAUNCHER(name) defines tf_launch_<name>(void** args, int grid, int block, int threads)
#define TF_LAUNCHER(name)                                                                  \
  struct tf_thread_##name { void** args; unsigned grid, block, bid, tid;                   \
                            pthread_barrier_t* barrier; };                                 \
  static void tf_one_##name(void** args, unsigned grid, unsigned block, unsigned bid,      \
                            unsigned tid) {                                                \
    gridDim = {grid, 1, 1}; blockDim = {block, 1, 1};                                      \
    blockIdx = {bid, 0, 0}; threadIdx = {tid, 0, 0};                                       \
    tf_call(name, args);                                                                   \
  }                                                                                        \
  static void* tf_thread_main_##name(void* p) {                                            \
    tf_thread_##name* t = (tf_thread_##name*)p;                                            \
    tf_block_barrier = t->barrier;                                                         \
    tf_one_##name(t->args, t->grid, t->block, t->bid, t->tid);                             \
    return 0;                                                                              \
  }                                                                                        \
  extern "C" void tf_launch_##name(void** args, int grid, int block, int threads) {        \
    for (unsigned b = 0; b < (unsigned)grid; b++) {                                        \
      if (!threads) {                                                                      \
        for (unsigned t = 0; t < (unsigned)block; t++) tf_one_##name(args, grid, block, b, t); \
        continue;                                                                          \
      }                                                                                    \
      pthread_barrier_t barrier; pthread_barrier_init(&barrier, 0, block);                 \
      pthread_t ids[1024]; tf_thread_##name info[1024];                                    \
      for (unsigned t = 0; t < (unsigned)block; t++) {                                     \
        info[t] = {args, (unsigned)grid, (unsigned)block, b, t, &barrier};                 \
        pthread_create(&ids[t], 0, tf_thread_main_##name, &info[t]);                       \
      }                                                                                    \
      for (unsigned t = 0; t < (unsigned)block; t++) pthread_join(ids[t], 0);              \
      pthread_barrier_destroy(&barrier);                                                   \
    }                                                                                      \
  }
