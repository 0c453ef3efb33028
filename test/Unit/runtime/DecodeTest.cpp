/* Tests the plan side of incremental decoding (docs/plan-format.md, "States"):
   a hand-built plan whose prefill and decode programs keep a one-layer
   attention's key/value cache in a STATE buffer. Decoding token by token gives
   the prefill program's logits at every position (the cache is kept between
   runs and updated in place), and each way of breaking the contract around
   states and the inference programs is refused with a message saying where. */
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "runtime/exec/session.h"
#include "base/tensor.h"
#include "runtime/exec/validate.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

using test::program;
using PB = test::ProgramBuilder;

constexpr int64_t kW = 3, kV = 5, kD = 4;

/* tinyPlan plus prefill (tokens [1, W]) and decode (tokens [1, 1]):
     h = embedding(wte, tokens); c' = cache_write(c, h, offset);
     y = cached_attention(h, c', c', offset, heads 2); logits = y @ w
   with the one state "c" [1, W, D] serving as keys and values. */
plan::Plan decodePlan() {
  test::TinyDims d;
  d.T = kW, d.V = kV, d.D = kD;
  plan::Plan p = test::tinyPlan(plan::F64, d);
  plan::State *st = p.add_states();
  st->set_name("attn.k_cache");
  *st->mutable_type() = PB::type(plan::F64, {1, kW, kD});
  for (int64_t T : {kW, int64_t(1)}) {
    PB b{p.add_programs()};
    b.prog->set_name(T == kW ? "prefill" : "decode");
    plan::TensorType tok = PB::type(plan::I32, {1, T}), off = PB::type(plan::I32, {});
    b.input("tokens", tok, kV);
    b.input("offset", off, kW - T + 1);
    int t = b.add(plan::Buffer::INPUT, tok, "tokens"), o = b.add(plan::Buffer::INPUT, off, "offset");
    int wte = b.add(plan::Buffer::PARAM, PB::type(plan::F64, {kV, kD}), "wte");
    int w = b.add(plan::Buffer::PARAM, PB::type(plan::F64, {kD, kV}), "w");
    int c = b.add(plan::Buffer::STATE, PB::type(plan::F64, {1, kW, kD}), "attn.k_cache");
    int h = b.arena(PB::type(plan::F64, {1, T, kD}));
    b.step("embedding", {wte, t}, {h}, "tiny.lm:5:3");
    b.step("cache_write", {c, h, o}, {c}, "tiny.lm:7:7");
    int y = b.arena(PB::type(plan::F64, {1, T, kD}));
    (*b.step("cached_attention", {h, c, c, o}, {y}, "tiny.lm:7:7")->mutable_attrs())["num_heads"].set_i(2);
    int logits = b.arena(PB::type(plan::F64, {1, T, kV}));
    b.step("matmul", {y, w}, {logits}, "tiny.lm:8:5");
    b.output("logits", logits);
  }
  return p;
}

std::string errorAfter(const std::function<void(plan::Plan &)> &mutate) {
  plan::Plan p = decodePlan();
  mutate(p);
  try {
    validatePlan(p, "tiny.plan");
  } catch (const Error &e) {
    return e.what();
  }
  return "(valid)";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(Decode, PlanIsValid) { EXPECT_EQ(errorAfter([](plan::Plan &) {}), "(valid)"); }

TEST(Decode, DecodingMatchesPrefillAtEveryPosition) {
  std::unique_ptr<Session> s = Session::fromPlan(decodePlan(), "tiny.plan");
  s->initParams(7);
  std::vector<int32_t> tokens = {3, 1, 4};
  int32_t zero = 0;
  s->run("prefill", {{"tokens", TensorRef{tokens.data(), TensorType{DType::I32, {1, kW}}}},
                     {"offset", TensorRef{&zero, TensorType{DType::I32, {}}}}});
  TensorRef all = s->output("prefill", "logits");
  std::vector<double> want(all.as<double>(), all.as<double>() + kW * kV);
  // Prefill the first token alone (the rest padding), then decode the others.
  std::vector<int32_t> first = {tokens[0], 0, 0};
  s->run("prefill", {{"tokens", TensorRef{first.data(), TensorType{DType::I32, {1, kW}}}},
                     {"offset", TensorRef{&zero, TensorType{DType::I32, {}}}}});
  TensorRef row0 = s->output("prefill", "logits");
  for (int64_t v = 0; v < kV; ++v) EXPECT_NEAR(row0.as<double>()[v], want[v], 1e-12);
  for (int32_t p = 1; p < kW; ++p) {
    int32_t tok = tokens[p], off = p;
    s->run("decode", {{"tokens", TensorRef{&tok, TensorType{DType::I32, {1, 1}}}},
                      {"offset", TensorRef{&off, TensorType{DType::I32, {}}}}});
    TensorRef got = s->output("decode", "logits");
    for (int64_t v = 0; v < kV; ++v) EXPECT_NEAR(got.as<double>()[v], want[p * kV + v], 1e-12) << p << " " << v;
  }
  // An offset beyond the window is refused at the program boundary.
  int32_t tok = 1, off = kW;
  try {
    s->run("decode", {{"tokens", TensorRef{&tok, TensorType{DType::I32, {1, 1}}}},
                      {"offset", TensorRef{&off, TensorType{DType::I32, {}}}}});
    FAIL() << "offset " << off << " accepted";
  } catch (const Error &e) {
    std::string msg = e.what();
    EXPECT_HAS(msg, "program 'decode', input 'offset'");
    EXPECT_HAS(msg, "3 is outside [0, 3)");
  }
}

TEST(Decode, StateErrors) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_states(0)->set_name("other"); }),
             "program 'prefill', buffer 4 (STATE 'attn.k_cache'): no state named 'attn.k_cache'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { *p.add_states() = p.states(0); }), "state 1 'attn.k_cache': declared twice");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_states(0)->mutable_type()->set_shape(0, 2); }),
             "a state is a float [1, window, dim] cache");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               p.mutable_states(0)->mutable_type()->set_shape(1, 4);
               for (const char *n : {"prefill", "decode"}) {
                 program(p, n)->mutable_buffers(4)->mutable_type()->set_shape(1, 4);
                 program(p, n)->mutable_buffers(4)->set_size_bytes(4 * kD * 8);
               }
             }),
             "state 'attn.k_cache' is f64[1, 4, 4], expected a window of 3 positions");
  // A STATE buffer outside the inference programs.
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               PB b{program(p, "forward")};
               b.add(plan::Buffer::STATE, PB::type(plan::F64, {1, kW, kD}), "attn.k_cache");
             }),
             "only the prefill, decode and encode programs use states");
  // Only cache_write writes a state, and only in place.
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "decode")->mutable_steps(0)->set_outputs(0, 4); }),
             "program 'decode', step 0 (embedding, from tiny.lm:5:3): output 0 writes STATE buffer 4; only an op "
             "that updates state in place (cache_write)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "decode")->mutable_steps(1)->set_inputs(0, 5); }),
             "program 'decode', step 1 (cache_write, from tiny.lm:7:7): output 0 writes STATE buffer 4");
}

/* An encode program (an encoder-decoder model's) beside prefill and decode:
   its inputs and its place are checked (the E2E tests run real ones). */
void addEncode(plan::Plan &p, const char *input) {
  PB b{p.add_programs()};
  b.prog->set_name("encode");
  plan::TensorType ids = PB::type(plan::I32, {1, 4}), mask = PB::type(plan::F64, {1, 4});
  b.input(input, ids, kV);
  b.input("attention_mask", mask, 0);
  b.add(plan::Buffer::INPUT, ids, input);
  b.add(plan::Buffer::INPUT, mask, "attention_mask");
}

TEST(Decode, EncodeProgramErrors) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addEncode(p, "tokens"); }),
             "program 'encode' must read exactly the inputs 'ids' and 'attention_mask'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               p.mutable_programs()->RemoveLast();
               p.mutable_programs()->RemoveLast();
               p.clear_states();
               addEncode(p, "ids");
             }),
             "has an 'encode' program but no 'prefill' and 'decode'");
  // prefill and decode may read the encoder's attention_mask only beside an encode program.
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               program(p, "decode")->mutable_inputs(1)->set_name("attention_mask");
               program(p, "decode")->mutable_buffers(1)->set_name("attention_mask");
             }),
             "program 'decode' reads input 'attention_mask'; it reads only 'tokens' and 'offset'");
}

TEST(Decode, ProgramErrors) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_programs()->RemoveLast(); }),
             "has a 'prefill' program but no 'decode'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "decode")->mutable_inputs(1)->set_vocab(2); }),
             "program 'decode', input 'offset': its bound is 2, expected 3");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "prefill")->mutable_inputs(1)->set_vocab(3); }),
             "program 'prefill', input 'offset': its bound is 3, expected 1");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               program(p, "decode")->mutable_inputs(1)->set_name("pos");
               program(p, "decode")->mutable_buffers(1)->set_name("pos");
             }),
             "program 'decode' reads input 'pos'; it reads only 'tokens' and 'offset'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               program(p, "decode")->mutable_inputs(0)->mutable_type()->set_shape(1, 2);
               program(p, "decode")->mutable_buffers(0)->mutable_type()->set_shape(1, 2);
               program(p, "decode")->mutable_buffers(0)->set_size_bytes(8);
             }),
             "program 'decode', input 'tokens': is i32[1, 2], expected i32[1, 1]");
  // The offset operand of a kernel must be an i32 scalar (the kernel's check).
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "decode")->mutable_steps(2)->set_inputs(3, 0); }),
             "cached_attention: offset [1, 1] must be a scalar");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               p.mutable_programs()->RemoveLast();
               p.mutable_programs()->RemoveLast();
             }),
             "declares states but has no prefill and decode programs");
}

}  // namespace
}  // namespace lmrt
