#pragma once
// Whether the client of a request is still connected, asked without reading or writing: the HTTP
// library does not hand its socket to a handler, so the socket is found once among the process's
// descriptors by the connection's two addresses, then peeked (a peer that closed reads as end of
// file). A request whose client went away is cancelled, and its row and KV cache freed, even while
// it sends nothing (queued, prefilling, or a response that is not streamed).

#include <chrono>
#include <string>

namespace muninn::server {

class connection_probe {
 public:
  /// \brief The connection from `remote_addr`:`remote_port` to `local_port`.
  connection_probe(std::string remote_addr, int remote_port, int local_port);
  /// \brief False once the peer has closed or reset the connection; true while it is open, and
  /// when its socket cannot be found (then nothing is known). The socket is peeked at most every
  /// 50 ms; calls in between repeat the last answer, so a waiter may ask after every wake-up.
  bool alive();

 private:
  int find() const;
  std::string remote_addr_;
  int remote_port_, local_port_;
  int fd_ = -2;  // -2: not looked for yet, -1: not found
  bool alive_ = true;
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace muninn::server
