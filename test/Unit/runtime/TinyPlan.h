/* Implements: a hand-built tiny plan for the runtime unit tests: a bigram model
     logits = embedding(wte, tokens[:, :-1]) @ w;  loss = cross_entropy(logits, tokens[:, 1:])
   with its backward steps written out, plus a builder that lays buffers out in
   the arena. Tests mutate it to provoke each validation error. */
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "contract/plan.pb.h"

namespace lmrt::test {

struct ProgramBuilder {
  plan::Program *prog;
  int64_t next = 0;  // bump allocator, 64-byte aligned

  static plan::TensorType type(plan::DType dt, std::vector<int64_t> shape) {
    plan::TensorType t;
    t.set_dtype(dt);
    for (int64_t d : shape) t.add_shape(d);
    return t;
  }
  static int64_t bytes(const plan::TensorType &t) {
    int64_t n = t.dtype() == plan::F64 ? 8 : 4;
    for (int64_t d : t.shape()) n *= d;
    return n;
  }
  int add(plan::Buffer::Kind kind, const plan::TensorType &t, const std::string &name = "") {
    plan::Buffer *b = prog->add_buffers();
    b->set_kind(kind);
    *b->mutable_type() = t;
    b->set_size_bytes(bytes(t));
    b->set_name(name);
    if (kind == plan::Buffer::ARENA) {
      b->set_offset(next);
      next += (bytes(t) + 63) / 64 * 64;
      prog->set_arena_bytes(next);
    }
    return prog->buffers_size() - 1;
  }
  int arena(const plan::TensorType &t) { return add(plan::Buffer::ARENA, t); }
  int constantScalar(plan::DType dt, double v) {
    int id = add(plan::Buffer::CONSTANT, type(dt, {}));
    std::string data(dt == plan::F64 ? 8 : 4, '\0');
    if (dt == plan::F64) std::memcpy(data.data(), &v, 8);
    else {
      float f = (float)v;
      std::memcpy(data.data(), &f, 4);
    }
    prog->mutable_buffers(id)->set_data(data);
    return id;
  }
  plan::Step *step(const std::string &op, std::vector<int> in, std::vector<int> out,
                   const std::string &loc = "") {
    plan::Step *s = prog->add_steps();
    s->set_op(op);
    for (int i : in) s->add_inputs(i);
    for (int o : out) s->add_outputs(o);
    s->set_loc(loc);
    return s;
  }
  static void ints(plan::Step *s, const std::string &name, std::vector<int64_t> v) {
    auto *l = (*s->mutable_attrs())[name].mutable_ints();
    for (int64_t x : v) l->add_v(x);
  }
  void output(const std::string &name, int id) {
    plan::Output *o = prog->add_outputs();
    o->set_name(name);
    o->set_buffer(id);
  }
  void input(const std::string &name, const plan::TensorType &t, int64_t vocab) {
    plan::Input *in = prog->add_inputs();
    in->set_name(name);
    *in->mutable_type() = t;
    in->set_vocab(vocab);
  }
};

struct TinyDims {
  int64_t B = 2, T = 3, V = 5, D = 4;
};

/* The bigram plan in dtype `dt` (F32 or F64). Programs: train_step, eval, forward. */
inline plan::Plan tinyPlan(plan::DType dt = plan::F64, TinyDims d = {}) {
  using PB = ProgramBuilder;
  plan::Plan p;
  p.set_source("tiny.lm");
  p.set_model("bigram");
  p.set_objective("causal_lm");
  auto addParam = [&](const std::string &name, std::vector<int64_t> shape, double std) {
    plan::Param *q = p.add_params();
    q->set_name(name);
    *q->mutable_type() = PB::type(dt, shape);
    q->mutable_init()->set_kind(plan::Init::NORMAL);
    q->mutable_init()->set_std(std);
    q->set_weight_decay(true);
  };
  addParam("wte", {d.V, d.D}, 0.02);
  addParam("w", {d.D, d.V}, 0.5);
  p.set_param_count(2 * d.V * d.D);
  plan::TensorType tokens = PB::type(plan::I32, {d.B, d.T + 1});
  plan::Input *in = p.add_inputs();
  in->set_name("tokens");
  *in->mutable_type() = tokens;
  in->set_vocab(d.V);

  auto forwardPart = [&](PB &b, int tok, bool sliced, int &ids, int &h, int &logits, int &wte, int &w) {
    wte = b.add(plan::Buffer::PARAM, PB::type(dt, {d.V, d.D}), "wte");
    w = b.add(plan::Buffer::PARAM, PB::type(dt, {d.D, d.V}), "w");
    ids = tok;
    if (sliced) {
      ids = b.arena(PB::type(plan::I32, {d.B, d.T}));
      plan::Step *s = b.step("slice", {tok}, {ids}, "tiny.lm:9:22");
      PB::ints(s, "start", {0, 0});
      PB::ints(s, "limit", {d.B, d.T});
      PB::ints(s, "stride", {1, 1});
    }
    h = b.arena(PB::type(dt, {d.B, d.T, d.D}));
    b.step("embedding", {wte, ids}, {h}, "tiny.lm:5:3");
    logits = b.arena(PB::type(dt, {d.B, d.T, d.V}));
    b.step("matmul", {h, w}, {logits}, "tiny.lm:6:5");
  };
  auto lossPart = [&](PB &b, int tok, int logits) {
    int targets = b.arena(PB::type(plan::I32, {d.B, d.T}));
    plan::Step *s = b.step("slice", {tok}, {targets}, "tiny.lm:9:40");
    PB::ints(s, "start", {0, 1});
    PB::ints(s, "limit", {d.B, d.T + 1});
    PB::ints(s, "stride", {1, 1});
    int loss = b.arena(PB::type(dt, {}));
    b.step("cross_entropy", {logits, targets}, {loss}, "tiny.lm:9:10");
    b.output("loss", loss);
    return std::make_pair(targets, loss);
  };

  {  // train_step
    PB b{p.add_programs()};
    b.prog->set_name("train_step");
    b.input("tokens", tokens, d.V);
    int tok = b.add(plan::Buffer::INPUT, tokens, "tokens");
    int ids, h, logits, wte, w;
    forwardPart(b, tok, true, ids, h, logits, wte, w);
    auto [targets, loss] = lossPart(b, tok, logits);
    (void)loss;
    int one = b.constantScalar(dt, 1.0);
    int dlogits = b.arena(PB::type(dt, {d.B, d.T, d.V}));
    b.step("cross_entropy_grad", {logits, targets, one}, {dlogits}, "tiny.lm:9:10");
    int h2 = b.arena(PB::type(dt, {d.B * d.T, d.D}));
    b.step("reshape", {h}, {h2}, "tiny.lm:6:5");
    int dl2 = b.arena(PB::type(dt, {d.B * d.T, d.V}));
    b.step("reshape", {dlogits}, {dl2}, "tiny.lm:6:5");
    int gw = b.add(plan::Buffer::GRAD, PB::type(dt, {d.D, d.V}), "w");
    (*b.step("matmul", {h2, dl2}, {gw}, "tiny.lm:6:5")->mutable_attrs())["transpose_lhs"].set_b(true);
    int dh = b.arena(PB::type(dt, {d.B, d.T, d.D}));
    (*b.step("matmul", {dlogits, w}, {dh}, "tiny.lm:6:5")->mutable_attrs())["transpose_rhs"].set_b(true);
    int gwte = b.add(plan::Buffer::GRAD, PB::type(dt, {d.V, d.D}), "wte");
    b.step("embedding_grad", {ids, dh}, {gwte}, "tiny.lm:5:3");
    b.output("grad:w", gw);
    b.output("grad:wte", gwte);
  }
  {  // eval
    PB b{p.add_programs()};
    b.prog->set_name("eval");
    b.input("tokens", tokens, d.V);
    int tok = b.add(plan::Buffer::INPUT, tokens, "tokens");
    int ids, h, logits, wte, w;
    forwardPart(b, tok, true, ids, h, logits, wte, w);
    lossPart(b, tok, logits);
  }
  {  // forward
    PB b{p.add_programs()};
    b.prog->set_name("forward");
    plan::TensorType ftok = PB::type(plan::I32, {d.B, d.T});
    b.input("tokens", ftok, d.V);
    int tok = b.add(plan::Buffer::INPUT, ftok, "tokens");
    int ids, h, logits, wte, w;
    forwardPart(b, tok, false, ids, h, logits, wte, w);
    b.output("logits", logits);
  }
  plan::Optimizer *o = p.mutable_train()->mutable_optimizer();
  o->set_kind("adamw");
  o->set_lr(1e-3);
  o->set_beta1(0.9);
  o->set_beta2(0.99);
  o->set_eps(1e-8);
  o->set_weight_decay(0.1);
  p.mutable_train()->mutable_schedule()->set_kind("cosine");
  p.mutable_train()->mutable_schedule()->set_warmup_steps(10);
  p.mutable_train()->mutable_schedule()->set_min_lr(1e-4);
  p.mutable_train()->set_clip_grad_norm(1.0);
  p.mutable_data()->set_transform("causal");
  p.mutable_data()->set_batch(d.B);
  p.mutable_data()->set_seq(d.T);
  p.mutable_data()->set_vocab(d.V);
  return p;
}

inline plan::Program *program(plan::Plan &p, const std::string &name) {
  for (auto &prog : *p.mutable_programs())
    if (prog.name() == name) return &prog;
  return nullptr;
}

}  // namespace lmrt::test
