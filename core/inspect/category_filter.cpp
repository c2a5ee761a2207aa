#include "inspect/category_filter.h"

#include "memory/memory_ledger.h"

namespace shardscope {

CategoryFilter CategoryFilter::modelState() {
  CategoryFilter f(0);
  for (int c = 0; c < kCategoryCount; ++c)
    if (isModelState(static_cast<Category>(c))) f.set(static_cast<Category>(c), true);
  return f;
}

void CategoryFilter::set(Category c, bool shown) {
  const uint32_t bit = 1u << static_cast<int>(c);
  m_bits = shown ? (m_bits | bit) : (m_bits & ~bit);
}

std::string CategoryFilter::describe() const {
  if (showsAll()) return "all";
  const CategoryFilter state = modelState();
  const bool whole_state = (m_bits & state.m_bits) == state.m_bits;
  std::string out = whole_state ? "model state" : "";
  for (int c = 0; c < kCategoryCount; ++c) {
    if (!shows(static_cast<Category>(c)) || (whole_state && state.shows(static_cast<Category>(c)))) continue;
    if (!out.empty()) out += ", ";
    out += categoryName(static_cast<Category>(c));
  }
  return out.empty() ? "none" : out;
}

std::string CategoryFilter::allowedNames() {
  std::string out = "all, model-state";
  for (int c = 0; c < kCategoryCount; ++c) (out += ", ") += categoryName(static_cast<Category>(c));
  return out;
}

std::optional<CategoryFilter> CategoryFilter::parse(std::string_view text, std::string* error) {
  CategoryFilter f(0);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    bool known = false;
    if (item == "all") {
      f = all();
      known = true;
    } else if (item == "model-state") {
      f.m_bits |= modelState().m_bits;
      known = true;
    } else {
      for (int c = 0; c < kCategoryCount && !known; ++c)
        if (item == categoryName(static_cast<Category>(c))) {
          f.set(static_cast<Category>(c), true);
          known = true;
        }
    }
    if (!known) {
      if (error)
        *error = (item.empty() ? std::string("an empty entry") : "'" + std::string(item) + "'") +
                 " is not a memory category; allowed, comma-separated: " + allowedNames();
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return f;
}

}  // namespace shardscope
