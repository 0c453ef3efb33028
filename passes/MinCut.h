//===- MinCut.h - A minimum s-t cut of a small flow network -----*- C++ -*-===//
//
// -lm-remat's auto policy chooses what the backward saves and what it
// recomputes as a minimum cut of the forward graph (docs/remat.md, "auto").
// LLVM and MLIR have no general max-flow (LLVM's profile inference has a
// private min-cost flow), so this is a small one: Dinic's algorithm over
// int64 capacities, for graphs of a few thousand nodes (one train step's
// forward ops and values).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace mlir::lm {

class FlowNetwork {
public:
  /// A capacity no cut can afford: an edge that must never be cut.
  static constexpr int64_t kInfinite = INT64_MAX / 4;

  explicit FlowNetwork(int nodes) : edgesFrom(nodes) {}
  int addNode() {
    edgesFrom.emplace_back();
    return int(edgesFrom.size()) - 1;
  }
  int numNodes() const { return int(edgesFrom.size()); }
  /// A directed edge `from` -> `to` of `capacity` (>= 0; saturates at kInfinite).
  void addEdge(int from, int to, int64_t capacity);

  /// Computes a maximum flow from `source` to `sink` and returns its value,
  /// the capacity of a minimum cut (kInfinite or more if only infinite edges
  /// separate them). After it, sourceSide(n) says whether n is reachable from
  /// the source in the residual network: the source side of the minimum cut
  /// whose source side is smallest.
  int64_t maxFlow(int source, int sink);
  bool sourceSide(int node) const { return reached[node]; }

private:
  struct Edge {
    int to;
    int64_t capacity; // residual
  };
  bool levelGraph(int source, int sink);
  int64_t push(int node, int sink, int64_t limit);

  std::vector<Edge> edges; // edge i's reverse is edge i ^ 1
  std::vector<std::vector<int>> edgesFrom;
  std::vector<int> level, next;
  std::vector<bool> reached;
};

} // namespace mlir::lm
