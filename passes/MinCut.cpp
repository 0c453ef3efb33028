//===- MinCut.cpp - A minimum s-t cut of a small flow network --*- C++ -*-===//
//
// Dinic's algorithm: breadth-first levels from the source, then blocking
// flows along strictly increasing levels, until the sink is unreachable.
//
//===----------------------------------------------------------------------===//

#include "passes/MinCut.h"

#include <algorithm>
#include <cassert>
#include <deque>

using namespace mlir::lm;

void FlowNetwork::addEdge(int from, int to, int64_t capacity) {
  assert(from >= 0 && from < numNodes() && to >= 0 && to < numNodes() && capacity >= 0);
  edgesFrom[from].push_back(int(edges.size()));
  edges.push_back({to, std::min(capacity, kInfinite)});
  edgesFrom[to].push_back(int(edges.size()));
  edges.push_back({from, 0});
}

bool FlowNetwork::levelGraph(int source, int sink) {
  level.assign(numNodes(), -1);
  std::deque<int> queue{source};
  level[source] = 0;
  while (!queue.empty()) {
    int node = queue.front();
    queue.pop_front();
    for (int e : edgesFrom[node])
      if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
        level[edges[e].to] = level[node] + 1;
        queue.push_back(edges[e].to);
      }
  }
  return level[sink] >= 0;
}

int64_t FlowNetwork::push(int node, int sink, int64_t limit) {
  if (node == sink)
    return limit;
  for (int &i = next[node]; i < int(edgesFrom[node].size()); ++i) {
    Edge &edge = edges[edgesFrom[node][i]];
    if (edge.capacity <= 0 || level[edge.to] != level[node] + 1)
      continue;
    if (int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity))) {
      edge.capacity -= pushed;
      edges[edgesFrom[node][i] ^ 1].capacity += pushed;
      return pushed;
    }
  }
  return 0;
}

int64_t FlowNetwork::maxFlow(int source, int sink) {
  int64_t flow = 0;
  // A flow reaching kInfinite means only infinite edges separate source and
  // sink: stop there (more augmenting would overflow).
  while (flow < kInfinite && levelGraph(source, sink)) {
    next.assign(numNodes(), 0);
    while (flow < kInfinite)
      if (int64_t pushed = push(source, sink, kInfinite))
        flow += pushed; // at most 2 * kInfinite: no overflow
      else
        break;
  }
  reached.assign(numNodes(), false);
  std::deque<int> queue{source};
  reached[source] = true;
  while (!queue.empty()) {
    int node = queue.front();
    queue.pop_front();
    for (int e : edgesFrom[node])
      if (edges[e].capacity > 0 && !reached[edges[e].to]) {
        reached[edges[e].to] = true;
        queue.push_back(edges[e].to);
      }
  }
  return flow;
}
