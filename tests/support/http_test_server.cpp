// The test HTTP server (http_test_server.hpp): Boost.Asio coroutines on one io_context run by the
// server's thread; one coroutine accepts, one per connection reads a request head, answers it and
// closes the connection.
#include "http_test_server.hpp"

// clang-format off
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>: it comes first.
#include <utility>
#include <boost/asio.hpp>
// clang-format on

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace sparserl::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

struct HttpTestServer::State {
  asio::io_context io;  // first: destroyed last, after everything its handlers refer to
  tcp::acceptor acceptor{io};
  std::filesystem::path root;
  mutable std::mutex mutex;
  std::map<std::string, Behaviour> behaviours;
  std::vector<std::string> log;
};

namespace {

std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string head_of(int status, std::size_t length, const std::string& extra = {}) {
  std::ostringstream h;
  h << "HTTP/1.1 " << status << " " << reason(status) << "\r\n"
    << "Content-Length: " << length << "\r\n"
    << (status == 200 ? "Content-Type: application/octet-stream\r\n"
                      : "Content-Type: text/plain\r\n")
    << extra << "Connection: close\r\n\r\n";
  return h.str();
}

// The file a request target names under root, or an empty path for a target that is not a plain
// absolute path inside it (no "..", no query).
std::filesystem::path file_of(const std::filesystem::path& root, const std::string& target) {
  if (target.empty() || target[0] != '/') return {};
  const std::string path = target.substr(0, target.find('?'));
  const std::filesystem::path relative = std::filesystem::path(path).relative_path();
  for (const auto& part : relative) {
    if (part == "..") return {};
  }
  return root / relative;
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// What to send for one request: a head, a body (the first `body_bytes` of it: less than its size
// for a cut transfer), and how (all at once, or in chunks with pauses); or nothing at all.
struct Reply {
  bool respond = true;
  std::string head, body;
  std::size_t body_bytes = 0;
  std::size_t chunk = 0;
  std::chrono::milliseconds pause{0};
};

Reply plain(int status, const std::string& method, std::string body,
            const std::string& extra = {}) {
  Reply r;
  r.head = head_of(status, body.size(), extra);
  r.body_bytes = method == "HEAD" ? 0 : body.size();
  r.body = std::move(body);
  return r;
}

// The reply to a request head; the request is logged first. Not a coroutine: GCC 12 has trouble
// with non-trivial temporaries inside co_await expressions, so the coroutines only send what this
// built.
Reply reply_to(HttpTestServer::State& state, const std::string& request) {
  std::istringstream first_line(request.substr(0, request.find("\r\n")));
  std::string method, target, version;
  first_line >> method >> target >> version;
  HttpTestServer::Behaviour behaviour;
  bool special = false;
  {
    std::lock_guard lock(state.mutex);
    state.log.push_back(target);
    if (auto it = state.behaviours.find(target); it != state.behaviours.end()) {
      behaviour = it->second;
      special = true;
    }
  }
  if (special && behaviour.close_without_response) {
    Reply r;
    r.respond = false;
    return r;
  }
  if (version.rfind("HTTP/1.", 0) != 0 || target.empty())
    return plain(400, method, "bad request\n");
  if (method != "GET" && method != "HEAD") return plain(405, method, "", "Allow: GET, HEAD\r\n");
  if (special && behaviour.redirect_status != 0) {
    return plain(behaviour.redirect_status, method, "",
                 "Location: " + behaviour.redirect_to + "\r\n");
  }
  if (special && behaviour.status != 0) {
    return plain(behaviour.status, method,
                 "status " + std::to_string(behaviour.status) + " for " + target + "\n");
  }
  const std::filesystem::path file = file_of(state.root, target);
  std::error_code ec;
  if (file.empty() || !std::filesystem::is_regular_file(file, ec)) {
    return plain(404, method, "not found: " + target + "\n");
  }
  Reply r = plain(200, method, read_file(file));
  r.body_bytes = std::min(r.body_bytes, behaviour.truncate_after);
  r.chunk = behaviour.slow_chunk;
  r.pause = behaviour.slow_pause;
  return r;
}

asio::awaitable<void> answer(HttpTestServer::State& state, tcp::socket& socket) {
  asio::streambuf buffer(64 * 1024);
  const std::size_t head_size =
      co_await asio::async_read_until(socket, buffer, "\r\n\r\n", asio::use_awaitable);
  const auto begin = asio::buffers_begin(buffer.data());
  const std::string request(begin, begin + static_cast<std::ptrdiff_t>(head_size));
  const Reply reply = reply_to(state, request);
  if (!reply.respond) co_return;
  co_await asio::async_write(socket, asio::buffer(reply.head), asio::use_awaitable);
  if (reply.chunk == 0) {
    co_await asio::async_write(socket, asio::buffer(reply.body.data(), reply.body_bytes),
                               asio::use_awaitable);
    co_return;
  }
  asio::steady_timer timer(socket.get_executor());
  for (std::size_t at = 0; at < reply.body_bytes; at += reply.chunk) {
    timer.expires_after(reply.pause);
    co_await timer.async_wait(asio::use_awaitable);
    const std::size_t n = std::min(reply.chunk, reply.body_bytes - at);
    co_await asio::async_write(socket, asio::buffer(reply.body.data() + at, n),
                               asio::use_awaitable);
  }
}

asio::awaitable<void> serve(HttpTestServer::State& state, tcp::socket socket) {
  try {
    co_await answer(state, socket);
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  } catch (const std::exception&) {
    // A client that hangs up early (a timeout under test) is what some tests want.
  }
}

asio::awaitable<void> accept_loop(HttpTestServer::State& state) {
  for (;;) {
    tcp::socket socket = co_await state.acceptor.async_accept(asio::use_awaitable);
    asio::co_spawn(state.io, serve(state, std::move(socket)), asio::detached);
  }
}

}  // namespace

HttpTestServer::HttpTestServer(std::filesystem::path root) : state_(std::make_unique<State>()) {
  state_->root = std::move(root);
  try {
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(endpoint.protocol());
    state_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    state_->acceptor.bind(endpoint);
    state_->acceptor.listen();
    port_ = state_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(std::string("HttpTestServer: cannot listen on 127.0.0.1: ") +
                             e.what());
  }
  asio::co_spawn(state_->io, accept_loop(*state_), asio::detached);
  thread_ = std::thread([state = state_.get()] { state->io.run(); });
}

HttpTestServer::~HttpTestServer() {
  state_->io.stop();
  if (thread_.joinable()) thread_.join();
}

std::string HttpTestServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void HttpTestServer::set_behaviour(const std::string& path, Behaviour behaviour) {
  std::lock_guard lock(state_->mutex);
  state_->behaviours[path] = std::move(behaviour);
}

void HttpTestServer::redirect(const std::string& path, const std::string& location, int status) {
  Behaviour b;
  b.redirect_status = status;
  b.redirect_to = location;
  set_behaviour(path, std::move(b));
}

void HttpTestServer::truncate(const std::string& path, std::size_t body_bytes) {
  Behaviour b;
  b.truncate_after = body_bytes;
  set_behaviour(path, std::move(b));
}

void HttpTestServer::close_without_response(const std::string& path) {
  Behaviour b;
  b.close_without_response = true;
  set_behaviour(path, std::move(b));
}

void HttpTestServer::slow(const std::string& path, std::size_t chunk_bytes,
                          std::chrono::milliseconds pause) {
  Behaviour b;
  b.slow_chunk = std::max<std::size_t>(chunk_bytes, 1);
  b.slow_pause = pause;
  set_behaviour(path, std::move(b));
}

void HttpTestServer::fail_with(const std::string& path, int status) {
  Behaviour b;
  b.status = status;
  set_behaviour(path, std::move(b));
}

std::size_t HttpTestServer::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->log.size();
}

std::size_t HttpTestServer::requests(const std::string& path) const {
  std::lock_guard lock(state_->mutex);
  return static_cast<std::size_t>(std::count(state_->log.begin(), state_->log.end(), path));
}

std::vector<std::string> HttpTestServer::request_log() const {
  std::lock_guard lock(state_->mutex);
  return state_->log;
}

}  // namespace sparserl::testing
