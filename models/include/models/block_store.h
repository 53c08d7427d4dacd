// A growable array whose items never move (docs/architecture.md#models): QPs, streams.
#pragma once
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

namespace models {

/// Items by index in blocks of 1024 that never move (references stay valid as items are added,
/// as in a std::deque, without its 512-byte nodes, which hold four 120-byte QPs and leave 32
/// bytes of each node unused, or two 256-byte stream states, and whose map of nodes is one more
/// cache miss per access at 8192 NPUs).
template <class T>
class BlockStore {
 public:
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return blocks_[i >> kShift][i & kMask]; }
  const T& operator[](std::size_t i) const { return blocks_[i >> kShift][i & kMask]; }
  T& at(std::size_t i) {
    if (i >= n_) throw std::out_of_range("BlockStore::at");
    return (*this)[i];
  }
  const T& at(std::size_t i) const {
    if (i >= n_) throw std::out_of_range("BlockStore::at");
    return (*this)[i];
  }
  T& emplace_back() {
    if ((n_ >> kShift) == blocks_.size()) blocks_.push_back(std::make_unique<T[]>(std::size_t{1} << kShift));
    return (*this)[n_++];
  }
  T& back() { return (*this)[n_ - 1]; }

 private:
  static constexpr unsigned kShift = 10;
  static constexpr std::size_t kMask = (std::size_t{1} << kShift) - 1;
  std::vector<std::unique_ptr<T[]>> blocks_;
  std::size_t n_ = 0;
};

}  // namespace models
