// Finding a connection's socket by its addresses and peeking at it.

#include "connection.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace muninn::server {
namespace {

// The numeric address and port of a socket address (IPv4 or IPv6).
bool address_of(const sockaddr_storage& a, std::string& host, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    if (!inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf)) return false;
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    if (!inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  host = buf;
  return true;
}

}  // namespace

connection_probe::connection_probe(std::string remote_addr, int remote_port, int local_port)
    : remote_addr_(std::move(remote_addr)), remote_port_(remote_port), local_port_(local_port) {}

int connection_probe::find() const {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || fd < 0) continue;
    struct stat st{};
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t pl = sizeof peer, sl = sizeof self;
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&self), &sl) != 0) continue;
    std::string ph, sh;
    int pp = 0, sp = 0;
    if (address_of(peer, ph, pp) && address_of(self, sh, sp) && pp == remote_port_ && sp == local_port_ &&
        ph == remote_addr_) {
      found = int(fd);
      break;
    }
  }
  closedir(d);
  return found;
}

bool connection_probe::alive() {
  const auto now = std::chrono::steady_clock::now();
  if (!alive_ || now < next_check_) return alive_;
  next_check_ = now + std::chrono::milliseconds(50);
  if (fd_ == -2) fd_ = find();
  if (fd_ < 0) return true;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;  // the client sent more (a pipelined request): still there
  // An orderly close reads as 0; ECONNRESET and the like mean gone too.
  alive_ = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  return alive_;
}

}  // namespace muninn::server
