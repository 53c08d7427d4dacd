// Vector clones for the payload's hot element loops (reductions, input generation): on x86-64 GCC
// compiles the marked function for AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and the baseline, and
// the loader picks one by the CPU (target_clones, an ifunc). Elsewhere it is the plain function.
// The clones compute the same bytes: only instructions change, not the order of operations
// within an element.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HCSIM_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HCSIM_VECTOR_CLONES
#endif
