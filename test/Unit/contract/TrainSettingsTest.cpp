//===- TrainSettingsTest.cpp - The train settings' table, read four ways -===//
//
// Tests the table of contract/train_settings.h against the four places that
// read it: a `train` block compiled by the frontend, the module attribute
// turned into the plan's TrainConfig by the plan writer, the plan contract's
// check of that TrainConfig, and the runtime's makeSchedule. Every kind the
// frontend accepts trains; every default reaches the plan; and at the values
// around every bound, the frontend, the contract and (for the numbers of a
// schedule) the runtime accept and refuse alike.
//
//===----------------------------------------------------------------------===//
#include "base/tensor.h"
#include "codegen/ModuleConfig.h"
#include "contract/contract.h"
#include "contract/train_settings.h"
#include "frontend/Frontend.h"
#include "runtime/train/schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

using namespace mlir;
namespace st = lmrt::settings;
namespace plan = lmrt::plan;

namespace {

/// A train block through the frontend and the plan writer (which holds the
/// TrainConfig to the contract too): the diagnostics, and the TrainConfig when
/// both succeed.
struct Compiled {
  std::string diagnostics;
  std::optional<plan::TrainConfig> train;
};

Compiled compileTrain(const std::string &body) {
  Compiled out;
  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("train {\n" + body + "\n}\n", "t.lm"),
                               llvm::SMLoc());
  llvm::raw_string_ostream os(out.diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
  OwningOpRef<ModuleOp> module = lm::emitModuleFromSource(sourceMgr, context, lm::FrontendOptions());
  plan::Plan p;
  if (module && succeeded(lm::readModuleConfig(*module, p)))
    out.train = p.train();
  os.flush();
  return out;
}

bool contractAccepts(const plan::TrainConfig &train) { return !lmrt::contract::checkTrainConfig(train); }

bool runtimeAccepts(const plan::TrainConfig &train) {
  const plan::Schedule &s = train.schedule();
  try {
    lmrt::makeSchedule(s.kind(), train.optimizer().lr(), s.min_lr(), s.warmup_steps(), s.decay_steps(), 100,
                       s.cooldown_fraction(), s.warmup_fraction());
    return true;
  } catch (const lmrt::Error &) {
    return false;
  }
}

/// The kind of schedule that first takes `s`, or null (an optimizer's or the block's).
const st::Kind *scheduleTaking(const st::Setting &s) {
  for (const st::Kind &k : st::schedules())
    if (st::takes(k, s))
      return &k;
  return nullptr;
}

/// Sets the plan field the table names for `s`, found by name among the
/// TrainConfig's, the Optimizer's and the Schedule's fields: so the table's
/// field names are the plan's.
void setPlanField(plan::TrainConfig &train, const st::Setting &s, double v) {
  lmrt::contract::setTrainSetting(train, s, v);
}

double planField(const plan::TrainConfig &train, const st::Setting &s) {
  return lmrt::contract::trainSettingValue(train, s);
}

/// The optimizer that takes `s`: the default one where it does, else the first
/// other; null for a schedule's or the block's setting.
const st::Kind *optimizerTaking(const st::Setting &s) {
  if (st::takes(*st::findOptimizer(st::kDefaultOptimizer), s))
    return st::findOptimizer(st::kDefaultOptimizer);
  for (const st::Kind &k : st::optimizers())
    if (st::takes(k, s))
      return &k;
  return nullptr;
}

/// `v` as .lm source: an integer, a float that reads back exactly, or an
/// expression for infinity (a literal that large is a lexer error).
std::string source(const st::Setting &s, double v) {
  if (std::isinf(v))
    return v > 0 ? "1e308 * 10" : "-1e308 * 10";
  char buf[40];
  if (s.isBool && (v == 0 || v == 1))
    return v == 1 ? "true" : "false";
  if (s.isInt)
    std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string text = buf;
  if (!s.isInt && text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

/// fp16's loss-scaler settings, which only a `precision = fp16` block takes.
bool lossScaling(const st::Setting &s) {
  return &s == &st::kLossScale || &s == &st::kLossScaleWindow || &s == &st::kHysteresis || &s == &st::kMinLossScale;
}

/// The train block that sets `s` to `v` (written `text`), all else default.
std::string blockSetting(const st::Setting &s, const std::string &text) {
  if (lossScaling(s))
    return "precision = fp16\n" + std::string(s.keyword) + " = " + text;
  if (&s == &st::kBeta1 || &s == &st::kBeta2) {
    std::string b1 = &s == &st::kBeta1 ? text : source(st::kBeta1, st::kBeta1.defaultValue);
    std::string b2 = &s == &st::kBeta2 ? text : source(st::kBeta2, st::kBeta2.defaultValue);
    return "optimizer = " + std::string(st::kDefaultOptimizer) + "(betas = (" + b1 + ", " + b2 + "))";
  }
  if (&s == &st::kEps2) // Adafactor's eps = (eps1, eps2)
    return "optimizer = adafactor(eps = (1e-30, " + text + "))";
  if (const st::Kind *k = optimizerTaking(s))
    return "optimizer = " + std::string(k->name) + "(" + s.keyword + " = " + text + ")";
  if (const st::Kind *k = scheduleTaking(s))
    return "schedule = " + std::string(k->name) + "(" + s.keyword + " = " + text + ")";
  return std::string(s.keyword) + " = " + text;
}

/// Values on and around the bounds of `s`: each bound, just outside it, one
/// inside, far outside, and the non-finite (for a float).
std::vector<double> probes(const st::Setting &s) {
  double step = s.isInt ? 1 : 1e-9;
  std::vector<double> v = {s.lo, s.lo - step, s.lo + step, s.defaultValue, -1e6};
  if (s.hi != st::kNoLimit)
    v.insert(v.end(), {s.hi, s.hi - step, s.hi + step});
  else
    v.push_back(1e15);
  if (s.atMost) // min_lr against the default lr
    v.insert(v.end(), {s.atMost->defaultValue, s.atMost->defaultValue * (1 + 1e-9)});
  if (!s.isInt)
    v.push_back(st::kNoLimit);
  return v;
}

// The table itself: every default keeps its own bounds, every kind takes
// settings of the table, and every name is used once in its column (betas,
// one keyword for two settings, aside).
TEST(TrainSettings, TableIsConsistent) {
  std::set<std::string> attrs, fields, keywords;
  for (const st::Setting *s : st::allSettings()) {
    double atMost = s->atMost ? s->atMost->defaultValue : st::kNoLimit;
    EXPECT_TRUE(st::within(*s, s->defaultValue, atMost)) << s->attr << " = " << s->defaultValue;
    EXPECT_TRUE(attrs.insert(s->attr).second) << s->attr;
    EXPECT_TRUE(fields.insert(s->field).second) << s->field;
    // betas = (beta1, beta2) and Adafactor's eps = (eps1, eps2): one keyword, two settings.
    EXPECT_TRUE(keywords.insert(s->keyword).second || std::string(s->keyword) == "betas" ||
                std::string(s->keyword) == "eps")
        << s->keyword;
  }
  for (const st::Kind &k : st::optimizers())
    for (const st::Setting *t : k.takes)
      EXPECT_TRUE(st::within(*t, st::defaultIn(k, *t))) << k.name << " " << t->attr;
  EXPECT_EQ(attrs.size(), st::allSettings().size());
  for (const std::vector<st::Kind> *kinds : {&st::optimizers(), &st::schedules()})
    for (const st::Kind &k : *kinds)
      for (const st::Setting *t : k.takes)
        EXPECT_NE(std::find(st::allSettings().begin(), st::allSettings().end(), t), st::allSettings().end())
            << k.name << " takes a setting outside allSettings()";
  ASSERT_NE(st::findOptimizer(st::kDefaultOptimizer), nullptr);
  ASSERT_NE(st::findSchedule(st::kDefaultSchedule), nullptr);
  EXPECT_EQ(st::findSchedule("step"), nullptr);
}

// Every optimizer and schedule of the table compiles, is a plan the contract
// accepts, and gives the runtime a schedule with a finite rate in [0, lr] at
// every step (a kind without a formula would throw).
TEST(TrainSettings, EveryKindTrains) {
  for (const st::Kind &optimizer : st::optimizers())
    for (const st::Kind &schedule : st::schedules()) {
      SCOPED_TRACE(std::string(optimizer.name) + " / " + schedule.name);
      Compiled c = compileTrain("optimizer = " + std::string(optimizer.name) + "\nschedule = " + schedule.name +
                                (st::takes(schedule, st::kWarmup) ? "(warmup = 3)" : ""));
      ASSERT_TRUE(c.train) << c.diagnostics;
      EXPECT_EQ(c.train->optimizer().kind(), optimizer.name);
      EXPECT_EQ(c.train->schedule().kind(), schedule.name);
      EXPECT_TRUE(contractAccepts(*c.train));
      const plan::Schedule &s = c.train->schedule();
      lmrt::LrSchedule lr = lmrt::makeSchedule(s.kind(), c.train->optimizer().lr(), s.min_lr(), s.warmup_steps(),
                                               s.decay_steps(), 20, s.cooldown_fraction());
      for (int64_t step = 0; step <= 25; ++step) {
        double rate = lmrt::learningRate(lr, step);
        EXPECT_TRUE(rate >= 0 && rate <= c.train->optimizer().lr()) << "step " << step << ": " << rate;
      }
    }
}

// An empty train block gives the plan every default of the table, and a
// schedule's own settings (the cooldown) where it takes them; a module with no
// lm.train at all trains without weight decay.
TEST(TrainSettings, DefaultsReachThePlan) {
  Compiled empty = compileTrain("");
  ASSERT_TRUE(empty.train) << empty.diagnostics;
  EXPECT_EQ(empty.train->optimizer().kind(), st::kDefaultOptimizer);
  EXPECT_EQ(empty.train->schedule().kind(), st::kDefaultSchedule);
  for (const st::Setting *s : st::allSettings()) {
    // Absent from the plan (0): what the constant schedule does not take, and
    // accumulate, whose plan 0 means the default, 1.
    bool absent = (scheduleTaking(*s) && !st::takes(*st::findSchedule(st::kDefaultSchedule), *s)) ||
                  (optimizerTaking(*s) && !st::takes(*st::findOptimizer(st::kDefaultOptimizer), *s)) ||
                  s == &st::kAccumulate || lossScaling(*s);
    EXPECT_EQ(planField(*empty.train, *s), absent ? 0.0 : s->defaultValue) << s->field;
  }
  EXPECT_FALSE(empty.train->has_loss_scale());
  // fp16 plans carry every setting of the loss scaler, at its default.
  Compiled fp16 = compileTrain("precision = fp16");
  ASSERT_TRUE(fp16.train) << fp16.diagnostics;
  ASSERT_TRUE(fp16.train->has_loss_scale());
  for (const st::Setting *s : st::allSettings())
    if (lossScaling(*s))
      EXPECT_EQ(planField(*fp16.train, *s), s->defaultValue) << s->field;
  // ... and other precisions refuse them.
  Compiled bf16 = compileTrain("precision = bf16\nhysteresis = 1");
  EXPECT_FALSE(bf16.train);
  EXPECT_NE(bf16.diagnostics.find("a setting of fp16's loss scaling"), std::string::npos) << bf16.diagnostics;
  Compiled wsd = compileTrain("schedule = wsd");
  ASSERT_TRUE(wsd.train) << wsd.diagnostics;
  EXPECT_EQ(wsd.train->schedule().cooldown_fraction(), st::kCooldown.defaultValue);

  MLIRContext context;
  OwningOpRef<ModuleOp> bare = ModuleOp::create(UnknownLoc::get(&context));
  plan::Plan p;
  ASSERT_TRUE(succeeded(lm::readModuleConfig(*bare, p)));
  EXPECT_EQ(p.train().optimizer().weight_decay(), st::kBareModuleWeightDecay);
  EXPECT_EQ(p.train().optimizer().lr(), st::kLr.defaultValue);
  EXPECT_EQ(p.train().schedule().kind(), st::kDefaultSchedule);
  EXPECT_TRUE(contractAccepts(p.train()));
}

// At every probe value of every setting, the frontend accepts the train block
// exactly when the contract accepts the plan field, and for the numbers a
// schedule reads, exactly when makeSchedule does. Each setting has values of
// both kinds, so a bound missing on one side cannot hide.
TEST(TrainSettings, FrontendContractAndRuntimeShareEveryBound) {
  for (const st::Setting *s : st::allSettings()) {
    const st::Kind *k = scheduleTaking(*s);
    const st::Kind *o = optimizerTaking(*s);
    if (s->isBool) {
      // A bool of the plan has no value out of bounds: the frontend takes true and
      // false only.
      EXPECT_TRUE(compileTrain(blockSetting(*s, "true")).train.has_value()) << s->keyword;
      EXPECT_TRUE(compileTrain(blockSetting(*s, "false")).train.has_value()) << s->keyword;
      EXPECT_FALSE(compileTrain(blockSetting(*s, "1")).train.has_value()) << s->keyword;
      continue;
    }
    Compiled base = compileTrain(k   ? "schedule = " + std::string(k->name)
                                 : o ? "optimizer = " + std::string(o->name)
                                 : lossScaling(*s) ? "precision = fp16"
                                     : "");
    ASSERT_TRUE(base.train) << base.diagnostics;
    bool readBySchedule = k || s == &st::kLr;
    int accepted = 0, refused = 0;
    for (double v : probes(*s)) {
      if (s == &st::kAccumulate && v == 0)
        continue;  // the plan's 0 is the default, 1 (plans from before accumulation)
      std::string block = blockSetting(*s, source(*s, v));
      SCOPED_TRACE(block);
      bool frontend = compileTrain(block).train.has_value();
      plan::TrainConfig train = *base.train;
      setPlanField(train, *s, v);
      EXPECT_EQ(frontend, contractAccepts(train));
      if (readBySchedule) {
        EXPECT_EQ(frontend, runtimeAccepts(train));
      }
      (frontend ? accepted : refused)++;
    }
    EXPECT_GT(accepted, 0) << s->keyword;
    EXPECT_GT(refused, 0) << s->keyword;
  }
}

} // namespace
