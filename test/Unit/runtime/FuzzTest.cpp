/* Tests that damaged plans never crash the runtime: random byte flips in a
   valid plan's payload either fail to parse, fail validation with an Error, or
   pass validation and then run (or fail with an Error) without a crash. */
#include <gtest/gtest.h>

#include <google/protobuf/stubs/logging.h>

#include "base/hash.h"
#include "runtime/exec/session.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

TEST(Fuzz, ByteFlipsNeverCrash) {
  const std::string payload = test::tinyPlan().SerializeAsString();
  int parsed = 0, rejected = 0, ran = 0;
  for (uint64_t iter = 0; iter < 2000; ++iter) {
    std::string bytes = payload;
    uint64_t r = splitmix64(iter);
    int flips = 1 + (int)(r % 3);
    for (int k = 0; k < flips; ++k) {
      uint64_t x = splitmix64(r + k + 1);
      bytes[x % bytes.size()] ^= (char)(1 + (x >> 32) % 255);
    }
    plan::Plan p;
    {
      google::protobuf::LogSilencer quiet;  // invalid UTF-8 in strings is expected here
      if (!p.ParseFromString(bytes)) continue;
    }
    ++parsed;
    std::unique_ptr<Session> s;
    try {
      s = Session::fromPlan(p, "fuzz.plan");
    } catch (const Error &) {
      ++rejected;
      continue;
    }
    s->initParams(iter);
    for (const plan::Program &prog : s->plan().programs()) {
      std::map<std::string, std::vector<int32_t>> data;
      std::map<std::string, TensorRef> in;
      for (const plan::Input &decl : prog.inputs()) {
        TensorType t{DType::I32, {decl.type().shape().begin(), decl.type().shape().end()}};
        auto &v = data[decl.name()];
        v.assign((size_t)t.numel(), 0);
        for (size_t i = 0; i < v.size(); ++i) v[i] = (int32_t)(i % std::max<int64_t>(1, decl.vocab()));
        in[decl.name()] = TensorRef{v.data(), t};
      }
      try {
        s->run(prog.name(), in);
        ++ran;
      } catch (const Error &) {
      }
    }
  }
  // The mix shows the loop exercised all three paths.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 50);
  EXPECT_GT(ran, 10);
  std::printf("fuzz: %d parsed, %d rejected by validation, %d program runs\n", parsed, rejected, ran);
}

}  // namespace
}  // namespace lmrt
