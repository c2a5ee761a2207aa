// The CURVE keys of one `--launch processes` run: the launcher makes a server
// key pair (its collector and gate relay) and a client key pair (its workers)
// per run, and the collector and relay hear only connections that present the
// run's client key. Workers get the keys in a file only their user can read
// (0600, in a 0700 directory), never on a command line or in the environment:
// a worker's argv, which `ps` shows every account, names the collector and
// the run id, and those alone no longer let anyone into the run.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace shardscope {

struct RunKeys {
  std::string server_public;
  std::string server_secret;  // the collector's node only; "" in a worker's copy
  std::string client_public;
  std::string client_secret;
};

RunKeys makeRunKeys();

// A worker's copy (no server secret), as text and back. The text's lines are
// "server-public KEY", "client-public KEY", "client-secret KEY".
std::string workerKeysText(const RunKeys& keys);
// Throws RunError naming `where` when a line is missing or not a key.
RunKeys parseWorkerKeys(const std::string& text, const std::string& where);

// Writes `text` to a new file readable by its owner alone (0600, O_EXCL: a
// file already there, or a link, is an error). Throws RunError naming it.
void writePrivateFile(const std::filesystem::path& file, const std::string& text);
// A worker's keys from a file this user owns that no one else can read
// (a file another account could have written or read is refused).
RunKeys readRunKeysFile(const std::filesystem::path& file);

// A socket the run's workers reach: CURVE server with the run's server key;
// the context must hold a RunKeyAuthenticator before the socket binds.
void secureAsRunServer(zmq::socket_t& socket, const RunKeys& keys);
// A worker's socket to the collector or relay.
void secureAsRunClient(zmq::socket_t& socket, const RunKeys& keys);

// ZeroMQ's authentication handler (ZAP) for one context: a connection whose
// CURVE client key is not the run's is refused during the handshake, before
// any message of it is read. Bound at construction; answers on its own thread.
class RunKeyAuthenticator {
 public:
  RunKeyAuthenticator(zmq::context_t& context, std::string client_public, std::string what);
  ~RunKeyAuthenticator();
  RunKeyAuthenticator(const RunKeyAuthenticator&) = delete;
  RunKeyAuthenticator& operator=(const RunKeyAuthenticator&) = delete;
  int refused() const { return m_refused.load(); }  // connections refused so far

 private:
  void serve();
  bool answer();  // one request, if one waits

  std::unique_ptr<zmq::socket_t> m_socket;
  const std::string m_client;
  const std::string m_what;  // "the collector", "the gate relay": for the log
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_refused{0};
  std::thread m_thread;
};

}  // namespace shardscope
