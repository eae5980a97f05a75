// CAIRN_UPDATE_LOOP: marks an optimizer's element loop for per-CPU builds.
//
// On x86-64 ELF targets the loop is compiled twice, for AVX2 and for the
// baseline (SSE2), and the loader picks one per process (GCC/Clang
// target_clones, glibc ifunc). Wider vectors keep sqrt and division, which
// Adagrad and Adam need per element, off the critical path, so the update
// runs at memory bandwidth. Both builds perform the same IEEE-754 float
// operations in the same order (the library is built with -ffp-contract=off,
// so no fused multiply-add), and sqrt and division are correctly rounded in
// both, so parameters are bit-identical whichever build runs.
#ifndef CAIRN_SERVER_OPTIMIZER_INTERNAL_UPDATE_LOOP_H_
#define CAIRN_SERVER_OPTIMIZER_INTERNAL_UPDATE_LOOP_H_

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
#define CAIRN_UPDATE_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define CAIRN_UPDATE_LOOP
#endif

// CAIRN_ELEMENT_LOOP: one block's element loop, called per block by a
// CAIRN_UPDATE_LOOP function over several blocks (a push's rows) and
// inlined into each of its builds. Its __restrict parameters hold there
// as they would for a function of its own, so the loop vectorizes
// without a runtime test for overlap.
#define CAIRN_ELEMENT_LOOP inline __attribute__((always_inline))

#endif  // CAIRN_SERVER_OPTIMIZER_INTERNAL_UPDATE_LOOP_H_
