#include "trace/ordered_json_writer.h"

namespace shardscope {

void writeJson(JsonWriter& w, const nlohmann::ordered_json& v) {
  using Type = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case Type::object:
      w.beginObject();
      for (const auto& [key, member] : v.items()) {
        w.key(key);
        writeJson(w, member);
      }
      w.endObject();
      return;
    case Type::array:
      w.beginArray();
      for (const auto& element : v) writeJson(w, element);
      w.endArray();
      return;
    case Type::string: w.value(v.get_ref<const std::string&>()); return;
    case Type::boolean: w.value(v.get<bool>()); return;
    case Type::number_integer: w.value(v.get<int64_t>()); return;
    case Type::number_unsigned: w.value(v.get<uint64_t>()); return;
    case Type::number_float: w.value(v.get<double>()); return;
    default: w.null(); return;
  }
}

}  // namespace shardscope
