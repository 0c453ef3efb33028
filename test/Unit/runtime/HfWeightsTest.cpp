/* Tests the Hugging Face weights export and import (runtime/weights/hf_weights.h)
   on the hand-built tiny plan with a map that transposes one parameter and ties
   a name to another: the file's layout, the config.json, the round trips (byte
   for byte both ways), and the errors of mismatched inputs. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test/Unit/ProcessTempDir.h"
#include "base/file_io.h"
#include "runtime/weights/hf_weights.h"
#include "contract/plan_types.h"
#include "runtime/weights/safetensors.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

std::string dir(const std::string &name) {
  std::string d = lmrt_test::processTempDir() + "lmrt_hf_" + name;
  std::string cmd = "rm -rf '" + d + "'*";  // and its .w/.back files
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return d;
}

plan::Plan mappedPlan() {
  plan::Plan p = test::tinyPlan(plan::F32);
  plan::WeightExport *w = p.add_weight_exports();
  w->set_format("hf");
  w->set_architecture("TinyForCausalLM");
  (*w->mutable_config())["vocab_size"].set_i(8);
  (*w->mutable_config())["eps"].set_f(1e-5);
  (*w->mutable_config())["tie_word_embeddings"].set_b(true);
  plan::WeightMapEntry *e = w->add_entries();
  e->set_param("wte");
  e->add_names("model.embed.weight");
  e->add_tied("lm_head.weight");
  e = w->add_entries();
  e->set_param("w");
  e->add_names("model.out.weight");
  e->set_transpose(true);
  return p;
}

/* Distinct values (element i of parameter k is k + i / 1000) in plan names. */
std::string writeWeights(const plan::Plan &p, const std::string &path) {
  std::vector<std::vector<float>> data;
  std::vector<std::pair<std::string, TensorRef>> refs;
  for (int k = 0; k < p.params_size(); ++k) {
    TensorType t = toTensorType(p.params(k).type());
    data.emplace_back(t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) data.back()[i] = (float)k + (float)i / 1000.0f;
  }
  for (int k = 0; k < p.params_size(); ++k)
    refs.push_back({p.params(k).name(), TensorRef{data[k].data(), toTensorType(p.params(k).type())}});
  writeSafetensors(path, refs);
  return path;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(HfWeights, ExportLayoutAndConfig) {
  plan::Plan p = mappedPlan();
  std::string d = dir("export");
  std::string w = writeWeights(p, d + ".w.safetensors");
  exportHf(p, {"tiny.plan", w, d, false});
  SafetensorsFile f = readSafetensors(d + "/model.safetensors");
  // Names sorted as safetensors writes them; the tied name left out; w transposed.
  EXPECT_EQ(f.order, (std::vector<std::string>{"model.embed.weight", "model.out.weight"}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
  const SafetensorsTensor &out = f.tensors.at("model.out.weight");
  SafetensorsFile src = readSafetensors(w);
  const SafetensorsTensor &wt = src.tensors.at("w");
  ASSERT_EQ(out.type.shape, (Shape{wt.type.shape[1], wt.type.shape[0]}));
  const int64_t R = wt.type.shape[0], C = wt.type.shape[1];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c)
      EXPECT_EQ(0, std::memcmp(out.bytes.data() + 4 * (c * R + r), wt.bytes.data() + 4 * (r * C + c), 4));
  std::string config = readWholeFile(d + "/config.json", "config");
  EXPECT_EQ(config,
            "{\n  \"architectures\": [\n    \"TinyForCausalLM\"\n  ],\n  \"eps\": 1e-05,\n"
            "  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\",\n  \"vocab_size\": 8\n}\n");
  // A second export into the same directory needs --overwrite.
  EXPECT_HAS(errorOf([&] { exportHf(p, {"tiny.plan", w, d, false}); }), "already holds model.safetensors; pass --overwrite");
  EXPECT_NO_THROW(exportHf(p, {"tiny.plan", w, d, true}));
}

TEST(HfWeights, RoundTripsAreByteExact) {
  plan::Plan p = mappedPlan();
  std::string d = dir("roundtrip");
  std::string w = writeWeights(p, d + ".w.safetensors");
  exportHf(p, {"tiny.plan", w, d, false});
  importHf(p, {"tiny.plan", d, d + ".back.safetensors", false});
  EXPECT_EQ(readWholeFile(w, "w"), readWholeFile(d + ".back.safetensors", "w"));
  exportHf(p, {"tiny.plan", d + ".back.safetensors", d + "2", false});
  EXPECT_EQ(readWholeFile(d + "/model.safetensors", "m"), readWholeFile(d + "2/model.safetensors", "m"));
  EXPECT_HAS(errorOf([&] { importHf(p, {"tiny.plan", d, d + ".back.safetensors", false}); }),
             "exists; pass --overwrite");
}

TEST(HfWeights, ImportErrors) {
  plan::Plan p = mappedPlan();
  std::string d = dir("import");
  std::string w = writeWeights(p, d + ".w.safetensors");
  exportHf(p, {"tiny.plan", w, d, false});
  SafetensorsFile f = readSafetensors(d + "/model.safetensors");
  auto rewrite = [&](const std::function<void(std::vector<std::pair<std::string, TensorRef>> &)> &edit) {
    std::vector<std::string> copies;
    std::vector<std::pair<std::string, TensorRef>> refs;
    copies.reserve(8);
    for (const std::string &n : f.order) {
      const SafetensorsTensor &t = f.tensors.at(n);
      copies.emplace_back(t.bytes);
      refs.push_back({n, TensorRef{copies.back().data(), t.type}});
    }
    edit(refs);
    writeSafetensors(d + "/model.safetensors", refs, {{"format", "pt"}});
  };
  auto importErr = [&] { return errorOf([&] { importHf(p, {"tiny.plan", d, d + ".x.safetensors", true}); }); };

  rewrite([](auto &refs) { refs.pop_back(); });
  EXPECT_HAS(importErr(), "no tensor 'model.out.weight' (parameter 'w' f32[");
  rewrite([](auto &refs) { refs.push_back({"model.extra", refs[0].second}); });
  EXPECT_HAS(importErr(), "tensor 'model.extra' is not in the hf name map of plan 'tiny.plan' (TinyForCausalLM");
  rewrite([](auto &refs) { std::swap(refs[1].second.type.shape[0], refs[1].second.type.shape[1]); });
  EXPECT_HAS(importErr(), "tensor 'model.out.weight' is f32[");
  // A tied copy present in the file must equal the tensor it is tied to.
  std::vector<float> other(f.tensors.at("model.embed.weight").type.numel(), 0.5f);
  rewrite([&](auto &refs) { refs.push_back({"lm_head.weight", TensorRef{other.data(), refs[0].second.type}}); });
  EXPECT_HAS(importErr(), "tensor 'lm_head.weight' differs from 'model.embed.weight', which the map ties it to");
  rewrite([](auto &refs) { refs.push_back({"lm_head.weight", refs[0].second}); });
  EXPECT_EQ(importErr(), "(no error)");
  // Non-finite weights are refused.
  std::vector<float> nan(f.tensors.at("model.embed.weight").type.numel(), NAN);
  rewrite([&](auto &refs) { refs[0].second.data = nan.data(); });
  EXPECT_HAS(importErr(), "tensor 'model.embed.weight' holds nan at element 0");
  // config.json must agree with the map's config.
  rewrite([](auto &) {});
  std::ofstream(d + "/config.json") << "{\"vocab_size\": 9, \"eps\": 1e-05, \"n_inner\": null}";
  EXPECT_HAS(importErr(), "config.json': vocab_size is 9, but plan 'tiny.plan' was compiled with vocab_size = 8");
  std::ofstream(d + "/config.json") << "{\"vocab_size\": 8.0, \"eps\": 1e-05, \"extra\": 1}";
  EXPECT_EQ(importErr(), "(no error)");
  std::remove((d + "/config.json").c_str());
  EXPECT_HAS(importErr(), "has no config.json");
  std::remove((d + "/model.safetensors").c_str());
  EXPECT_HAS(importErr(), "has no model.safetensors");
}

TEST(HfWeights, ExportErrors) {
  plan::Plan p = mappedPlan();
  std::string d = dir("exporterr");
  std::string w = writeWeights(p, d + ".w.safetensors");
  plan::Plan bigger = test::tinyPlan(plan::F32, test::TinyDims{16, 4, 2, 3});
  std::string wb = writeWeights(bigger, d + ".wb.safetensors");
  EXPECT_HAS(errorOf([&] { exportHf(p, {"tiny.plan", wb, d, false}); }), "tensor 'wte' is f32[");
  plan::Plan unmapped = test::tinyPlan(plan::F32);
  EXPECT_HAS(errorOf([&] { exportHf(unmapped, {"tiny.plan", w, d, false}); }),
             "plan 'tiny.plan' (from tiny.lm) has no 'hf' name map: add an `export hf \"ModelClass\" { ... }` section");
  EXPECT_HAS(errorOf([&] { exportHf(p, {"tiny.plan", w, w, false}); }), "exists and is not a directory");
}

TEST(HfWeights, JsonDouble) {
  EXPECT_EQ(jsonDouble(1e-5), "1e-05");
  EXPECT_EQ(jsonDouble(10000.0), "10000.0");
  EXPECT_EQ(jsonDouble(0.0), "0.0");
  EXPECT_EQ(jsonDouble(0.1), "0.1");
  EXPECT_EQ(jsonDouble(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(jsonDouble(-2.5e-12), "-2.5e-12");
  EXPECT_EQ(jsonDouble(1e16), "1e+16");
  EXPECT_EQ(jsonDouble(123456.789), "123456.789");
  EXPECT_EQ(jsonDouble(0.0001), "0.0001");
  EXPECT_EQ(jsonDouble(0.02), "0.02");
}

}  // namespace
}  // namespace lmrt
