//===- MemoryPlanner.cpp - Liveness and arena offsets of a program --------===//

#include "codegen/MemoryPlanner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cassert>
#include <map>
#include <memory>
#include <set>

using namespace mlir::lm;
namespace plan = lmrt::plan;

static bool isArena(const plan::Buffer &buffer) { return buffer.kind() == plan::Buffer::ARENA; }

static int64_t alignedSize(int64_t bytes) { return static_cast<int64_t>(llvm::alignTo(bytes, kArenaAlignment)); }

static std::string typeStr(const plan::TensorType &type) {
  return lmrt::planTypeStr(type);
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

static bool isCollective(const std::string &op) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "all_gather";
}

std::vector<LiveRange> mlir::lm::computePlanningRanges(const plan::Program &program) {
  std::vector<LiveRange> ranges = computeLiveRanges(program);
  auto valid = [&](int id) { return id >= 0 && id < program.buffers_size(); };
  const int64_t steps = program.steps_size();
  // The first step at or after `from` that reads one of `outs` (through a view too).
  auto firstRead = [&](int64_t from, const std::vector<int> &outs) {
    for (int64_t t = from; t < steps; ++t)
      for (int id : program.steps(t).inputs())
        if (valid(id) && llvm::is_contained(outs, storageOf(program, id)))
          return t;
    return steps;
  };
  for (int64_t step = 0; step < steps; ++step) {
    const plan::Step &s = program.steps(step);
    if (!isCollective(s.op()))
      continue;
    std::vector<int> outs;
    for (int id : s.outputs())
      if (valid(id))
        outs.push_back(storageOf(program, id));
    const int64_t until = firstRead(step + 1, outs) - 1;
    for (int id : s.inputs())
      if (valid(id)) {
        LiveRange &r = ranges[storageOf(program, id)];
        r.last = std::max(r.last, until);
      }
  }
  // A parameter's bf16 (f16) copy lives over the whole program: no other buffer takes
  // its bytes, so it survives to the next run, where the CPU backend skips its cast
  // while AdamW keeps it current (lmrt::keptParamCopies). Most copies are live at the
  // peak anyway (the backward's dX GEMMs read them).
  for (int si : lmrt::paramCopies(program))
    ranges[program.steps(si).outputs(0)] = LiveRange{0, std::max<int64_t>(steps - 1, 0)};
  for (int id = 0; id < program.buffers_size(); ++id)
    if (program.buffers(id).has_view_of())
      ranges[id] = ranges[storageOf(program, id)];
  return ranges;
}

namespace {

/// The buffers placed so far, as rectangles of bytes [offset, offset + len)
/// by steps [first, last], answering first-fit queries: the lowest offset at
/// which `len` bytes are free over a step range. A segment tree over the steps
/// (node 1 the root, node n's children 2n and 2n + 1, step t's leaf
/// `leaves + t`): a buffer is recorded in `cover` of the O(log steps) nodes
/// that cover its range exactly and in `all` of those nodes and of their
/// ancestors, each a set of disjoint byte ranges with touching ones merged.
/// The buffers live during a step range are then those of `cover` on the paths
/// to the range's ends and of `all` of the nodes covering it: a few dozen sets
/// of merged ranges, however many buffers were placed. (A walk over every
/// placed buffer in offset order made planning quadratic in the layers: a
/// 400-layer train step's 10,409 buffers visited 34 million placed ones.)
class PlacedBuffers {
public:
  explicit PlacedBuffers(int64_t steps) {
    while (leaves < steps)
      leaves *= 2;
    cover.resize(2 * leaves);
    all.resize(2 * leaves);
  }

  /// The lowest offset at which [offset, offset + len) overlaps no placed
  /// buffer live during `range` (len > 0): first fit.
  int64_t lowestFit(const LiveRange &range, int64_t len) const {
    llvm::SmallVector<const Ranges *, 64> live;
    collect(1, 0, leaves - 1, range, live);
    // Jump past every merged range that meets [offset, offset + len) until none
    // does. Every offset jumped over meets a live buffer, so the result is the
    // start of the lowest free gap of `len` bytes: what a walk of the live
    // buffers in offset order finds.
    int64_t offset = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (const Ranges *ranges : live) {
        auto it = ranges->lower_bound(offset + len);
        if (it == ranges->begin() || std::prev(it)->second <= offset)
          continue;
        offset = std::prev(it)->second;
        moved = true;
      }
    }
    return offset;
  }

  void add(const LiveRange &range, int64_t offset, int64_t len) {
    int64_t begin = offset, end = offset + len;
    // The nodes covering [first, last] exactly, found bottom up; then the
    // `all` of their ancestors, each walk stopping at a node whose `all` holds
    // the bytes already (as then do all nodes above it).
    auto record = [&](int64_t node) {
      insert(cover[node], begin, end);
      for (bool added = insert(all[node], begin, end); added && node > 1;)
        added = insert(all[node /= 2], begin, end);
    };
    for (int64_t l = range.first + leaves, r = range.last + 1 + leaves; l < r; l /= 2, r /= 2) {
      if (l & 1)
        record(l++);
      if (r & 1)
        record(--r);
    }
  }

private:
  /// Disjoint byte ranges begin -> end, touching ones merged.
  using Ranges = std::map<int64_t, int64_t>;

  /// Adds [begin, end) to `slot`; false when it held those bytes already.
  static bool insert(std::unique_ptr<Ranges> &slot, int64_t begin, int64_t end) {
    if (!slot)
      slot = std::make_unique<Ranges>();
    Ranges &ranges = *slot;
    auto next = ranges.upper_bound(begin);
    Ranges::iterator at;
    if (next != ranges.begin() && std::prev(next)->second >= begin) {
      at = std::prev(next);
      if (at->second >= end)
        return false;
    } else {
      at = ranges.emplace_hint(next, begin, end);
    }
    for (; next != ranges.end() && next->first <= end; next = ranges.erase(next))
      end = std::max(end, next->second);
    at->second = std::max(at->second, end);
    return true;
  }

  void collect(int64_t node, int64_t lo, int64_t hi, const LiveRange &r,
               llvm::SmallVectorImpl<const Ranges *> &out) const {
    if (r.last < lo || hi < r.first)
      return;
    if (r.first <= lo && hi <= r.last) {
      if (all[node])
        out.push_back(all[node].get());
      return;
    }
    // Partly in the range: the buffers covering this node's whole step range
    // are live in it; the others are found below.
    if (cover[node])
      out.push_back(cover[node].get());
    int64_t mid = lo + (hi - lo) / 2;
    collect(2 * node, lo, mid, r, out);
    collect(2 * node + 1, mid + 1, hi, r, out);
  }

  int64_t leaves = 1;
  std::vector<std::unique_ptr<Ranges>> cover, all;
};

} // namespace

void mlir::lm::assignArenaOffsets(plan::Program &program) {
  std::vector<LiveRange> ranges = computePlanningRanges(program);
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

  PlacedBuffers placed(std::max(program.steps_size(), 1));
  int64_t arenaBytes = 0;
  for (int id : order) {
    int64_t size = alignedSize(program.buffers(id).size_bytes());
    // An empty buffer fits anywhere: at 0. (The sizes decrease, so only other
    // empty buffers are placed after it.)
    int64_t offset = size == 0 ? 0 : placed.lowestFit(ranges[id], size);
    program.mutable_buffers(id)->set_offset(offset);
    arenaBytes = std::max(arenaBytes, offset + size);
    if (size > 0)
      placed.add(ranges[id], offset, size);
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

  // A sweep over the steps: the buffers live at a step, by offset, never overlap
  // (checked as each one becomes live, against its neighbours by offset), so the
  // check is O(n log n) rather than every pair of buffers.
  auto overlapError = [&](int a, int b) {
    if (a > b)
      std::swap(a, b);
    const plan::Buffer &ba = program.buffers(a), &bb = program.buffers(b);
    return bufferStr(program, a) + " at [" + std::to_string(ba.offset()) + ", " +
           std::to_string(ba.offset() + ba.size_bytes()) + ") and " + bufferStr(program, b) + " at [" +
           std::to_string(bb.offset()) + ", " + std::to_string(bb.offset() + bb.size_bytes()) +
           ") overlap while both are live (steps [" + std::to_string(std::max(ranges[a].first, ranges[b].first)) +
           ", " + std::to_string(std::min(ranges[a].last, ranges[b].last) + 1) + "))";
  };
  std::vector<int> byFirst, byLast;
  for (int id : arena)
    if (program.buffers(id).size_bytes() > 0)
      byFirst.push_back(id);
  byLast = byFirst;
  llvm::stable_sort(byFirst, [&](int a, int b) { return ranges[a].first < ranges[b].first; });
  llvm::stable_sort(byLast, [&](int a, int b) { return ranges[a].last < ranges[b].last; });
  std::set<std::pair<int64_t, int>> live; // (offset, id)
  size_t ended = 0;
  for (int id : byFirst) {
    // Buffers whose last step precedes this one's first are dead.
    for (; ended < byLast.size() && ranges[byLast[ended]].last < ranges[id].first; ++ended)
      live.erase({program.buffers(byLast[ended]).offset(), byLast[ended]});
    int64_t begin = program.buffers(id).offset(), end = begin + program.buffers(id).size_bytes();
    auto next = live.lower_bound({begin, -1});
    if (next != live.end() && next->first < end)
      return overlapError(id, next->second);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + program.buffers(prev->second).size_bytes() > begin)
        return overlapError(id, prev->second);
    }
    live.insert({begin, id});
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
