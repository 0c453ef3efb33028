/* Implements: distributed.h. */
#include "runtime/train/distributed.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <functional>
#include <string>
#include <vector>

#include "contract/zero3.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/session.h"
#include "runtime/train/train_loop.h"
#include "runtime/train/train_step.h"

namespace lmrt {

namespace {

/* The plan's bytes, the same on every rank that loaded the same plan. */
uint64_t planHash(const Session &s) {
  std::string bytes;
  {  // the streams write the last bytes into `bytes` as they close
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);  // maps in one order on every rank
    s.plan().SerializeToCodedStream(&coded);
  }
  return std::hash<std::string>{}(bytes);
}

}  // namespace

RankInfo joinCommandRanks(Session &s, const std::string &planPath, const char *command,
                          const std::string &settings) {
  comm::Communicator &world = comm::world();
  const plan::Mesh &mesh = s.plan().train().mesh();
  const int64_t data = mesh.data() > 0 ? mesh.data() : 1, tensor = mesh.tensor() > 0 ? mesh.tensor() : 1;
  const int64_t processes = data * tensor;
  const bool sliced = tensor > 1 || zeroSlicesParams(mesh);
  char what[160];
  if (tensor > 1)
    std::snprintf(what, sizeof what, "tensor-parallel (mesh data = %lld x tensor = %lld)", (long long)data,
                  (long long)tensor);
  else
    std::snprintf(what, sizeof what, "ZeRO stage %lld (mesh data = %lld)", (long long)mesh.zero(), (long long)data);
  if (sliced && world.size() == 1)
    fail("plan '%s' is %s: its programs hold one rank's slices of the weights and %s the other ranks, so `lmrt %s` "
         "runs it on its %lld processes: `mpirun -np %lld lmrt %s ...` (or srun -n %lld); or, in one process, "
         "compile the same model without --mesh%s (the same .lm, preset and -D flags) and run `lmrt %s` on that "
         "plan: the weights and checkpoints `lmrt run` writes hold whole tensors",
         planPath.c_str(), what, tensor > 1 ? "all-reduce over" : "gather them from", command, (long long)processes,
         (long long)processes, command, (long long)processes, tensor > 1 ? "" : " and --zero", command);
  if (world.size() > 1 && world.size() != processes) {
    if (processes == 1)
      fail("plan '%s' is for one process (no mesh), and this run has %d processes: run `lmrt %s` without mpirun",
           planPath.c_str(), world.size(), command);
    fail("plan '%s' is %s, for %lld processes, and this run has %d: launch it with `mpirun -np %lld lmrt %s ...` "
         "(or srun -n %lld)", planPath.c_str(), sliced ? what : "data-parallel", (long long)processes,
         world.size(), (long long)processes, command, (long long)processes);
  }
  if (sliced && s.device().device != "cpu")
    fail("plan '%s' is %s, which `lmrt %s` runs on --device cpu only so far", planPath.c_str(), what, command);
  const int t = (int)tensor;
  RankInfo r{world.rank() / t, world.size() > 1 ? (int)data : 1, world.rank() % t, world.size() > 1 ? t : 1,
             world.rank()};
  if (world.size() == 1) return r;
  // A rank whose plan or options differ would compute another model, or wait in a
  // collective the others never reach: refused on every rank before anything runs.
  world.checkSame(planHash(s), "the plan ('" + planPath + "')");
  world.checkSame(std::hash<std::string>{}(settings), std::string("the command line of `lmrt ") + command + "` (its options but --threads)");
  comm::setMesh(data, tensor);
  // The slices this process holds: its tensor rank's, or under ZeRO stage 3 its data rank's.
  s.setTensorRank(zeroSlicesParams(mesh) ? r.rank : r.tensorRank);
  return r;
}

RankInfo joinRanks(const Session &s, const TrainOptions &o) {
  comm::Communicator &world = comm::world();
  const plan::Mesh &mesh = s.plan().train().mesh();
  const int64_t data = mesh.data() > 0 ? mesh.data() : 1, tensor = mesh.tensor() > 0 ? mesh.tensor() : 1;
  if (tensor > 1 && data * tensor != world.size())
    fail("plan '%s' was compiled for a mesh of data = %lld x tensor = %lld ranks (%lld processes, global batch "
         "%lld), and this run has %d process%s: launch it with `mpirun -np %lld lmrt run ...` (or srun -n %lld)",
         o.planPath.c_str(), (long long)data, (long long)tensor, (long long)(data * tensor),
         (long long)(mesh.global_batch() > 0 ? mesh.global_batch() : s.plan().data().batch()), world.size(),
         world.size() == 1 ? "" : "es", (long long)(data * tensor),
         (long long)(data * tensor));
  if (tensor == 1 && data != world.size()) {
    if (data == 1)
      fail("plan '%s' is for one process (no mesh), and this run has %d processes; compile it with "
           "`lmc compile ... --mesh data=%d` for data parallelism", o.planPath.c_str(), world.size(), world.size());
    fail("plan '%s' was compiled for %lld data-parallel ranks (mesh data = %lld, global batch %lld), and this run "
         "has %d process%s: launch it with `mpirun -np %lld lmrt run ...` (or srun -n %lld)", o.planPath.c_str(),
         (long long)data, (long long)data, (long long)mesh.global_batch(), world.size(),
         world.size() == 1 ? "" : "es", (long long)data, (long long)data);
  }
  if (tensor > 1 && mesh.zero() > 1)
    fail("plan '%s' asks for ZeRO stage %lld with tensor parallelism (tensor = %lld), which this lmrt does not run "
         "(stage 1 only); compile it with --zero 1 or 0", o.planPath.c_str(), (long long)mesh.zero(), (long long)tensor);
  if (mesh.zero() > 3)
    fail("plan '%s' asks for ZeRO stage %lld, which this lmrt does not run (stages 1, 2 and 3 only)",
         o.planPath.c_str(), (long long)mesh.zero());
  // Both backends run stages 1 to 3 on a data axis and stage 1 on a data x tensor mesh
  // (docs/distributed.md, "ZeRO on CUDA").
  const int t = (int)tensor;
  RankInfo r{world.rank() / t, (int)data, world.rank() % t, t, world.rank()};
  if (world.size() == 1) return r;
  if (!o.dumpDir.empty())
    fail("--dump-dir records the run of one process; run the plan with accumulate = %d in one process to dump "
         "what these %d ranks compute", r.ranks, world.size());
  // A rank whose plan or settings differ would compute another model, or wait in a
  // collective the others never reach: refused on every rank before the first step.
  world.checkSame(planHash(s), "the plan ('" + o.planPath + "')");
  world.checkSame(o.seed, "--seed");
  world.checkSame((uint64_t)o.steps, "--steps");
  world.checkSame((uint64_t)o.accumulate, "--accumulate");
  world.checkSame((uint64_t)o.evalInterval * 1000003u + (uint64_t)o.evalBatches, "--eval-interval/--eval-batches");
  world.checkSame(std::hash<std::string>{}(o.resumePath + '\n' + o.initPath), "--resume/--init");
  comm::setMesh(data, tensor);
  return r;
}

FILE *quietLog() {
  static FILE *f = std::fopen("/dev/null", "w");
  if (!f) fail("cannot open /dev/null for a quiet rank's log");
  return f;
}

bool anyRank(const RankInfo &, bool flag) {
  if (comm::world().size() == 1) return flag;
  double v = flag ? 1.0 : 0.0;
  comm::world().allReduce(&v, &v, 1, DType::F64, comm::Reduction::Sum, "the stop-signal check after a step");
  return v > 0;
}

void agreeOnData(const RankInfo &, const std::string &error) {
  comm::Communicator &world = comm::world();
  if (world.size() == 1) {
    if (!error.empty()) throw DataFailure(error);
    return;
  }
  std::vector<double> failed((size_t)world.size(), 0.0);
  failed[(size_t)world.rank()] = error.empty() ? 0.0 : 1.0;
  world.allReduce(failed.data(), failed.data(), world.size(), DType::F64, comm::Reduction::Sum,
                  "the data check before a step");
  for (int r = 0; r < world.size(); ++r)
    if (failed[(size_t)r] > 0) {
      if (!error.empty()) throw DataFailure(error);
      throw DataFailure("rank " + std::to_string(r) + "'s data failed (its error says why)", false);
    }
}

std::string fromWriter(const RankInfo &, const std::string &text) {
  comm::Communicator &world = comm::world();
  if (world.size() == 1) return text;
  uint64_t n = text.size();
  world.broadcast(&n, sizeof n, 0, "the length of rank 0's checkpoint path");
  std::string out = world.rank() == 0 ? text : std::string(n, '\0');
  if (n) world.broadcast(out.data(), (int64_t)n, 0, "rank 0's checkpoint path");
  return out;
}

void stopOnDataFailure(const RankInfo &ranks, const std::string &message, bool mine) {
  if (comm::world().size() > 1) {
    anyRank(ranks, false);  // every rank is past the checkpoint
    // The failed rank reports and aborts the run; the others wait for that (a collective
    // it never joins: the collective timeout ends them should it not).
    if (!mine) anyRank(ranks, false);
  }
  fail("%s", message.c_str());
}

}  // namespace lmrt
