//===- LMValue.h - Values during emission of a .lm file ---------*- C++ -*-===//
//
// What an expression evaluates to while MLIRGen walks the AST: a tensor (an
// SSA value of static shape) or a compile-time constant (number, bool, list).
// Compile-time arithmetic is folded here, so `0.02 / sqrt(2 * layers)` never
// reaches the IR; a number meeting a tensor becomes a rank-0 lm.constant.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::lm {

struct LMValue {
  enum class Kind { Tensor, Int, Float, Bool, List };
  Kind kind = Kind::Int;
  Value tensor;              ///< Tensor
  int64_t intValue = 0;      ///< Int
  double floatValue = 0.0;   ///< Float
  bool boolValue = false;    ///< Bool
  std::vector<LMValue> items; ///< List (also tuples)

  static LMValue ofTensor(Value v) {
    LMValue r;
    r.kind = Kind::Tensor;
    r.tensor = v;
    return r;
  }
  static LMValue ofInt(int64_t v) {
    LMValue r;
    r.kind = Kind::Int;
    r.intValue = v;
    return r;
  }
  static LMValue ofFloat(double v) {
    LMValue r;
    r.kind = Kind::Float;
    r.floatValue = v;
    return r;
  }
  static LMValue ofBool(bool v) {
    LMValue r;
    r.kind = Kind::Bool;
    r.boolValue = v;
    return r;
  }

  bool isTensor() const { return kind == Kind::Tensor; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  double asDouble() const { return kind == Kind::Int ? double(intValue) : floatValue; }
  RankedTensorType type() const { return llvm::cast<RankedTensorType>(tensor.getType()); }
  std::vector<int64_t> dims() const {
    ArrayRef<int64_t> s = type().getShape();
    return {s.begin(), s.end()};
  }
};

/// `f32[12, 64, 128]`, `i32[12, 65]`, `int 4`, `float 0.02`, ... for messages.
std::string describe(const LMValue &v);
/// `f32[12, 64, 128]` for a tensor type.
std::string describe(RankedTensorType type);

} // namespace mlir::lm
