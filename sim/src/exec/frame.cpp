// Frame I/O of the exec wire (sim/exec_protocol.h): both ends use it, the client in the user's
// process and the proxy in the simulator. EINTR is retried; a short read at end of file is an end.
#include <cerrno>

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
