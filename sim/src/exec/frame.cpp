// Frame I/O of the exec wire (sim/exec_protocol.h): both ends use it, the client in the user's
// process and the proxy in the simulator. EINTR is retried; a short read at end of file is an end.
#include <cerrno>
#include <chrono>

#include <sys/socket.h>
#include <unistd.h>

#include "sim/exec_protocol.h"

namespace sim::exec {
namespace {

bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// 1: read all, 0: end of file before the first byte, -1: error or end of file inside.
int read_all(int fd, std::uint8_t* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return got == 0 ? 0 : -1;
    if (r < 0) return -1;
    got += static_cast<std::size_t>(r);
  }
  return 1;
}

}  // namespace

bool await_readable(int fd, int spin_us) {
  // A peer that answers within microseconds is met by polling the socket without sleeping: a
  // blocking read puts the process to sleep and the answer's arrival wakes it, about 50 us on a
  // 2-vCPU virtual machine against 4 us this way. Bounded, so a slow peer costs little CPU.
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::microseconds(spin_us);
  char c;
  do {
    const ssize_t r = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r >= 0) return true;  // data, or the end of file
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  } while (Clock::now() < until);
  return false;
}

void append_frame(std::vector<std::uint8_t>* out, const std::vector<std::uint8_t>& body) {
  const std::uint32_t n = static_cast<std::uint32_t>(body.size());
  const std::size_t at = out->size();
  out->resize(at + 4 + body.size());
  std::memcpy(out->data() + at, &n, 4);
  if (n) std::memcpy(out->data() + at + 4, body.data(), n);
}

bool write_bytes(int fd, const std::vector<std::uint8_t>& bytes) { return write_all(fd, bytes.data(), bytes.size()); }

bool FrameReader::has_frame() const {
  if (end_ - pos_ < 4) return false;
  std::uint32_t n = 0;
  std::memcpy(&n, buf_.data() + pos_, 4);
  return end_ - pos_ >= 4 + static_cast<std::size_t>(n);
}

bool FrameReader::next(int fd, std::vector<std::uint8_t>* body, bool* eof) {
  *eof = false;
  for (;;) {
    if (end_ - pos_ >= 4) {
      std::uint32_t n = 0;
      std::memcpy(&n, buf_.data() + pos_, 4);
      if (n > kMaxFrame) return false;
      if (end_ - pos_ >= 4 + static_cast<std::size_t>(n)) {
        body->assign(buf_.begin() + static_cast<std::ptrdiff_t>(pos_ + 4), buf_.begin() + static_cast<std::ptrdiff_t>(pos_ + 4 + n));
        pos_ += 4 + n;
        return true;
      }
    }
    // Keep the partial frame at the front, then read as much as has arrived (many frames at once).
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    if (buf_.size() < end_ + 65536) buf_.resize(end_ + 65536);
    const ssize_t r = ::read(fd, buf_.data() + end_, buf_.size() - end_);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) { *eof = end_ == 0; return false; }
    if (r < 0) return false;
    end_ += static_cast<std::size_t>(r);
  }
}

bool write_frame(int fd, const std::vector<std::uint8_t>& body) {
  const std::uint32_t n = static_cast<std::uint32_t>(body.size());
  std::uint8_t len[4];
  std::memcpy(len, &n, 4);
  return write_all(fd, len, 4) && write_all(fd, body.data(), body.size());
}

bool read_frame(int fd, std::vector<std::uint8_t>* body, bool* eof) {
  std::uint8_t len[4];
  *eof = false;
  const int h = read_all(fd, len, 4);
  if (h == 0) { *eof = true; return false; }
  if (h < 0) return false;
  std::uint32_t n = 0;
  std::memcpy(&n, len, 4);
  if (n > kMaxFrame) return false;
  body->resize(n);
  return n == 0 || read_all(fd, body->data(), n) == 1;
}

}  // namespace sim::exec
