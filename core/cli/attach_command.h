// Serving and attaching from the CLI: `run --serve ADDR` (serveRun),
// `attach ADDR --trace FILE` (records a served run headless) and `keys`
// (this user's CURVE public key; --authorize lets an inspector's key in).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "attach/run_server.h"

namespace shardscope {

// Binds --serve's address for `run` and starts serving (say where on `out`);
// a threads run's gate is enabled so inspectors can step it. Before run.start().
std::unique_ptr<RunServer> serveRun(Run& run, std::ostream& out);

int commandAttach(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int commandKeys(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace shardscope
