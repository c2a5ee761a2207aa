#include "attach/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/errors.h"

namespace shardscope {

namespace fs = std::filesystem;

namespace {
fs::path curveDir(const fs::path& config_dir) { return config_dir / "curve"; }

void makePrivateDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RunError("cannot make " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) throw RunError("cannot restrict " + dir.string() + ": " + std::strerror(errno));
}

std::string fieldOf(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  return {};
}
}  // namespace

bool isCurveKey(const std::string& text) {
  if (text.size() != 40) return false;
  uint8_t key[32];
  return zmq_z85_decode(key, text.c_str()) != nullptr;
}

fs::path shardscopeConfigDir() {
  if (const char* own = std::getenv("SHARDSCOPE_CONFIG_DIR"); own && *own) return own;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return fs::path(xdg) / "shardscope";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".config" / "shardscope";
  throw RunError("no config directory: set HOME or SHARDSCOPE_CONFIG_DIR");
}

CurveKeyPair loadOrMakeIdentity(const fs::path& config_dir, bool* made) {
  const fs::path dir = curveDir(config_dir);
  const fs::path file = dir / "identity";
  if (made) *made = false;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno != ENOENT) throw RunError("cannot read " + file.string() + ": " + std::strerror(errno));
    makePrivateDir(dir);
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0) throw RunError(std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno()));
    const std::string text = std::string("# ShardScope's CURVE identity: keep the secret key to yourself.\npublic ") +
                             pub + "\nsecret " + sec + "\n";
    // O_EXCL: two processes making it at once keep the first one's.
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written) throw RunError("cannot write " + file.string());
      if (made) *made = true;
    } else if (errno != EEXIST) {
      throw RunError("cannot make " + file.string() + ": " + std::strerror(errno));
    }
    if (::stat(file.c_str(), &st) != 0) throw RunError("cannot read " + file.string() + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 0777));
    throw RunError(file.string() + " is readable by others (mode " + mode + "): its secret key must be yours alone (chmod 600 it)");
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  CurveKeyPair pair{fieldOf(text.str(), "public"), fieldOf(text.str(), "secret")};
  if (!in || !isCurveKey(pair.public_key) || !isCurveKey(pair.secret_key))
    throw RunError(file.string() + " does not hold a CURVE key pair (lines 'public KEY' and 'secret KEY', 40 Z85 characters each): remove it to make a new one");
  char derived[41];
  if (zmq_curve_public(derived, pair.secret_key.c_str()) != 0 || pair.public_key != derived)
    throw RunError(file.string() + ": its public key is not the secret key's: remove the file to make a new pair");
  return pair;
}

fs::path authorizedKeysPath(const fs::path& config_dir) { return curveDir(config_dir) / "authorized_keys"; }

std::vector<AuthorizedKey> loadAuthorizedKeys(const fs::path& config_dir) {
  const fs::path file = authorizedKeysPath(config_dir);
  std::vector<AuthorizedKey> keys;
  std::ifstream in(file);
  if (!in) {
    if (!fs::exists(file)) return keys;
    throw RunError("cannot read " + file.string());
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line.substr(first));
    AuthorizedKey k;
    fields >> k.key;
    std::getline(fields >> std::ws, k.name);
    if (!isCurveKey(k.key))
      throw RunError(file.string() + ":" + std::to_string(number) +
                     ": a line must start with a public key (40 Z85 characters, as `shardscope-cli keys` prints), got '" +
                     k.key + "'");
    keys.push_back(std::move(k));
  }
  return keys;
}

bool authorizeKey(const fs::path& config_dir, const std::string& key, const std::string& name) {
  if (!isCurveKey(key))
    throw ConfigError("keys --authorize: KEY must be a public key (40 Z85 characters, as `shardscope-cli keys` prints on the "
                      "attaching machine), got '" + key + "'");
  if (name.find('\n') != std::string::npos) throw ConfigError("keys --authorize: NAME must be one line");
  for (const AuthorizedKey& k : loadAuthorizedKeys(config_dir))
    if (k.key == key) return false;
  makePrivateDir(curveDir(config_dir));
  std::ofstream out(authorizedKeysPath(config_dir), std::ios::app);
  out << key << (name.empty() ? "" : " " + name) << "\n";
  if (!out) throw RunError("cannot write " + authorizedKeysPath(config_dir).string());
  return true;
}

}  // namespace shardscope
