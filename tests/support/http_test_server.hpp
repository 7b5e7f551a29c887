// A real HTTP/1.1 server for tests: it serves a folder on 127.0.0.1 at an ephemeral port, on a
// thread of its own, so that client code (the libcurl download path) is tested over TCP as it runs
// against a web server, not against a mock. GET and HEAD of /PATH answer 200 with Content-Length
// and the bytes of ROOT/PATH, or 404; every response closes its connection. A test can also make a
// path answer with a 301/302 redirect, a body cut short (the full Content-Length announced, part of
// the body sent, then the connection closed), a connection closed without any response, or a slow
// body (a few bytes at a time with pauses), and it can ask which paths were requested. The
// destructor stops the server and joins its thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sparserl::testing {

class HttpTestServer {
 public:
  // What a path answers instead of its file (see the setters below).
  struct Behaviour {
    int redirect_status = 0;  // 301, 302, 307 or 308: answer with Location: redirect_to
    std::string redirect_to;
    std::size_t truncate_after = SIZE_MAX;  // send this many body bytes, then close
    bool close_without_response = false;
    std::size_t slow_chunk = 0;               // > 0: send the body in chunks of this many bytes ...
    std::chrono::milliseconds slow_pause{0};  // ... with this pause before each
    int status = 0;  // > 0: answer with this status and a short text body (e.g. 500)
  };

  // Starts listening on 127.0.0.1:0 (the kernel picks the port) and serving ROOT. Throws
  // std::runtime_error when it cannot listen.
  explicit HttpTestServer(std::filesystem::path root);
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT" (no trailing slash).
  [[nodiscard]] std::string url() const;

  // PATH is the request target as the client sends it, e.g. "/MM/HB/west0067.tar.gz".
  // `location` may be a path on this server ("/mirror/x.tar.gz") or an absolute URL.
  void redirect(const std::string& path, const std::string& location, int status = 302);
  void truncate(const std::string& path, std::size_t body_bytes);
  void close_without_response(const std::string& path);
  void slow(const std::string& path, std::size_t chunk_bytes, std::chrono::milliseconds pause);
  void fail_with(const std::string& path, int status);
  void set_behaviour(const std::string& path, Behaviour behaviour);

  // Requests received so far (complete request heads), in all or for one path; the paths in order.
  [[nodiscard]] std::size_t requests() const;
  [[nodiscard]] std::size_t requests(const std::string& path) const;
  [[nodiscard]] std::vector<std::string> request_log() const;

  struct State;  // the io_context, the listening socket and what the tests asked for

 private:
  std::unique_ptr<State> state_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace sparserl::testing
