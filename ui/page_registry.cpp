#include "page_registry.h"

namespace shardscope {

Page* PageRegistry::add(std::unique_ptr<Page> page) {
  m_pages.push_back(std::move(page));
  return m_pages.back().get();
}

Page* PageRegistry::find(const QString& name) const {
  for (const auto& p : m_pages)
    if (p->name() == name) return p.get();
  return nullptr;
}

QStringList PageRegistry::names() const {
  QStringList out;
  for (const auto& p : m_pages) out << p->name();
  return out;
}

}  // namespace shardscope
