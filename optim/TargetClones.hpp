#pragma once
// Function multi-versioning for the CPU kernels of the packed covariance: each kernel is built for the
// baseline and for AVX2 (x86-64-v3) on x86-64, and the loader picks the one the processor runs. float32
// kernels also get an AVX-512 (x86-64-v4) build: their sweep is bound by arithmetic rather than bytes, and
// it ran 30% faster there; float64 ran slower with it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DEEPKF_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define DEEPKF_CLONES_F32 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DEEPKF_CLONES
#define DEEPKF_CLONES_F32
#endif
#define DEEPKF_INLINE [[gnu::always_inline]] inline
