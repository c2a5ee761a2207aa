// The keys of ZeroMQ's CURVE security for serving and attaching: each user
// has one identity (a key pair made on first use, in the config directory,
// readable by its owner only) and a list of the public keys allowed to attach
// to the runs they serve (authorized_keys, as ssh has). Keys are Z85 text.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace shardscope {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;
};

struct AuthorizedKey {
  std::string key;
  std::string name;  // what follows the key on its line ("" if nothing)
};

// $SHARDSCOPE_CONFIG_DIR, else $XDG_CONFIG_HOME/shardscope, else ~/.config/shardscope.
std::filesystem::path shardscopeConfigDir();

// DIR/curve/identity: read, or made (0600, in a 0700 directory) when absent.
// Throws RunError naming the file when it cannot be read or made, is readable
// by others, or does not hold a valid key pair. *made: whether it was made now.
CurveKeyPair loadOrMakeIdentity(const std::filesystem::path& config_dir, bool* made = nullptr);

std::filesystem::path authorizedKeysPath(const std::filesystem::path& config_dir);
// One key per line (then an optional name), '#' comments. A missing file is
// an empty list; a bad line is a RunError naming the file and line.
std::vector<AuthorizedKey> loadAuthorizedKeys(const std::filesystem::path& config_dir);
// Appends a key (checked) unless it is there already; returns false if it was.
bool authorizeKey(const std::filesystem::path& config_dir, const std::string& key, const std::string& name);

// A 40-character Z85 text that decodes to a 32-byte key.
bool isCurveKey(const std::string& text);

}  // namespace shardscope
