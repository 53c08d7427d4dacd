// Double binary tree (docs/algorithms/double-tree.md): kTree is declared in algo/family.h; the
// tree shape is exposed here for tests.
#pragma once
#include <cstdint>

#include "algo/family.h"

namespace hcomm::detail {

/// One member's place in a binary tree: parent (-1 at the root), up to two children (-1 = none),
/// its index among its parent's children (0 or 1) and its depth (0 at the root).
struct TreeNode {
  std::int64_t up = -1;
  std::int64_t down[2] = {-1, -1};
  std::uint32_t child_index = 0;
  std::uint32_t depth = 0;
  bool interior() const { return down[0] >= 0 || down[1] >= 0; }
};

/// The binary tree over positions 0..n-1 rooted at position 0 (NCCL's in-order construction: a
/// position's lowest set bit gives its level; odd positions are leaves). Depth <= ceil_log2(n).
TreeNode btree_node(std::uint32_t n, std::uint32_t pos);

/// Member `me`'s node in tree t (0 or 1) of the double tree over n >= 2 members. Tree 0 is the
/// btree over the first N = n & ~1 members, tree 1 its mirror (position N-1-m); for odd n the last
/// member is a leaf in both, hung under each tree's root. Interior members of tree 0 are the even
/// members < N, of tree 1 the odd ones: no member is interior in both. Depth <= ceil_log2(N).
TreeNode double_tree_node(std::uint32_t n, std::uint32_t me, std::uint32_t t);

/// Member `me`'s parent in tree t of the double tree over n members (-1 at the root): what
/// double_tree_node says of it, without walking to the root for the depth.
std::int64_t double_tree_parent(std::uint32_t n, std::uint32_t me, std::uint32_t t);

}  // namespace hcomm::detail
