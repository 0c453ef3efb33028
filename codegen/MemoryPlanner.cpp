//===- MemoryPlanner.cpp - Liveness and arena offsets of a program --------===//

#include "codegen/MemoryPlanner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cassert>

using namespace mlir::lm;
namespace plan = lmrt::plan;

static bool isArena(const plan::Buffer &buffer) { return buffer.kind() == plan::Buffer::ARENA; }

static int64_t alignedSize(int64_t bytes) { return static_cast<int64_t>(llvm::alignTo(bytes, kArenaAlignment)); }

static std::string typeStr(const plan::TensorType &type) {
  std::string s = type.dtype() == plan::F32 ? "f32" : type.dtype() == plan::F64 ? "f64" : type.dtype() == plan::I32 ? "i32" : "?";
  s += "[";
  for (int i = 0; i < type.shape_size(); ++i)
    s += (i ? ", " : "") + std::to_string(type.shape(i));
  return s + "]";
}

static std::string bufferStr(const plan::Program &program, int id) {
  return "buffer " + std::to_string(id) + " (" + typeStr(program.buffers(id).type()) + ")";
}

/// The buffer whose bytes `id` names: itself, or the buffer it is a view of.
static int storageOf(const plan::Program &program, int id) {
  const plan::Buffer &b = program.buffers(id);
  int of = b.has_view_of() ? b.view_of() : id;
  return of >= 0 && of < program.buffers_size() ? of : id;
}

std::vector<LiveRange> mlir::lm::computeLiveRanges(const plan::Program &program) {
  std::vector<LiveRange> ranges(program.buffers_size());
  auto valid = [&](int id) { return id >= 0 && id < program.buffers_size(); };
  for (int step = 0; step < program.steps_size(); ++step) {
    const plan::Step &s = program.steps(step);
    for (int id : s.outputs())
      if (valid(id)) {
        LiveRange &r = ranges[id];
        if (r.first < 0)
          r.first = step;
        r.last = std::max<int64_t>(r.last, step);
      }
    // Reading a view reads its buffer's bytes: they must stay live.
    for (int id : s.inputs())
      if (valid(id))
        ranges[storageOf(program, id)].last = std::max<int64_t>(ranges[storageOf(program, id)].last, step);
  }
  // Outputs are read by the runtime after the last step.
  int64_t end = std::max(program.steps_size() - 1, 0);
  for (const plan::Output &out : program.outputs())
    if (valid(out.buffer()) && ranges[storageOf(program, out.buffer())].first >= 0)
      ranges[storageOf(program, out.buffer())].last = end;
  for (int id = 0; id < program.buffers_size(); ++id)
    if (program.buffers(id).has_view_of())
      ranges[id] = ranges[storageOf(program, id)];
  return ranges;
}

void mlir::lm::assignArenaOffsets(plan::Program &program) {
  std::vector<LiveRange> ranges = computeLiveRanges(program);
  std::vector<int> order;
  for (int id = 0; id < program.buffers_size(); ++id) {
    if (!isArena(program.buffers(id)) || program.buffers(id).has_view_of())
      continue;
    assert(ranges[id].first >= 0 && "an arena buffer that no step writes has no live range");
    order.push_back(id);
  }
  // Largest first (they are the hardest to fit); ties by first use, then id,
  // so the plan is deterministic.
  llvm::stable_sort(order, [&](int a, int b) {
    int64_t sa = program.buffers(a).size_bytes(), sb = program.buffers(b).size_bytes();
    if (sa != sb)
      return sa > sb;
    return ranges[a].first < ranges[b].first;
  });

  std::vector<int> placed;
  int64_t arenaBytes = 0;
  for (int id : order) {
    // The placed buffers live at the same time as this one, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed)
      if (ranges[other].overlaps(ranges[id]))
        busy.push_back({program.buffers(other).offset(), alignedSize(program.buffers(other).size_bytes())});
    llvm::sort(busy);
    int64_t size = alignedSize(program.buffers(id).size_bytes());
    int64_t offset = 0;
    for (auto [start, len] : busy) {
      if (offset + size <= start)
        break; // fits in the gap before this one
      offset = std::max(offset, start + len);
    }
    program.mutable_buffers(id)->set_offset(offset);
    arenaBytes = std::max(arenaBytes, offset + size);
    placed.push_back(id);
  }
  for (int id = 0; id < program.buffers_size(); ++id)
    if (program.buffers(id).has_view_of())
      program.mutable_buffers(id)->set_offset(program.buffers(storageOf(program, id)).offset());
  program.set_arena_bytes(arenaBytes);
}

std::string mlir::lm::verifyMemoryPlan(const plan::Program &program) {
  int numBuffers = program.buffers_size();
  for (const plan::Step &s : program.steps())
    for (const auto *ids : {&s.inputs(), &s.outputs()})
      for (int id : *ids)
        if (id < 0 || id >= numBuffers)
          return "step '" + s.op() + "' names buffer " + std::to_string(id) + ", but the program has " +
                 std::to_string(numBuffers) + " buffers";

  std::vector<LiveRange> ranges = computeLiveRanges(program);
  std::vector<int> arena;
  for (int id = 0; id < numBuffers; ++id) {
    const plan::Buffer &b = program.buffers(id);
    if (!isArena(b))
      continue;
    if (b.offset() < 0 || b.offset() % kArenaAlignment != 0)
      return bufferStr(program, id) + " has offset " + std::to_string(b.offset()) + ", not a non-negative multiple of " +
             std::to_string(kArenaAlignment);
    // A subtraction: offset + size could overflow on a hand-written plan.
    if (b.size_bytes() < 0 || b.offset() > program.arena_bytes() - b.size_bytes())
      return bufferStr(program, id) + " at [" + std::to_string(b.offset()) + ", " +
             std::to_string(b.offset() + b.size_bytes()) + ") ends past the arena (" +
             std::to_string(program.arena_bytes()) + " bytes)";
    if (b.has_view_of()) {
      int of = b.view_of();
      if (of < 0 || of >= numBuffers || of == id || !isArena(program.buffers(of)) ||
          program.buffers(of).has_view_of())
        return bufferStr(program, id) + " is a view of buffer " + std::to_string(of) +
               ", which is not an arena buffer of its own";
      if (program.buffers(of).offset() != b.offset() || program.buffers(of).size_bytes() != b.size_bytes())
        return bufferStr(program, id) + " is a view of " + bufferStr(program, of) + " but does not have its offset and size";
      continue;  // its bytes are checked as those of the buffer it views
    }
    if (ranges[id].first >= 0)
      arena.push_back(id);
  }
  for (int step = 0; step < program.steps_size(); ++step)
    for (int id : program.steps(step).outputs())
      if (program.buffers(id).has_view_of())
        return bufferStr(program, id) + " is a view, and step " + std::to_string(step) + " ('" +
               program.steps(step).op() + "') writes it";
  // Every read of an arena buffer follows its first write.
  for (int step = 0; step < program.steps_size(); ++step)
    for (int id : program.steps(step).inputs())
      if (isArena(program.buffers(id)) && (ranges[storageOf(program, id)].first < 0 ||
                                           ranges[storageOf(program, id)].first >= step))
        return bufferStr(program, id) + " is read by step " + std::to_string(step) + " ('" + program.steps(step).op() +
               "') before any earlier step writes it";

  for (size_t i = 0; i < arena.size(); ++i)
    for (size_t j = i + 1; j < arena.size(); ++j) {
      int a = arena[i], b = arena[j];
      if (!ranges[a].overlaps(ranges[b]))
        continue;
      const plan::Buffer &ba = program.buffers(a), &bb = program.buffers(b);
      if (ba.size_bytes() == 0 || bb.size_bytes() == 0)
        continue;
      if (ba.offset() < bb.offset() + bb.size_bytes() && bb.offset() < ba.offset() + ba.size_bytes())
        return bufferStr(program, a) + " at [" + std::to_string(ba.offset()) + ", " +
               std::to_string(ba.offset() + ba.size_bytes()) + ") and " + bufferStr(program, b) + " at [" +
               std::to_string(bb.offset()) + ", " + std::to_string(bb.offset() + bb.size_bytes()) +
               ") overlap while both are live (steps [" + std::to_string(std::max(ranges[a].first, ranges[b].first)) +
               ", " + std::to_string(std::min(ranges[a].last, ranges[b].last) + 1) + "))";
    }
  return "";
}

std::string mlir::lm::printMemoryPlan(const plan::Program &program, llvm::raw_ostream &os) {
  std::vector<LiveRange> ranges = computeLiveRanges(program);
  int count = llvm::count_if(program.buffers(), isArena);
  os << "program " << program.name() << ": " << program.steps_size() << " steps, " << count << " arena buffers, arena "
     << program.arena_bytes() << " bytes\n";
  for (int id = 0; id < program.buffers_size(); ++id) {
    const plan::Buffer &b = program.buffers(id);
    if (!isArena(b))
      continue;
    os << "  buffer " << id << " steps [" << ranges[id].first << ", " << ranges[id].last + 1 << ") offset "
       << b.offset() << " size " << b.size_bytes() << " " << typeStr(b.type());
    if (b.has_view_of())
      os << " view of buffer " << b.view_of();
    os << "\n";
  }
  std::string verdict = verifyMemoryPlan(program);
  os << "check " << program.name() << ": "
     << (verdict.empty() ? "ok, no two simultaneously-live buffers overlap" : "FAILED: " + verdict) << "\n";
  return verdict;
}
