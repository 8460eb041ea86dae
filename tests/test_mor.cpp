// Mixture-of-Recursions building blocks: the layer → weight-set maps of the sharing strategies,
// checked against the reference's examples and its rule for depths that do not divide.
#include <gtest/gtest.h>

#include <vector>

#include "muninn/policies/sharing_map.hpp"

using namespace muninn;
using v = std::vector<std::int64_t>;

TEST(SharingMap, CycleRepeatsTheBlock) {
  const auto m = make_sharing_map(sharing_strategy::cycle, 9, 3);
  EXPECT_EQ(m.block, 3);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(m.owner, (v{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(m.layer_of(2, 1), 7);
}

TEST(SharingMap, SequenceRepeatsEachLayer) {
  const auto m = make_sharing_map(sharing_strategy::sequence, 6, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.owner, (v{0, 0, 0, 3, 3, 3}));
  EXPECT_THROW(m.layer_of(0, 0), muninn::error);
}

TEST(SharingMap, MiddleCycleKeepsFirstAndLastApart) {
  // 360M MoR-3: 0 | 1..10 | 1..10 | 1..10 | 31; MoR-4 over 34 layers: 0 | 1..8 x4 | 33.
  auto m = make_sharing_map(sharing_strategy::middle_cycle, 32, 3);
  EXPECT_EQ(m.block, 10);
  ASSERT_EQ(m.size(), 32);
  EXPECT_EQ(m.owner.front(), 0);
  EXPECT_EQ(m.owner.back(), 31);
  for (std::int64_t p = 1; p < 31; ++p) EXPECT_EQ(m.owner[std::size_t(p)], 1 + (p - 1) % 10) << p;
  EXPECT_EQ(m.layer_of(1, 0), 11);
  m = make_sharing_map(sharing_strategy::middle_cycle, 34, 4);
  EXPECT_EQ(m.block, 8);
  EXPECT_EQ(m.owner[33], 33);
  EXPECT_EQ(m.owner[32], 8);
}

TEST(SharingMap, MiddleSequence) {
  const auto m = make_sharing_map(sharing_strategy::middle_sequence, 8, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.owner, (v{0, 1, 1, 1, 4, 4, 4, 7}));
}

TEST(SharingMap, NonDivisibleDepthDropsLayersAsTheReference) {
  // middle: linspace(1, 7, 6) = 1, 2.2, 3.4, 4.6, 5.8, 7 -> 1, 2, 3, 5, 6, 7
  auto m = make_sharing_map(sharing_strategy::middle_cycle, 9, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 5, 6, 7, 8}));
  EXPECT_EQ(m.owner, (v{0, 1, 2, 1, 2, 1, 2, 7}));
  // cycle: linspace(0, 9, 9) = 0, 1.125, 2.25, 3.375, 4.5, 5.625, 6.75, 7.875, 9 -> 4.5 rounds to 4 (half to even)
  m = make_sharing_map(sharing_strategy::cycle, 10, 3);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 4, 6, 7, 8, 9}));
}

TEST(SharingMap, BadSettingsAreErrors) {
  EXPECT_THROW(make_sharing_map(sharing_strategy::cycle, 4, 0), muninn::error);
  EXPECT_THROW(make_sharing_map(sharing_strategy::middle_cycle, 3, 2), muninn::error);
  EXPECT_THROW(parse_sharing("spiral"), muninn::error);
  EXPECT_EQ(parse_sharing("middle-cycle"), sharing_strategy::middle_cycle);
}
