// The window's pages by name, in the order they were added; replaces switches
// on view-name strings.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "page.h"

namespace shardscope {

class PageRegistry {
 public:
  Page* add(std::unique_ptr<Page> page);
  Page* find(const QString& name) const;  // nullptr when there is none
  QStringList names() const;
  const std::vector<std::unique_ptr<Page>>& pages() const { return m_pages; }

 private:
  std::vector<std::unique_ptr<Page>> m_pages;
};

}  // namespace shardscope
