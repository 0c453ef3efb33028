/* Tests, without a GPU, the cuBLASLt description of every GEMM the CUDA backend
   runs (runtime/cuda/gemm_desc.h): the compute, scale and data types per operand
   type (bf16 and f16 operands: fp32 compute and an f32 C, never TF32), and the
   column-major layouts and transposes. The layouts are checked by what they mean:
   a host GEMM that reads the matrices only through the description (cuBLASLt's
   column-major rules) must compute the row-major lm.matmul product, for every
   transposition, batched and strided, with leading dimensions wider than the rows. */
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/cuda/gemm_desc.h"

namespace lmrt::cuda {
namespace {

/* Element (r, c) of a column-major layout of batch element b. */
double at(const std::vector<double> &p, const GemmLayout &l, int64_t b, uint64_t r, uint64_t c) {
  return p[(size_t)(b * l.stride + (int64_t)r + (int64_t)c * l.ld)];
}

/* D = opA(A) opB(B) as cuBLASLt would compute it from the description alone. */
std::vector<double> ltProduct(const GemmDesc &d, const std::vector<double> &ltA, const std::vector<double> &ltB,
                              size_t cSize) {
  std::vector<double> out(cSize, 0.0);
  const uint64_t rows = d.c.rows, cols = d.c.cols;
  const uint64_t inner = d.opA == CUBLAS_OP_N ? d.a.cols : d.a.rows;
  EXPECT_EQ(inner, d.opB == CUBLAS_OP_N ? d.b.rows : d.b.cols) << "inner dimensions";
  EXPECT_EQ(rows, d.opA == CUBLAS_OP_N ? d.a.rows : d.a.cols) << "rows of C";
  EXPECT_EQ(cols, d.opB == CUBLAS_OP_N ? d.b.cols : d.b.rows) << "columns of C";
  for (int64_t b = 0; b < d.c.batch; ++b)
    for (uint64_t i = 0; i < rows; ++i)
      for (uint64_t j = 0; j < cols; ++j) {
        double s = 0;
        for (uint64_t l = 0; l < inner; ++l)
          s += (d.opA == CUBLAS_OP_N ? at(ltA, d.a, b, i, l) : at(ltA, d.a, b, l, i)) *
               (d.opB == CUBLAS_OP_N ? at(ltB, d.b, b, l, j) : at(ltB, d.b, b, j, l));
        out[(size_t)(b * d.c.stride + (int64_t)i + (int64_t)j * d.c.ld)] = s;
      }
  return out;
}

/* The row-major product of lm.matmul on the same buffers. */
std::vector<double> rowMajorProduct(const GemmArgs &g, const std::vector<double> &a, const std::vector<double> &b,
                                    size_t cSize) {
  std::vector<double> out(cSize, 0.0);
  for (int64_t bi = 0; bi < g.batch; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < g.k; ++l)
          s += a[(size_t)(bi * g.strideA + (g.ta ? l * g.lda + i : i * g.lda + l))] *
               b[(size_t)(bi * g.strideB + (g.tb ? j * g.ldb + l : l * g.ldb + j))];
        out[(size_t)(bi * g.strideC + i * g.ldc + j)] = s;
      }
  return out;
}

GemmArgs args(DType t, bool ta, bool tb, int64_t batch, bool sharedRhs) {
  GemmArgs g;
  g.dtype = t, g.ta = ta, g.tb = tb, g.m = 5, g.n = 7, g.k = 3, g.batch = batch;
  g.lda = (ta ? g.m : g.k) + 2;  // wider than the rows: the leading dimension must be used as given
  g.ldb = (tb ? g.k : g.n) + 1;
  g.ldc = g.n + 3;
  g.strideA = (ta ? g.k : g.m) * g.lda;
  g.strideB = sharedRhs ? 0 : (tb ? g.n : g.k) * g.ldb;
  g.strideC = g.m * g.ldc;
  return g;
}

TEST(GemmDesc, ReducedPrecisionOperandsAccumulateInFp32) {
  for (DType t : {DType::BF16, DType::F16})
    for (bool tf32 : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + (tf32 ? ", tf32 asked" : ""));
      const GemmDesc d = describeGemm(args(t, false, true, 1, true), tf32);
      const cudaDataType_t ab = t == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
      EXPECT_EQ(d.compute, CUBLAS_COMPUTE_32F);  // not TF32: the products of 16-bit numbers are exact in fp32
      EXPECT_EQ(d.scale, CUDA_R_32F);
      EXPECT_EQ(d.a.type, ab);
      EXPECT_EQ(d.b.type, ab);
      EXPECT_EQ(d.c.type, CUDA_R_32F);  // the result is f32, as the CPU's bf16 GEMM writes
      EXPECT_EQ(d.epilogue, CUBLASLT_EPILOGUE_DEFAULT);
      EXPECT_EQ(gemmResultType(t), DType::F32);
    }
}

TEST(GemmDesc, FullPrecisionTypes) {
  GemmDesc d = describeGemm(args(DType::F32, false, false, 1, true), false);
  EXPECT_EQ(d.compute, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(d.scale, CUDA_R_32F);
  EXPECT_EQ(d.a.type, CUDA_R_32F);
  EXPECT_EQ(d.c.type, CUDA_R_32F);
  EXPECT_EQ(describeGemm(args(DType::F32, false, false, 1, true), true).compute, CUBLAS_COMPUTE_32F_FAST_TF32);
  d = describeGemm(args(DType::F64, false, false, 1, true), true);
  EXPECT_EQ(d.compute, CUBLAS_COMPUTE_64F);
  EXPECT_EQ(d.scale, CUDA_R_64F);
  EXPECT_EQ(d.b.type, CUDA_R_64F);
  EXPECT_EQ(d.c.type, CUDA_R_64F);
}

TEST(GemmDesc, LayoutsComputeTheRowMajorProductForEveryTransposition) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-8, 8);  // exact in bf16, f16 and doubles
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [batch, shared] : {std::pair<int64_t, bool>{1, true}, {3, false}, {3, true}}) {
          SCOPED_TRACE(std::string(dtypeName(t)) + (ta ? " ta" : "") + (tb ? " tb" : "") + " batch " +
                       std::to_string(batch) + (shared ? " shared rhs" : ""));
          const GemmArgs g = args(t, ta, tb, batch, shared);
          std::vector<double> a((size_t)(batch * g.strideA)), b((size_t)std::max<int64_t>(batch * g.strideB,
                                                                                        (tb ? g.n : g.k) * g.ldb));
          for (double &x : a) x = small(rng);
          for (double &x : b) x = small(rng);
          const size_t cSize = (size_t)(batch * g.strideC);
          const GemmDesc d = describeGemm(g, false);
          EXPECT_EQ(d.opA, tb ? CUBLAS_OP_T : CUBLAS_OP_N);
          EXPECT_EQ(d.opB, ta ? CUBLAS_OP_T : CUBLAS_OP_N);
          for (const GemmLayout *l : {&d.a, &d.b, &d.c}) EXPECT_EQ(l->batch, batch);
          // cuBLASLt's A is our B, its B our A (column-major C^T = B^T A^T).
          EXPECT_EQ(ltProduct(d, b, a, cSize), rowMajorProduct(g, a, b, cSize));
        }
}

TEST(GemmDesc, RefusesWhatThePlansNeverAsk) {
  GemmArgs g = args(DType::BF16, false, false, 1, true);
  g.epilogue = Epilogue::Bias;
  EXPECT_THROW(describeGemm(g, false), Error);
  g = args(DType::I32, false, false, 1, true);
  EXPECT_THROW(describeGemm(g, false), Error);
}

TEST(GemmDesc, OperandAndResultTypes) {
  EXPECT_NO_THROW(checkGemmTypes("matmul", DType::BF16, DType::BF16, DType::F32));
  EXPECT_NO_THROW(checkGemmTypes("matmul", DType::F16, DType::F16, DType::F32));
  EXPECT_NO_THROW(checkGemmTypes("matmul", DType::F32, DType::F32, DType::F32));
  EXPECT_NO_THROW(checkGemmTypes("matmul", DType::F64, DType::F64, DType::F64));
  try {
    checkGemmTypes("matmul", DType::BF16, DType::F32, DType::F32);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "matmul: a GEMM of bf16 x f32 into f32; the CUDA GEMMs take two operands of one type and "
                           "write f32 for bf16 and f16 operands, else the operands' type");
  }
  EXPECT_THROW(checkGemmTypes("matmul", DType::BF16, DType::BF16, DType::BF16), Error);
}

}  // namespace
}  // namespace lmrt::cuda
