//===- MinCutTest.cpp - Tests of the max-flow / min-cut helper -----------===//
//
// FlowNetwork (passes/MinCut.h) is what -lm-remat's auto policy partitions the
// forward with; its lit tests pin the decisions, these pin the algorithm on
// graphs whose cuts are known by hand.
//
//===----------------------------------------------------------------------===//
#include "passes/MinCut.h"

#include <gtest/gtest.h>

using mlir::lm::FlowNetwork;

namespace {

// The network of CLRS (3rd ed.) figure 26.6: maximum flow 23, and the minimum
// cut {s, v1, v2, v4} | {v3, t}.
TEST(MinCut, TextbookNetwork) {
  enum { s, v1, v2, v3, v4, t };
  FlowNetwork net(6);
  net.addEdge(s, v1, 16);
  net.addEdge(s, v2, 13);
  net.addEdge(v2, v1, 4);
  net.addEdge(v1, v3, 12);
  net.addEdge(v3, v2, 9);
  net.addEdge(v2, v4, 14);
  net.addEdge(v4, v3, 7);
  net.addEdge(v3, t, 20);
  net.addEdge(v4, t, 4);
  EXPECT_EQ(net.maxFlow(s, t), 23);
  EXPECT_TRUE(net.sourceSide(s));
  EXPECT_TRUE(net.sourceSide(v1));
  EXPECT_TRUE(net.sourceSide(v2));
  EXPECT_TRUE(net.sourceSide(v4));
  EXPECT_FALSE(net.sourceSide(v3));
  EXPECT_FALSE(net.sourceSide(t));
}

// The save-or-recompute shape auto builds: a value x (an op's result, saved
// for 100 bytes) feeds a cheap op y (recomputing it costs 3) whose 400-byte
// result the backward reads. Cheaper to save x and recompute y: the cut is
// x's edge plus y's recompute edge, and y lands on the sink side.
TEST(MinCut, SaveTheInputRecomputeTheOutput) {
  FlowNetwork net(2);
  const int source = 0, sink = 1;
  int opX = net.addNode(), valX = net.addNode(), opY = net.addNode(), valY = net.addNode();
  net.addEdge(source, opX, FlowNetwork::kInfinite); // x: a GEMM, never recomputed
  net.addEdge(opX, valX, 100);
  net.addEdge(valX, opY, FlowNetwork::kInfinite);
  net.addEdge(source, opY, 3);
  net.addEdge(opY, valY, 400);
  net.addEdge(valY, sink, FlowNetwork::kInfinite);
  EXPECT_EQ(net.maxFlow(source, sink), 103);
  EXPECT_TRUE(net.sourceSide(opX));
  EXPECT_FALSE(net.sourceSide(valX)); // saved: its op computes it, the backward side reads it
  EXPECT_FALSE(net.sourceSide(opY));  // recomputed
}

// Only infinite edges between source and sink: the flow stops at kInfinite
// rather than overflowing, and everything the source reaches is its side.
TEST(MinCut, InfiniteCutDoesNotOverflow) {
  FlowNetwork net(4);
  for (int mid : {1, 2}) {
    net.addEdge(0, mid, FlowNetwork::kInfinite);
    net.addEdge(mid, 3, FlowNetwork::kInfinite);
  }
  EXPECT_GE(net.maxFlow(0, 3), FlowNetwork::kInfinite);
  EXPECT_TRUE(net.sourceSide(0));
}

} // namespace
