#include "launch/run_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>
#include <zmq.hpp>

#include "common/errors.h"
#include "common/log.h"
#include "common/thread_start.h"

namespace shardscope {

namespace fs = std::filesystem;

namespace {
constexpr auto kAuthPoll = std::chrono::milliseconds(50);
// A client that retries a refused handshake is logged this many times, not at every retry.
constexpr int kRefusalsLogged = 3;
constexpr size_t kMaxKeysFile = 4096;

bool isRunKey(const std::string& text) {
  if (text.size() != 40) return false;
  uint8_t key[32];
  return zmq_z85_decode(key, text.c_str()) != nullptr;
}

std::string keyLine(const std::string& text, const std::string& name, const std::string& where) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) {
      std::string key = line.substr(name.size() + 1);
      if (!isRunKey(key)) throw RunError(where + ": '" + name + "' is not a CURVE key (40 Z85 characters)");
      return key;
    }
  throw RunError(where + ": the run's keys lack the line '" + name + " KEY'");
}
}  // namespace

RunKeys makeRunKeys() {
  RunKeys k;
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw RunError(std::string("cannot make the run's CURVE keys: ") + zmq_strerror(zmq_errno()));
  k.server_public = pub;
  k.server_secret = sec;
  if (zmq_curve_keypair(pub, sec) != 0)
    throw RunError(std::string("cannot make the run's CURVE keys: ") + zmq_strerror(zmq_errno()));
  k.client_public = pub;
  k.client_secret = sec;
  return k;
}

std::string workerKeysText(const RunKeys& k) {
  return "# ShardScope: this run's keys, for its workers alone\nserver-public " + k.server_public +
         "\nclient-public " + k.client_public + "\nclient-secret " + k.client_secret + "\n";
}

RunKeys parseWorkerKeys(const std::string& text, const std::string& where) {
  RunKeys k;
  k.server_public = keyLine(text, "server-public", where);
  k.client_public = keyLine(text, "client-public", where);
  k.client_secret = keyLine(text, "client-secret", where);
  char derived[41];
  if (zmq_curve_public(derived, k.client_secret.c_str()) != 0 || k.client_public != derived)
    throw RunError(where + ": client-public is not client-secret's public key");
  return k;
}

void writePrivateFile(const fs::path& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw RunError("cannot make " + file.string() + ": " + std::strerror(errno));
  // 0600 whatever the umask, before a byte is in it.
  const bool ok = ::fchmod(fd, 0600) == 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(file.c_str());
    throw RunError("cannot write " + file.string() + ": " + std::strerror(saved));
  }
}

RunKeys readRunKeysFile(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw RunError("cannot read the run's keys " + file.string() + ": " + std::strerror(errno));
  struct stat st {};
  std::string text;
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
  else if (st.st_uid != ::getuid()) problem = "owned by another user (uid " + std::to_string(st.st_uid) + ")";
  else if ((st.st_mode & 077) != 0) problem = "readable or writable by others (it must be 0600)";
  else if (st.st_size > static_cast<off_t>(kMaxKeysFile)) problem = "larger than a keys file";
  if (problem.empty()) {
    text.resize(static_cast<size_t>(st.st_size));
    if (::read(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) problem = "cannot read it whole";
  }
  ::close(fd);
  if (!problem.empty()) throw RunError("the run's keys " + file.string() + ": " + problem);
  return parseWorkerKeys(text, file.string());
}

void secureAsRunServer(zmq::socket_t& socket, const RunKeys& keys) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys.server_secret);
  // Without a handler ZeroMQ would take any client that knows the server
  // key (which is secret too): the context's RunKeyAuthenticator checks the
  // client key as well.
  socket.set(zmq::sockopt::zap_domain, "shardscope-run");
}

void secureAsRunClient(zmq::socket_t& socket, const RunKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public);
  socket.set(zmq::sockopt::curve_publickey, keys.client_public);
  socket.set(zmq::sockopt::curve_secretkey, keys.client_secret);
}

RunKeyAuthenticator::RunKeyAuthenticator(zmq::context_t& context, std::string client_public, std::string what)
    : m_socket(std::make_unique<zmq::socket_t>(context, zmq::socket_type::rep)), m_client(std::move(client_public)),
      m_what(std::move(what)) {
  m_socket->set(zmq::sockopt::linger, 0);
  // ZeroMQ's fixed address for a context's handler: bound before any socket
  // of the context accepts a connection.
  m_socket->bind("inproc://zeromq.zap.01");
  m_thread = startThread(m_what + "'s authentication", [this] { serve(); });
}

RunKeyAuthenticator::~RunKeyAuthenticator() {
  m_stop.store(true);
  m_thread.join();
}

void RunKeyAuthenticator::serve() {
  while (!m_stop.load()) {
    zmq::pollitem_t item{m_socket->handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, kAuthPoll);
      while (answer()) {
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "{}'s authentication: {}", m_what, e.what());
    }
  }
}

bool RunKeyAuthenticator::answer() {
  std::vector<zmq::message_t> frames;
  zmq::message_t first;
  if (!m_socket->recv(first, zmq::recv_flags::dontwait)) return false;
  frames.push_back(std::move(first));
  while (m_socket->get(zmq::sockopt::rcvmore)) {
    zmq::message_t more;
    (void)m_socket->recv(more, zmq::recv_flags::none);
    frames.push_back(std::move(more));
  }
  // version, request id, domain, address, routing id, mechanism, credentials...
  const bool curve = frames.size() >= 7 && frames[5].to_string() == "CURVE" && frames[6].size() == 32;
  std::string key;
  if (curve) {
    char z85[41];
    zmq_z85_encode(z85, frames[6].data<uint8_t>(), 32);
    key = z85;
  }
  const bool ok = curve && key == m_client;
  if (!ok) {
    const int n = ++m_refused;
    if (n <= kRefusalsLogged)
      SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine),
                         "{}: refused a connection from {} ({}): only this run's own workers are heard", m_what,
                         frames.size() > 3 ? frames[3].to_string() : "?",
                         curve ? "key " + key + " is not the run's" : "no CURVE key");
  }
  const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
  m_socket->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  m_socket->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  m_socket->send(zmq::buffer(std::string(ok ? "200" : "400")), zmq::send_flags::sndmore);
  m_socket->send(zmq::buffer(std::string(ok ? "OK" : "not this run's key")), zmq::send_flags::sndmore);
  m_socket->send(zmq::str_buffer(""), zmq::send_flags::sndmore);
  m_socket->send(zmq::str_buffer(""), zmq::send_flags::none);
  return true;
}

}  // namespace shardscope
