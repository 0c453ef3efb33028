/* Tests that the GPU's optimizer kernels (the gradient norm's blocks, fused AdamW
   over flat storage; SGD, Lion, LAMB and Adafactor with parameter
   groups and clipping by value) follow the CPU's (runtime/cpu/) for three
   updates with clipping and weight decay on one of two parameters; that AdamW gives
   the CPU's bits (contract/adamw_math.h: no FMA on either side); and that
   cuBLASLt's fused epilogues (bias, GELU + bias, bias gradient) match a naive
   reference; and that ZeRO ranks' sliced updates (zero_chunks.h) put together give the
   whole update's bits. CPU halves run everywhere; GPU halves where a GPU is present. */
#include "runtime/cuda/optimizer.h"
#include "runtime/cuda/check.h"
#include "contract/scalar_math.h"
#include "contract/zero3.h"
#include "runtime/cpu/adamw.h"
#include "runtime/cpu/optimizers.h"
#include "runtime/cuda/optimizer_step.h"
#include "runtime/cuda/zero_chunks.h"
#include "runtime/cpu/grad_clip.h"
#include "test/Unit/cuda/CudaTestUtil.h"
#include "test/Unit/cuda_emu/optimizer_compare.h"

namespace lmrt::cuda::test {
namespace {

/* The norm of the gradients `at[i]`, `count[i]` elements each, in `grads` (device), as the
   backend computes it (CudaBackend::gradSumSquares): each gradient's blocks summed on the
   device, the blocks' sums added in order on the host, then the gradients'. */
double deviceGradNorm(DType dtype, const void *grads, const std::vector<int64_t> &at,
                      const std::vector<int64_t> &count) {
  const NormBlocks t = normBlocks(at, count);
  const size_t n = t.blocks.size();
  DeviceBuffer blocks(std::max<size_t>(1, n) * sizeof(NormBlock), "norm blocks"), sums(std::max<size_t>(1, n) * 8, "sums");
  CUDA_CHECK(cudaMemcpy(blocks.get(), t.blocks.data(), n * sizeof(NormBlock), cudaMemcpyHostToDevice));
  launchBlockSumSquares(dtype, grads, static_cast<const NormBlock *>(blocks.get()), (int64_t)n,
                        static_cast<double *>(sums.get()), nullptr);
  std::vector<double> host(n);
  CUDA_CHECK(cudaMemcpy(host.data(), sums.get(), n * 8, cudaMemcpyDeviceToHost));
  double total = 0;
  for (size_t i = 0; i + 1 < t.first.size(); ++i) {
    double s = 0;
    for (int64_t b = t.first[i]; b < t.first[i + 1]; ++b) s += host[(size_t)b];
    total += s;
  }
  return std::sqrt(total);
}

TEST(CudaTrain, GradNormClipAndAdamW) {
  // Sizes: a small decayed parameter and one that spans two AdamW chunks.
  const std::vector<int64_t> sizes = {1000, 70000};
  const std::vector<bool> decay = {true, false};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<std::vector<float>> p(2), g(2);
  for (int i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < sizes[i]; ++j) p[i].push_back(normal(rng)), g[i].push_back(normal(rng));
  }
  std::vector<std::vector<float>> pCpu = p;
  std::vector<ParamView> views;
  for (int i = 0; i < 2; ++i) views.push_back({DType::F32, pCpu[i].data(), g[i].data(), sizes[i], (bool)decay[i]});
  AdamWConfig cfg;
  cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weightDecay = 0.1;
  AdamW adamw(cfg);
  const double maxNorm = 1.0, lrs[3] = {1e-3, 2e-3, 3e-3};
  double cpuNorm = 0;
  for (double lr : lrs) {
    cpuNorm = globalGradNorm(views);
    adamw.step(views, lr, clipScale(cpuNorm, maxNorm));
  }
  ASSERT_GT(cpuNorm, maxNorm);  // clipping is exercised

  LMRT_REQUIRE_GPU();
  const int64_t off[2] = {0, 1024}, total = 1024 + 70016;  // 256-byte aligned, as the session lays them out
  std::vector<float> flatP(total, 0.f), flatG(total, 0.f);
  for (int i = 0; i < 2; ++i)
    std::copy(p[i].begin(), p[i].end(), flatP.begin() + off[i]), std::copy(g[i].begin(), g[i].end(), flatG.begin() + off[i]);
  std::vector<AdamWChunk> chunks = {{0, 1000, 1, 1.0}, {1024, 1024 + 65536, 0, 1.0}, {1024 + 65536, 1024 + 70000, 0, 1.0}};
  DeviceBuffer dp(total * 4, "p"), dg(total * 4, "g"), dm(total * 4, "m"), dv(total * 4, "v"),
      dc(chunks.size() * sizeof(AdamWChunk), "chunks");
  ASSERT_EQ(cudaMemcpy(dp.get(), flatP.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dg.get(), flatG.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dm.get(), 0, total * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dv.get(), 0, total * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dc.get(), chunks.data(), chunks.size() * sizeof(AdamWChunk), cudaMemcpyHostToDevice), cudaSuccess);
  double gpuNorm = 0;
  for (int t = 1; t <= 3; ++t) {
    // As the backend does: the norm's block sums read back, clipping's factor computed on the host.
    gpuNorm = deviceGradNorm(DType::F32, dg.get(), {off[0], off[1]}, sizes);
    AdamWStep s{lrs[t - 1], cfg.beta1, cfg.beta2, cfg.eps, cfg.weightDecay, 1 - std::pow(cfg.beta1, t),
                1 - std::pow(cfg.beta2, t)};
    launchAdamW(DType::F32, dp.get(), dg.get(), dm.get(), dv.get(), static_cast<const AdamWChunk *>(dc.get()), 3,
                clipScale(gpuNorm, maxNorm), s, nullptr);
  }
  ASSERT_EQ(cudaMemcpy(flatP.data(), dp.get(), total * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_NEAR(gpuNorm, cpuNorm, 1e-9 * cpuNorm);
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < sizes[i]; ++j)
      ASSERT_NEAR(flatP[off[i] + j], pCpu[i][j], 1e-6 * (1 + std::fabs(pCpu[i][j]))) << "param " << i << " [" << j << "]";
}

/* AdamW on the GPU gives the CPU's bits (contract/adamw_math.h: the same roundings, no
   FMA on either side), from the same gradient scale: three updates of a decayed parameter
   and one spanning two chunks with a learning-rate multiple, clipping's factor and by
   value, a NaN gradient (it stays NaN on both); f32 and f64. */
template <typename T> void adamwBitsCase(DType dtype) {
  const std::vector<int64_t> sizes = {1000, 70000}, off = {0, 1024};
  const int64_t total = 1024 + 70016;
  std::mt19937 rng(13);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> flatP((size_t)total, T(0)), flatG((size_t)total, T(0));
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < sizes[i]; ++j) flatP[(size_t)(off[i] + j)] = T(normal(rng)), flatG[(size_t)(off[i] + j)] = T(normal(rng));
  flatG[7] = T(NAN);
  std::vector<T> cpu = flatP;
  const std::vector<ParamView> views = {{dtype, cpu.data(), flatG.data(), sizes[0], true},
                                        {dtype, cpu.data() + off[1], flatG.data() + off[1], sizes[1], false, false, 0.5}};
  AdamWConfig cfg;
  cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weightDecay = 0.1, cfg.clipValue = 1.5;
  AdamW adamw(cfg);
  const double lrs[3] = {1e-3, 2e-3, 3e-3}, gradScale = 0.8;
  for (double lr : lrs) adamw.step(views, lr, gradScale);

  LMRT_REQUIRE_GPU();
  const std::vector<AdamWChunk> chunks = {
      {0, 1000, 1, 1.0}, {1024, 1024 + 65536, 0, 0.5}, {1024 + 65536, 1024 + 70000, 0, 0.5}};
  const size_t bytes = (size_t)total * sizeof(T);
  DeviceBuffer dp(bytes, "p"), dg(bytes, "g"), dm(bytes, "m"), dv(bytes, "v"),
      dc(chunks.size() * sizeof(AdamWChunk), "chunks");
  ASSERT_EQ(cudaMemcpy(dp.get(), flatP.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dg.get(), flatG.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dm.get(), 0, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dv.get(), 0, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dc.get(), chunks.data(), chunks.size() * sizeof(AdamWChunk), cudaMemcpyHostToDevice),
            cudaSuccess);
  for (int t = 1; t <= 3; ++t) {  // the backend's scalars (CudaBackend::launchUpdate)
    AdamWStep s{lrs[t - 1], cfg.beta1, cfg.beta2, cfg.eps, cfg.weightDecay, 1.0 - std::pow(cfg.beta1, (double)t),
                1.0 - std::pow(cfg.beta2, (double)t), cfg.clipValue};
    launchAdamW(dtype, dp.get(), dg.get(), dm.get(), dv.get(), static_cast<const AdamWChunk *>(dc.get()), 3,
                gradScale, s, nullptr);
  }
  ASSERT_EQ(cudaMemcpy(flatP.data(), dp.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<AdamW::MomentView> mv = adamw.moments();
  std::vector<T> gm((size_t)total), gv((size_t)total);
  ASSERT_EQ(cudaMemcpy(gm.data(), dm.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gv.data(), dv.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  // The same bytes, or NaN on both (a GPU writes its canonical NaN, x86 propagates the
  // gradient's payload).
  EXPECT_TRUE(std::isnan(flatP[7]) && std::isnan(cpu[7])) << "a NaN gradient's element is NaN on both";
  for (int i = 0; i < 2; ++i) {
    const T *m = static_cast<const T *>(mv[(size_t)i].m), *v = static_cast<const T *>(mv[(size_t)i].v);
    for (int64_t j = 0; j < sizes[i]; ++j) {
      const size_t at = (size_t)(off[i] + j);
      ASSERT_TRUE(sameBits(flatP[at], cpu[at])) << "param " << i << " [" << j << "]: " << flatP[at] << " vs the CPU's " << cpu[at];
      ASSERT_TRUE(sameBits(gm[at], m[j])) << "m " << i << " [" << j << "]";
      ASSERT_TRUE(sameBits(gv[at], v[j])) << "v " << i << " [" << j << "]";
    }
  }
}

TEST(CudaTrain, AdamWIsTheCpusBitForBit) {
  adamwBitsCase<float>(DType::F32);
  adamwBitsCase<double>(DType::F64);
}

/* SGD (Nesterov momentum), Lion, LAMB and Adafactor: three updates of three
   parameters on the CPU and the GPU, with global-norm clipping's factor (the CPU's, on
   both: the device's norm may differ in its last bits, GradNormClipAndAdamW), clipping by
   value, a NaN gradient (NaN on both), weight decay on some, a learning-rate multiple,
   LAMB's trust ratio on one, and for Adafactor a factored matrix, a factored rank-3
   tensor and a vector. SGD and Lion give the CPU's bits (optimizers.cu: no FMA, as the
   CPU's); LAMB and Adafactor sum in blockSum's order, within kReducedUlps
   (test/Unit/cuda_emu/optimizer_compare.h; OptimizerEmulationTest runs the same kernels). */
class OtherOptimizers : public ::testing::TestWithParam<const char *> {};

TEST_P(OtherOptimizers, FollowTheCpu) {
  OptimizerConfig cfg;
  cfg.kind = GetParam();
  cfg.beta1 = 0.9, cfg.beta2 = cfg.kind == "lion" ? 0.99 : 0.999, cfg.eps = cfg.kind == "adafactor" ? 1e-30 : 1e-6;
  cfg.weightDecay = 0.01, cfg.momentum = 0.9, cfg.nesterov = true, cfg.clipValue = 0.5;
  const std::vector<Shape> shapes = {{40, 25}, {3, 100, 240}, {70}};
  const std::vector<bool> decay = {true, false, true};
  const std::vector<double> scale = {1.0, 0.5, 1.0};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<std::vector<float>> p(3), g(3);
  for (int i = 0; i < 3; ++i)
    for (int64_t j = 0; j < lmrt::numel(shapes[i]); ++j) p[i].push_back(normal(rng)), g[i].push_back(normal(rng));
  std::vector<std::vector<float>> pCpu = p;
  std::vector<ParamView> views;
  for (int i = 0; i < 3; ++i)
    views.push_back({DType::F32, pCpu[i].data(), g[i].data(), lmrt::numel(shapes[i]), (bool)decay[i], false, scale[i],
                     (bool)decay[i], shapes[i]});
  std::unique_ptr<CpuOptimizer> cpu = makeCpuOptimizer(cfg);
  const double maxNorm = 1.0, lrs[3] = {1e-2, 2e-2, 3e-2};
  const double clip = clipScale(globalGradNorm(views), maxNorm);  // of the finite gradients
  ASSERT_LT(clip, 1.0);  // clipping is exercised
  g[2][7] = NAN;  // under clip_grad_value alone a NaN gradient reaches the update
  for (double lr : lrs) cpu->step(views, lr, clip);

  LMRT_REQUIRE_GPU();
  // 256-byte aligned offsets, as the session lays parameters out.
  std::vector<int64_t> off;
  int64_t total = 0;
  for (const Shape &s : shapes) off.push_back(total), total += (lmrt::numel(s) + 63) / 64 * 64;
  std::vector<float> flatP(total, 0.f), flatG(total, 0.f);
  std::vector<AdamWChunk> chunks;
  std::vector<ParamSlice> slices;
  for (int i = 0; i < 3; ++i) {
    std::copy(p[i].begin(), p[i].end(), flatP.begin() + off[i]);
    std::copy(g[i].begin(), g[i].end(), flatG.begin() + off[i]);
    const int64_t n = lmrt::numel(shapes[i]);
    chunks.push_back({off[i], off[i] + n, decay[i] ? 1 : 0, scale[i]});
    const bool factored = cfg.kind == "adafactor" && adafactorFactored(shapes[i]);
    slices.push_back({off[i], n, factored ? shapes[i][shapes[i].size() - 2] : 0, factored ? shapes[i].back() : 0,
                      decay[i] ? 1 : 0, decay[i] ? 1 : 0, scale[i]});
  }
  DeviceBuffer dp(total * 4, "p"), dg(total * 4, "g"), dm(total * 4, "m"), dv(total * 4, "v"),
      dc(chunks.size() * sizeof(AdamWChunk), "chunks"), ds(slices.size() * sizeof(ParamSlice), "slices");
  ASSERT_EQ(cudaMemcpy(dp.get(), flatP.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dg.get(), flatG.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dm.get(), 0, total * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dv.get(), 0, total * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dc.get(), chunks.data(), chunks.size() * sizeof(AdamWChunk), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ds.get(), slices.data(), slices.size() * sizeof(ParamSlice), cudaMemcpyHostToDevice),
            cudaSuccess);
  for (int t = 1; t <= 3; ++t) {
    const OptimizerStep s = stepScalars(cfg, lrs[t - 1], t);
    const auto *c = static_cast<const AdamWChunk *>(dc.get());
    const auto *sl = static_cast<const ParamSlice *>(ds.get());
    if (cfg.kind == "sgd") launchSgd(DType::F32, dp.get(), dg.get(), dm.get(), c, 3, clip, s, nullptr);
    if (cfg.kind == "lion") launchLion(DType::F32, dp.get(), dg.get(), dm.get(), c, 3, clip, s, nullptr);
    if (cfg.kind == "lamb") launchLamb(DType::F32, dp.get(), dg.get(), dm.get(), dv.get(), sl, 3, clip, s, nullptr);
    if (cfg.kind == "adafactor")
      launchAdafactor(DType::F32, dp.get(), dg.get(), dm.get(), dv.get(), sl, 3, clip, s, nullptr);
  }
  ASSERT_EQ(cudaMemcpy(flatP.data(), dp.get(), total * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(flatP[off[2] + 7]) && std::isnan(pCpu[2][7])) << "a NaN gradient's element is NaN on both";
  const bool bits = cfg.kind == "sgd" || cfg.kind == "lion";
  for (int i = 0; i < 3; ++i)
    for (int64_t j = 0; j < lmrt::numel(shapes[i]); ++j) {
      const float gpu = flatP[off[i] + j], host = pCpu[i][j];
      if (bits)
        ASSERT_TRUE(sameBits(gpu, host)) << cfg.kind << " param " << i << " [" << j << "]: " << gpu << " vs " << host;
      else
        ASSERT_LE(scaledUlps(gpu, host), kReducedUlps)
            << cfg.kind << " param " << i << " [" << j << "]: " << gpu << " vs " << host;
    }
}

INSTANTIATE_TEST_SUITE_P(CudaTrain, OtherOptimizers, ::testing::Values("sgd", "lion", "lamb", "adafactor"));

/* ZeRO stage 1's update on CUDA ranks (zero_chunks.h), on one GPU: each of 3 ranks
   (uneven slices, one parameter spanning two chunks, a frozen one) runs AdamW, SGD
   with momentum or Lion over only its slices with its packed state, then the slices
   are put together as the all-gather would; after three updates the parameters and
   the rank-0-first concatenation of the ranks' state are the whole update's, bit for
   bit. Each element's update reads only that element and its own state. Then stage 2's:
   each rank holds only its padded slices of the gradients (contract/zero3.h), packed, and
   the update reads them there (AdamWChunk.gradShift): the same bits again; and the norm from
   the ranks' owned blocks (their slices and the others' heads) is the whole gradients' norm,
   bit for bit. */
class ZeroSlices : public ::testing::TestWithParam<const char *> {};

TEST_P(ZeroSlices, RanksUpdateTheirSlicesAsTheWholeUpdate) {
  LMRT_REQUIRE_GPU();
  OptimizerConfig cfg;
  cfg.kind = GetParam();
  cfg.beta1 = 0.9, cfg.beta2 = cfg.kind == "lion" ? 0.99 : 0.999, cfg.eps = 1e-6;
  cfg.weightDecay = 0.01, cfg.momentum = 0.9, cfg.nesterov = true, cfg.clipValue = 0.5;
  const std::vector<int64_t> sizes = {1000, 70001, 7, 130};
  const int ranks = 3;
  std::vector<ChunkParam> ps;
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ps.push_back({total, sizes[i], i == 3, i % 2 == 0, i == 1 ? 0.5 : 1.0});
    total += (sizes[i] + 63) / 64 * 64;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> p0((size_t)total, 0.f), g((size_t)total, 0.f);
  for (const ChunkParam &q : ps)
    for (size_t j = (size_t)q.offset; j < (size_t)(q.offset + q.numel); ++j) p0[j] = normal(rng), g[j] = normal(rng);
  DeviceBuffer dg(total * 4, "g");
  ASSERT_EQ(cudaMemcpy(dg.get(), g.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const double lrs[3] = {1e-2, 2e-2, 3e-2}, clip = 0.75;
  /* Three updates of the chunks of `t` on parameters p (whole storage) with state of t.stateElems,
     from the gradients in `grads` (the whole ones, or a rank's packed slices). */
  auto run = [&](const ChunkTable &t, const DeviceBuffer &grads, std::vector<float> &p, std::vector<float> &m,
                 std::vector<float> &v) {
    const int64_t stateElems = std::max<int64_t>(1, t.stateElems);
    DeviceBuffer dp(total * 4, "p"), dm(stateElems * 4, "m"), dv(stateElems * 4, "v"),
        dc(std::max<size_t>(1, t.chunks.size()) * sizeof(AdamWChunk), "chunks");
    ASSERT_EQ(cudaMemcpy(dp.get(), p.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(dm.get(), 0, stateElems * 4), cudaSuccess);
    ASSERT_EQ(cudaMemset(dv.get(), 0, stateElems * 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dc.get(), t.chunks.data(), t.chunks.size() * sizeof(AdamWChunk), cudaMemcpyHostToDevice),
              cudaSuccess);
    const auto *c = static_cast<const AdamWChunk *>(dc.get());
    const int64_t n = (int64_t)t.chunks.size();
    for (int u = 1; u <= 3; ++u) {
      const OptimizerStep s = stepScalars(cfg, lrs[u - 1], u);
      if (cfg.kind == "adamw") {
        AdamWStep a{lrs[u - 1], cfg.beta1, cfg.beta2, cfg.eps, cfg.weightDecay, s.bc1, s.bc2, cfg.clipValue};
        launchAdamW(DType::F32, dp.get(), grads.get(), dm.get(), dv.get(), c, n, clip, a, nullptr);
      }
      if (cfg.kind == "sgd") launchSgd(DType::F32, dp.get(), grads.get(), dm.get(), c, n, clip, s, nullptr);
      if (cfg.kind == "lion") launchLion(DType::F32, dp.get(), grads.get(), dm.get(), c, n, clip, s, nullptr);
    }
    m.assign((size_t)stateElems, 0.f), v.assign((size_t)stateElems, 0.f);
    ASSERT_EQ(cudaMemcpy(p.data(), dp.get(), total * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(m.data(), dm.get(), stateElems * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(v.data(), dv.get(), stateElems * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  };
  std::vector<float> whole = p0, wm, wv;
  run(elementwiseChunks(ps, 0, 1, 64), dg, whole, wm, wv);
  // The whole gradients' norm as the backend sums it (each gradient's blocks, in order; a
  // frozen one has no gradient), for stage 2's norm from the slices: the same bits.
  std::vector<int64_t> wholeAt, wholeCount;
  for (const ChunkParam &q : ps) wholeAt.push_back(q.offset), wholeCount.push_back(q.frozen ? 0 : q.numel);
  const NormBlocks wb = normBlocks(wholeAt, wholeCount);
  DeviceBuffer dwb(wb.blocks.size() * sizeof(NormBlock), "blocks"), dws(wb.blocks.size() * 8, "sums");
  ASSERT_EQ(cudaMemcpy(dwb.get(), wb.blocks.data(), wb.blocks.size() * sizeof(NormBlock), cudaMemcpyHostToDevice),
            cudaSuccess);
  launchBlockSumSquares(DType::F32, dg.get(), static_cast<const NormBlock *>(dwb.get()), (int64_t)wb.blocks.size(),
                        static_cast<double *>(dws.get()), nullptr);
  std::vector<double> wholeSums(wb.blocks.size());
  ASSERT_EQ(cudaMemcpy(wholeSums.data(), dws.get(), wholeSums.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  double wholeSquares = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    double t = 0;
    for (int64_t b = wb.first[i]; b < wb.first[i + 1]; ++b) t += wholeSums[(size_t)b];
    wholeSquares += t;
  }
  std::vector<double> allSums;
  OwnedSumsLayout sumsLayout;
  for (int stage = 1; stage <= 2; ++stage) {
    std::vector<float> gathered = p0, gm((size_t)total, 0.f), gv((size_t)total, 0.f);
    for (int r = 0; r < ranks; ++r) {
      // Stage 2: this rank's padded gradient slices, packed as the backend packs them.
      std::vector<ChunkParam> mine_ps = ps;
      std::vector<float> slices;
      for (ChunkParam &q : mine_ps) {
        const int64_t c = zeroSliceLength(q.numel, ranks);
        q.gradSlice = (int64_t)slices.size();
        for (int64_t j = 0; j < c; ++j) {
          const int64_t e = r * c + j;
          slices.push_back(e < q.numel ? g[(size_t)(q.offset + e)] : 0.f);
        }
        slices.resize((slices.size() + 63) / 64 * 64, 0.f);
      }
      DeviceBuffer dslices(std::max<size_t>(1, slices.size()) * 4, "gradient slices");
      ASSERT_EQ(cudaMemcpy(dslices.get(), slices.data(), slices.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      const ChunkTable t = elementwiseChunks(stage == 2 ? mine_ps : ps, r, ranks, 64);
      if (stage == 2) {  // this rank's owned norm blocks (the backend's sliceGradNorm), from its slices and the heads
        std::vector<int64_t> numel, at;
        std::vector<bool> frozen;
        for (size_t i = 0; i < ps.size(); ++i)
          numel.push_back(ps[i].numel), frozen.push_back(ps[i].frozen), at.push_back(mine_ps[i].gradSlice);
        const SliceNorm sn = sliceNorm(numel, frozen, at, r, ranks);
        std::vector<float> heads((size_t)std::max<int64_t>(1, sn.headStride * ranks), 0.f);
        for (int q = 0; q < ranks; ++q)  // every rank's head, as the all-gather leaves them
          for (size_t i = 0; i < ps.size(); ++i)
            for (int64_t j = 0; !ps[i].frozen && j < zeroHeadLength(ps[i].numel, ranks, q); ++j)
              heads[(size_t)(q * sn.headStride + sn.headAt[i] + j)] =
                  g[(size_t)(ps[i].offset + zeroShard(ps[i].numel, ranks, q).begin + j)];
        DeviceBuffer dh(heads.size() * 4, "heads"), db(std::max<size_t>(1, sn.blocks.size()) * sizeof(OwnedNormBlock), "blocks"),
            ds(std::max<size_t>(1, sn.blocks.size()) * 8, "sums");
        ASSERT_EQ(cudaMemcpy(dh.get(), heads.data(), heads.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(db.get(), sn.blocks.data(), sn.blocks.size() * sizeof(OwnedNormBlock),
                             cudaMemcpyHostToDevice), cudaSuccess);
        launchOwnedBlockSumSquares(DType::F32, dslices.get(), dh.get(), sn.headStride,
                                   static_cast<const OwnedNormBlock *>(db.get()), (int64_t)sn.blocks.size(),
                                   static_cast<double *>(ds.get()), nullptr);
        std::vector<double> sums(sn.blocks.size());
        ASSERT_EQ(cudaMemcpy(sums.data(), ds.get(), sums.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
        if (allSums.empty()) allSums.assign((size_t)(sn.sums.total * ranks), 0.0), sumsLayout = sn.sums;
        for (size_t i = 0; i + 1 < sn.firstBlock.size(); ++i)  // the all-gather of the owned sums
          for (int64_t b = sn.firstBlock[i]; b < sn.firstBlock[i + 1]; ++b)
            allSums[(size_t)(r * sn.sums.total + sn.sums.at[i] + b - sn.firstBlock[i])] = sums[(size_t)b];
      }
      std::vector<float> mine = p0, m, v;
      run(t, stage == 2 ? dslices : dg, mine, m, v);
      // The all-gather: this rank's slice of each parameter (and of its state) into the whole.
      for (size_t i = 0; i < ps.size(); ++i)
        for (int64_t e = t.slices[i].begin; e < t.slices[i].end; ++e) {
          const size_t at = (size_t)(ps[i].offset + e), s = (size_t)(t.stateOffset[i] + e - t.slices[i].begin);
          gathered[at] = mine[at], gm[at] = m[s], gv[at] = v[s];
        }
    }
    for (size_t i = 0; i < ps.size(); ++i)
      for (int64_t e = 0; e < ps[i].numel; ++e) {
        const size_t at = (size_t)(ps[i].offset + e);
        ASSERT_EQ(std::memcmp(&gathered[at], &whole[at], 4), 0)
            << cfg.kind << " stage " << stage << " param " << i << " [" << e << "]";
        ASSERT_EQ(std::memcmp(&gm[at], &wm[at], 4), 0)
            << cfg.kind << " stage " << stage << " state 0 of param " << i << " [" << e << "]";
        if (cfg.kind == "adamw") {
          ASSERT_EQ(std::memcmp(&gv[at], &wv[at], 4), 0)
              << cfg.kind << " stage " << stage << " state 1 of param " << i << " [" << e << "]";
        }
      }
  }
  std::vector<int64_t> numel;
  std::vector<bool> frozen;
  for (const ChunkParam &q : ps) numel.push_back(q.numel), frozen.push_back(q.frozen);
  const double sliceSquares = addOwnedSums(numel, frozen, ranks, sumsLayout, allSums);
  EXPECT_GT(wholeSquares, 0.0);
  EXPECT_EQ(std::memcmp(&sliceSquares, &wholeSquares, 8), 0)
      << "stage 2's norm from the slices " << sliceSquares << ", the whole gradients' " << wholeSquares;
  EXPECT_NE(std::memcmp(whole.data(), p0.data(), 4 * 1000), 0) << "the update changed the parameters";
  EXPECT_EQ(std::memcmp(&whole[(size_t)ps[3].offset], &p0[(size_t)ps[3].offset], 4 * 130), 0) << "frozen";
}

INSTANTIATE_TEST_SUITE_P(CudaTrain, ZeroSlices, ::testing::Values("adamw", "sgd", "lion"));

/* fp16's loss scaling on the GPU (docs/mixed-precision.md): the train loop finds an
   overflow by the gradient norm, so one inf or NaN gradient among finite ones must
   make the GPU's norm non-finite; a clean step's update divides the scale out through
   the optimizer's gradScale, so gradients 2^16 times the true ones with gradScale
   2^-16 must give the CPU's AdamW update of the true ones. */
TEST(CudaTrain, LossScaleOverflowAndUnscale) {
  const int64_t n = 5000;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> p(n), g(n), scaled(n);
  for (int64_t i = 0; i < n; ++i) p[i] = normal(rng), g[i] = 1e-3f * normal(rng), scaled[i] = g[i] * 65536.0f;
  std::vector<float> pCpu = p;
  std::vector<ParamView> views = {{DType::F32, pCpu.data(), g.data(), n, true}};
  AdamWConfig cfg;
  cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weightDecay = 0.1;
  AdamW adamw(cfg);
  adamw.step(views, 1e-3, 1.0);

  LMRT_REQUIRE_GPU();
  DeviceBuffer dp(n * 4, "p"), dg(n * 4, "g"), dm(n * 4, "m"), dv(n * 4, "v"), dc(sizeof(AdamWChunk), "chunks");
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    std::vector<float> poisoned = scaled;
    poisoned[n / 3] = bad;
    ASSERT_EQ(cudaMemcpy(dg.get(), poisoned.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_FALSE(std::isfinite(deviceGradNorm(DType::F32, dg.get(), {0}, {n})))
        << "a gradient of " << bad << " must overflow the norm";
  }
  ASSERT_EQ(cudaMemcpy(dp.get(), p.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dg.get(), scaled.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dm.get(), 0, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dv.get(), 0, n * 4), cudaSuccess);
  const AdamWChunk chunk{0, n, 1, 1.0};
  ASSERT_EQ(cudaMemcpy(dc.get(), &chunk, sizeof chunk, cudaMemcpyHostToDevice), cudaSuccess);
  AdamWStep s{1e-3, cfg.beta1, cfg.beta2, cfg.eps, cfg.weightDecay, 1.0 - cfg.beta1, 1.0 - cfg.beta2, 0};
  launchAdamW(DType::F32, dp.get(), dg.get(), dm.get(), dv.get(), static_cast<const AdamWChunk *>(dc.get()), 1,
              1.0 / 65536, s, nullptr);
  std::vector<float> pGpu(n);
  ASSERT_EQ(cudaMemcpy(pGpu.data(), dp.get(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(pGpu[i], pCpu[i], 1e-6 * (1 + std::fabs(pCpu[i]))) << "element " << i;
}

TEST(CudaTrain, GemmEpilogues) {
  const int64_t R = 33, I = 40, O = 24;  // X [R, I], W [I, O], dY [R, O]
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(R * I), w(I * O), b(O), dy(R * O);
  for (auto *v : {&x, &w, &b, &dy})
    for (float &e : *v) e = normal(rng);
  std::vector<double> lin(R * O), dw(I * O, 0.0), db(O, 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double s = b[o];
      for (int64_t i = 0; i < I; ++i) s += (double)x[r * I + i] * w[i * O + o];
      lin[r * O + o] = s;
      db[o] += dy[r * O + o];
      for (int64_t i = 0; i < I; ++i) dw[i * O + o] += (double)x[r * I + i] * dy[r * O + o];
    }

  LMRT_REQUIRE_GPU();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    Gemm gemm(stream, false);
    DeviceBuffer dx(x.size() * 4, "x"), dwt(w.size() * 4, "w"), dbias(b.size() * 4, "b"), ddy(dy.size() * 4, "dy"),
        dout(R * O * 4, "out"), ddw(I * O * 4, "dw"), ddb(O * 4, "db");
    cudaMemcpy(dx.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dwt.get(), w.data(), w.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dbias.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(ddy.get(), dy.data(), dy.size() * 4, cudaMemcpyHostToDevice);
    std::vector<float> out(R * O), gdw(I * O), gdb(O);
    for (Epilogue ep : {Epilogue::Bias, Epilogue::GeluBias}) {
      GemmArgs g;
      g.m = R, g.n = O, g.k = I, g.a = dx.get(), g.lda = I, g.b = dwt.get(), g.ldb = O, g.c = dout.get(), g.ldc = O;
      g.epilogue = ep, g.bias = dbias.get();
      gemm.run(g);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      cudaMemcpy(out.data(), dout.get(), out.size() * 4, cudaMemcpyDeviceToHost);
      for (int64_t i = 0; i < R * O; ++i) {
        double want = ep == Epilogue::Bias ? lin[i] : lmc::gelu(lin[i]);
        ASSERT_NEAR(out[i], want, 1e-4 * (1 + std::fabs(want))) << "epilogue " << (int)ep << " element " << i;
      }
    }
    GemmArgs g;  // dW = X^T dY with db = column sums of dY
    g.ta = true, g.m = I, g.n = O, g.k = R, g.a = dx.get(), g.lda = I, g.b = ddy.get(), g.ldb = O, g.c = ddw.get();
    g.ldc = O, g.epilogue = Epilogue::BiasGrad, g.biasGrad = ddb.get();
    gemm.run(g);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaMemcpy(gdw.data(), ddw.get(), gdw.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(gdb.data(), ddb.get(), gdb.size() * 4, cudaMemcpyDeviceToHost);
    for (int64_t i = 0; i < I * O; ++i) ASSERT_NEAR(gdw[i], dw[i], 1e-4 * (1 + std::fabs(dw[i]))) << "dW " << i;
    for (int64_t o = 0; o < O; ++o) ASSERT_NEAR(gdb[o], db[o], 1e-4 * (1 + std::fabs(db[o]))) << "db " << o;
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace lmrt::cuda::test
