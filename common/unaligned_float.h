// UnalignedFloat: a float32 read at any byte address.
//
// A push's values are read where the transport received them
// (common/value_pieces.h), and gRPC's slices put them at any byte
// alignment. A `const float*` that is not 4-byte aligned is undefined
// behaviour in C++; a pointer to this type is not: GCC and Clang give the
// type an alignment of 1 (the `aligned` attribute may lower a typedef's
// alignment) and load through it with instructions that take any address.
// Loops over it vectorize as loops over `float` do, with unaligned vector
// loads, and x86-64 runs those at the speed of aligned ones on data that
// is in fact aligned. A `const float*` converts to it implicitly.
//
// Pass such pointers only to code that reads through this type: handing
// one on as a `float*` (to std::copy, say) brings the alignment back, and
// so does a template argument, which drops the attribute
// (std::vector<const UnalignedFloat*> holds `const float*`): keep them in
// arrays.
#ifndef CAIRN_COMMON_UNALIGNED_FLOAT_H_
#define CAIRN_COMMON_UNALIGNED_FLOAT_H_

namespace cairn {

// NOLINTNEXTLINE(modernize-use-using): the attribute binds to a typedef.
typedef float UnalignedFloat __attribute__((aligned(1)));

static_assert(alignof(UnalignedFloat) == 1);
static_assert(sizeof(UnalignedFloat) == sizeof(float));

}  // namespace cairn

#endif  // CAIRN_COMMON_UNALIGNED_FLOAT_H_
