/* Implements: program input lookup and scalar reads (see program_io.h). */
#include "runtime/train/program_io.h"

#include "contract/contract.h"
#include "runtime/exec/session.h"

namespace lmrt {

const plan::Program &findProgram(const Session &session, const std::string &name) {
  std::string have;
  for (const plan::Program &p : session.plan().programs()) {
    if (p.name() == name) return p;
    have += (have.empty() ? "" : ", ") + p.name();
  }
  // A file with several models has forward:<model> programs and no "forward": say so.
  fail("the plan has no program '%s' (its programs: %s)%s", name.c_str(), have.c_str(),
       name == "forward" && have.find("forward:") != std::string::npos
           ? "; a plan with several models has one forward program each, which only `lmrt forward "
             "--model` runs"
           : "");
}

TensorType inputType(const plan::Input &input) {
  TensorType t;
  switch (input.type().dtype()) {
  case plan::F32: t.dtype = DType::F32; break;
  case plan::F64: t.dtype = DType::F64; break;
  case plan::I32: t.dtype = DType::I32; break;
  default: fail("plan input '%s' has no valid dtype", input.name().c_str());
  }
  t.shape.assign(input.type().shape().begin(), input.type().shape().end());
  return t;
}

const plan::Input &tokenInput(const plan::Program &program) {
  std::vector<const plan::Input *> data = contract::dataInputs(program);
  if (data.size() != 1) {
    std::string names;
    for (const plan::Input *in : data) names += (names.empty() ? "" : ", ") + in->name();
    // An encoder-decoder (T5) reads its encoder's ids and the decoder's: say
    // that it cannot generate yet, and what runs its forward program.
    fail("program '%s' declares %d data inputs (%s); the causal pipeline feeds exactly one (tokens), as a "
         "decoder-only model reads: a masked LM or an encoder-decoder such as T5 cannot generate here (T5's "
         "encoder-decoder decoding is not implemented yet); `lmrt forward --inputs` runs its forward program",
         program.name().c_str(), (int)data.size(), names.c_str());
  }
  const plan::Input &in = *data[0];
  TensorType t = inputType(in);
  if (t.dtype != DType::I32 || t.shape.size() != 2 || t.shape[0] <= 0 || t.shape[1] <= 0)
    fail("program '%s' input '%s' is %s; the causal pipeline feeds i32[rows, length]",
         program.name().c_str(), in.name().c_str(), t.str().c_str());
  return in;
}

std::vector<std::string> metricNames(const plan::Program &program) {
  static const std::string prefix = "metric:";
  std::vector<std::string> names;
  for (const plan::Output &o : program.outputs())
    if (o.name().rfind(prefix, 0) == 0) names.push_back(o.name().substr(prefix.size()));
  return names;
}

double scalarValue(const TensorRef &t, const char *what) {
  if (t.numel() != 1) fail("%s is %s, not a scalar", what, t.type.str().c_str());
  if (t.type.dtype == DType::F32) return *t.as<float>();
  if (t.type.dtype == DType::F64) return *t.as<double>();
  fail("%s is %s, not a float", what, t.type.str().c_str());
}

}  // namespace lmrt
