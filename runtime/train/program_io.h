/* Implements: what the training loop and sampling need to know about a
   program's data side: its one token input (i32 [rows, length]) and reading a
   scalar output. Checked, so a plan that breaks the contract fails with a
   message naming the program. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "contract/plan.pb.h"
#include "base/tensor.h"

namespace lmrt {

class Session;

const plan::Program &findProgram(const Session &session, const std::string &name);

/* The program's single token input (besides a dropout key); throws unless it is i32 of rank 2. */
const plan::Input &tokenInput(const plan::Program &program);
TensorType inputType(const plan::Input &input);

/* The names of the program's metric outputs ("metric:<name>" without the
   prefix), in plan order: what the objective's `metric` statements named. */
std::vector<std::string> metricNames(const plan::Program &program);

/* The value of a scalar f32/f64 tensor, as double. */
double scalarValue(const TensorRef &t, const char *what);

}  // namespace lmrt
