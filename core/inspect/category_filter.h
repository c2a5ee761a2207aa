// Which memory-ledger categories a memory view or figure draws. Hiding the GPT
// presets' activations lets the gathered slice and model state fill the axis.
// Parsed from `--categories` lists ("model-state,gathered", "all", "param,grad").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/event.h"

namespace shardscope {

class CategoryFilter {
 public:
  static CategoryFilter all() { return CategoryFilter(kAllBits); }
  static CategoryFilter modelState();  // param, grad, master, adam_m, adam_v

  bool shows(Category c) const { return (m_bits >> static_cast<int>(c)) & 1u; }
  bool showsAll() const { return m_bits == kAllBits; }
  bool empty() const { return m_bits == 0; }
  void set(Category c, bool shown);
  bool operator==(const CategoryFilter&) const = default;

  // "all", or the shown names joined by ", " with the five model-state ones as
  // "model state" ("model state, gathered").
  std::string describe() const;

  // A comma-separated list of category names (param, grad, master, adam_m, adam_v,
  // gathered, grad_full, bucket, activation, workspace) and groups (all,
  // model-state). nullopt with one line in *error naming the bad entry and
  // what is allowed.
  static std::optional<CategoryFilter> parse(std::string_view text, std::string* error);
  static std::string allowedNames();

 private:
  static constexpr uint32_t kAllBits = (1u << kCategoryCount) - 1;
  explicit CategoryFilter(uint32_t bits) : m_bits(bits) {}
  uint32_t m_bits;
};

}  // namespace shardscope
