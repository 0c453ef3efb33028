//===- LMDialect.h - lm dialect ---------------------------------*- C++ -*-===//
//
// The `lm` dialect class. Include "dialect/IR/LMOps.h" for the ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Dialect.h"

#include "dialect/IR/LMDialect.h.inc"
