// A growable array whose elements never move: fixed chunks of 2^kBits elements behind a small
// table of chunk pointers. Indexing is a shift, a load from the table (a few lines, always in
// cache) and the element: std::deque's blocks hold two 256-byte stream states each, and its map
// of blocks missed cache at 8192 NPUs on every stream access.
#pragma once
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

namespace models {

template <class T, unsigned kBits = 10>
class Chunked {
 public:
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return chunks_[i >> kBits][i & kMask]; }
  const T& operator[](std::size_t i) const { return chunks_[i >> kBits][i & kMask]; }
  T& at(std::size_t i) {
    if (i >= n_) throw std::out_of_range("Chunked::at");
    return (*this)[i];
  }
  const T& at(std::size_t i) const {
    if (i >= n_) throw std::out_of_range("Chunked::at");
    return (*this)[i];
  }
  void push_back(T&& v) {
    if ((n_ >> kBits) == chunks_.size()) chunks_.emplace_back(new T[std::size_t{1} << kBits]);
    (*this)[n_] = std::move(v);
    ++n_;
  }

 private:
  static constexpr std::size_t kMask = (std::size_t{1} << kBits) - 1;
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::size_t n_ = 0;
};

}  // namespace models
