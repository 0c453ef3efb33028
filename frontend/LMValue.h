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

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::lm {

struct LMValue {
  /// Offset: `pos + intValue`, the position offset of a decode program (an
  /// i32[] value in `tensor`) plus a compile-time integer (MLIRGen::DecodeState).
  enum class Kind { Tensor, Int, Float, Bool, List, String, Offset };
  Kind kind = Kind::Int;
  Value tensor;              ///< Tensor
  int64_t intValue = 0;      ///< Int
  double floatValue = 0.0;   ///< Float
  bool boolValue = false;    ///< Bool
  std::vector<LMValue> items; ///< List (also tuples and several returned values)
  std::string str;            ///< String

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
  static LMValue ofString(std::string v) {
    LMValue r;
    r.kind = Kind::String;
    r.str = std::move(v);
    return r;
  }
  static LMValue ofOffset(Value offset, int64_t addend) {
    LMValue r;
    r.kind = Kind::Offset;
    r.tensor = offset;
    r.intValue = addend;
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
  /// The integer this value stands for: an Int, or a Float that is a whole
  /// number (768 / 12 is 64.0), so `d / heads` works wherever an integer is
  /// needed. nullopt for anything else.
  std::optional<int64_t> asInt() const {
    if (kind == Kind::Int)
      return intValue;
    // 9e15 keeps the conversion exact (doubles hold integers up to 2^53).
    if (kind == Kind::Float && std::isfinite(floatValue) && floatValue == std::floor(floatValue) &&
        std::fabs(floatValue) < 9.0e15)
      return static_cast<int64_t>(floatValue);
    return std::nullopt;
  }
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
