/* Tests, without a GPU, that the conversions a CUDA kernel makes are the CPU's bit
   for bit: CUDA's round-to-nearest-even f32 -> bf16 and f32 -> f16 conversions
   (__float2bfloat16_rn, __float2half_rn; cuda_bf16.h and cuda_fp16.h compile them for
   the host as well, to the device instructions' results) against
   contract/scalar_math.h's host conversions, which the CPU kernels and every
   generated CPU kernel use; the widenings back to f32 likewise. Every f32 exponent
   and high mantissa is swept, each with the low bits that decide the rounding (zero,
   just under, exactly at and just over the halfway point, all ones). A NaN stays a
   NaN on both sides; its payload differs (CUDA writes 0x7fff, the CPU keeps the sign
   and sets the quiet bit), which no kernel reads. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "contract/scalar_math.h"

namespace {

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t cudaBf16(float f) {
  __nv_bfloat16 c = __float2bfloat16_rn(f);
  uint16_t b;
  std::memcpy(&b, &c, 2);
  return b;
}

uint16_t cudaF16(float f) {
  __half c = __float2half_rn(f);
  uint16_t b;
  std::memcpy(&b, &c, 2);
  return b;
}

TEST(Conversion, Bf16RoundsAsCuda) {
  int64_t compared = 0, misses = 0;
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u, 0xc3a1u}) {
      const uint32_t u = hi << 16 | lo;
      const float f = bitsToFloat(u);
      const uint16_t cuda = cudaBf16(f), cpu = lmc::fromFloat<lmc::bf16>(f).bits;
      ++compared;
      if (std::isnan(f)) {
        EXPECT_TRUE(std::isnan(lmc::toFloat(lmc::bf16{cpu}))) << std::hex << u;
        continue;
      }
      if (cuda != cpu && ++misses <= 5) ADD_FAILURE() << std::hex << "f32 bits " << u << ": cuda " << cuda << ", cpu " << cpu;
    }
  EXPECT_EQ(misses, 0) << "of " << compared;
}

TEST(Conversion, F16RoundsAsCuda) {
  int64_t misses = 0;
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      const uint32_t u = hi << 13 | lo;
      const float f = bitsToFloat(u);
      const uint16_t cuda = cudaF16(f), cpu = lmc::fromFloat<lmc::f16>(f).bits;
      if (std::isnan(f)) {
        EXPECT_TRUE(std::isnan(lmc::toFloat(lmc::f16{cpu}))) << std::hex << u;
        continue;
      }
      if (cuda != cpu && ++misses <= 5) ADD_FAILURE() << std::hex << "f32 bits " << u << ": cuda " << cuda << ", cpu " << cpu;
    }
  EXPECT_EQ(misses, 0);
}

/* f16's subnormals are multiples of 2^-24; the halfway cases go to the even one. */
TEST(Conversion, F16SubnormalTiesGoToEven) {
  const float unit = std::ldexp(1.0f, -24);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(0.5f * unit).bits, 0x0000u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(std::nextafter(0.5f * unit, 1.0f)).bits, 0x0001u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(std::nextafter(0.5f * unit, 0.0f)).bits, 0x0000u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(1.5f * unit).bits, 0x0002u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(2.5f * unit).bits, 0x0002u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(-2.5f * unit).bits, 0x8002u);
  EXPECT_EQ(lmc::fromFloat<lmc::f16>(1023.5f * unit).bits, 0x0400u);  // carries into the smallest normal
}

TEST(Conversion, WideningIsExactOnBothSides) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t s = (uint16_t)b;
    __nv_bfloat16 x;
    __half h;
    std::memcpy(&x, &s, 2);
    std::memcpy(&h, &s, 2);
    const float cb = __bfloat162float(x), lb = lmc::toFloat(lmc::bf16{s});
    const float ch = __half2float(h), lh = lmc::toFloat(lmc::f16{s});
    EXPECT_EQ(std::memcmp(&cb, &lb, 4), 0) << std::hex << "bf16 " << b;
    if (std::isnan(ch)) EXPECT_TRUE(std::isnan(lh)) << std::hex << "f16 " << b;
    else EXPECT_EQ(std::memcmp(&ch, &lh, 4), 0) << std::hex << "f16 " << b;
  }
}

}  // namespace
