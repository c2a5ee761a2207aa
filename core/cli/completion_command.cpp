#include "cli/completion_command.h"

#include <ostream>
#include <string_view>

#include "common/exit_codes.h"
#include "config/settings.h"
#include "model/hardware_profile.h"

namespace shardscope {

namespace {

std::string completionWords(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The case arm that completes one run flag's value; empty: a free value (no arm,
// bash's default file completion).
std::string completionValueArm(const Setting& s) {
  std::string words;
  if (s.type == SettingType::Choice && s.choices) words = completionWords(s.choices());
  else if (s.type == SettingType::Switch) words = "on off";
  else if (s.type == SettingType::Text && s.form.suggestions && std::string_view(s.form.suggestions) == "profiles") words = completionWords(listProfiles());
  if (words.empty()) return {};
  return "      " + std::string(s.flag) + ") COMPREPLY=($(compgen -W '" + words + "' -- \"$cur\")); return ;;\n";
}

}  // namespace

std::string bashCompletion() {
  std::string run_flags = "--help --force --log-level --log-file";
  std::string arms;
  for (const Setting* row : flagOrder()) {
    if (!row->parses()) continue;
    run_flags += std::string(" ") + row->flag;
    arms += completionValueArm(*row);
  }
  std::string script;
  script += "# bash completion for shardscope-cli; generated from the settings table by\n";
  script += "# `shardscope-cli completion bash` (do not edit).\n";
  script += "_shardscope_cli() {\n";
  script += "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n";
  script += "  if ((COMP_CWORD == 1)); then\n";
  script += "    COMPREPLY=($(compgen -W 'run devices calc profiles validate analyze inspect attach keys help --version' -- \"$cur\"))\n";
  script += "    return\n";
  script += "  fi\n";
  script += "  case $prev in\n";
  script += "    --log-level) COMPREPLY=($(compgen -W 'trace debug info warn error off' -- \"$cur\")); return ;;\n";
  script += "  esac\n";
  script += "  if [[ ${COMP_WORDS[1]} == run ]]; then\n";
  script += "    case $prev in\n";
  script += arms;
  script += "    esac\n";
  script += "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '" + run_flags + "' -- \"$cur\")); return; fi\n";
  script += "  fi\n";
  script += "  COMPREPLY=($(compgen -f -- \"$cur\"))\n";
  script += "}\n";
  script += "complete -o filenames -F _shardscope_cli shardscope-cli\n";
  return script;
}

int commandCompletion(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1 || args[0] != "bash") {
    err << "error: completion takes one shell: bash\n";
    return kExitBadInput;
  }
  out << bashCompletion();
  return kExitOk;
}

}  // namespace shardscope
