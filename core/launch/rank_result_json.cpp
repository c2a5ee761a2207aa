#include "launch/rank_result_json.h"

#include <nlohmann/json.hpp>

#include "launch/wire_format.h"

namespace shardscope {

namespace {
using ResultJson = nlohmann::json;

ResultJson commJson(const CommBytes& b) {
  return {{"all_reduce", b.all_reduce}, {"reduce_scatter", b.reduce_scatter}, {"all_gather", b.all_gather},
          {"broadcast", b.broadcast}, {"send", b.send}};
}

const ResultJson& field(const ResultJson& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw WireError(std::string("result: field '") + key + "' is missing");
  return j.at(key);
}

int64_t integer(const ResultJson& j, const char* key) {
  const ResultJson& v = field(j, key);
  if (!v.is_number_integer()) throw WireError(std::string("result: '") + key + "' must be an integer");
  return v.get<int64_t>();
}

CommBytes commBytes(const ResultJson& j, const char* key) {
  const ResultJson& v = field(j, key);
  return {integer(v, "all_reduce"), integer(v, "reduce_scatter"), integer(v, "all_gather"), integer(v, "broadcast"),
          integer(v, "send")};
}

template <size_t N>
void int64Array(const ResultJson& j, const char* key, std::array<int64_t, N>& out) {
  const ResultJson& v = field(j, key);
  if (!v.is_array() || v.size() != N)
    throw WireError(std::string("result: '") + key + "' must be an array of " + std::to_string(N) + " integers");
  for (size_t i = 0; i < N; ++i) {
    if (!v[i].is_number_integer()) throw WireError(std::string("result: '") + key + "' must hold integers");
    out[i] = v[i].get<int64_t>();
  }
}

template <class T>
std::vector<T> list(const ResultJson& j, const char* key) {
  const ResultJson& v = field(j, key);
  if (!v.is_array()) throw WireError(std::string("result: '") + key + "' must be an array");
  std::vector<T> out;
  for (const ResultJson& e : v) {
    if (!e.is_number_integer()) throw WireError(std::string("result: '") + key + "' must hold integers");
    out.push_back(e.get<T>());
  }
  return out;
}
}  // namespace

std::string rankResultJson(const RankResult& r, int64_t padding_elements) {
  ResultJson j;
  j["ledger_current"] = r.ledger.current;
  j["ledger_peak"] = r.ledger.peak;
  j["model_state_peak"] = r.ledger.model_state_peak;
  j["total_peak"] = r.ledger.total_peak;
  j["comm_bytes"] = commJson(r.comm_bytes);
  j["fire_order"] = r.fire_order;
  ResultJson units = ResultJson::array();
  for (const auto& [op, unit] : r.unit_order) units.push_back({{"op", op}, {"unit", unit}});
  j["unit_order"] = units;
  j["padding_state_bytes"] = r.padding_state_bytes;
  j["tp_comm_bytes"] = commJson(r.tp_comm_bytes);
  j["tp_forward_bytes"] = r.tp_forward_bytes;
  j["tp_backward_bytes"] = r.tp_backward_bytes;
  j["activation_bytes_per_layer"] = r.activation_bytes_per_layer;
  j["padding_elements"] = padding_elements;
  return j.dump();
}

RankResult parseRankResultJson(const std::string& text, int64_t* padding_elements) {
  ResultJson j;
  try {
    j = ResultJson::parse(text);
  } catch (const std::exception& e) {
    throw WireError(std::string("result: not JSON: ") + e.what());
  }
  RankResult r;
  int64Array(j, "ledger_current", r.ledger.current);
  int64Array(j, "ledger_peak", r.ledger.peak);
  r.ledger.model_state_peak = integer(j, "model_state_peak");
  r.ledger.total_peak = integer(j, "total_peak");
  r.comm_bytes = commBytes(j, "comm_bytes");
  r.fire_order = list<int>(j, "fire_order");
  const ResultJson& units = field(j, "unit_order");
  if (!units.is_array()) throw WireError("result: 'unit_order' must be an array");
  for (const ResultJson& u : units) {
    const ResultJson& op = field(u, "op");
    if (!op.is_string()) throw WireError("result: 'unit_order' ops must be strings");
    r.unit_order.emplace_back(op.get<std::string>(), static_cast<int>(integer(u, "unit")));
  }
  r.padding_state_bytes = integer(j, "padding_state_bytes");
  r.tp_comm_bytes = commBytes(j, "tp_comm_bytes");
  r.tp_forward_bytes = list<int64_t>(j, "tp_forward_bytes");
  r.tp_backward_bytes = list<int64_t>(j, "tp_backward_bytes");
  r.activation_bytes_per_layer = integer(j, "activation_bytes_per_layer");
  if (padding_elements) *padding_elements = integer(j, "padding_elements");
  return r;
}

}  // namespace shardscope
