// One page of the window: a view over the shared Inspection, known by the name
// presets and `--figure --view` use ("timeline", "memory", "buckets", "units",
// "loss", "comm"). A page subscribes to the Inspection itself when it is made.
#pragma once

#include <QString>

class QWidget;

namespace shardscope {

class Page {
 public:
  virtual ~Page() = default;
  virtual QString name() const = 0;
  virtual QString title() const = 0;  // the dock's title
  virtual QWidget* widget() const = 0;
  // Why the page has nothing to draw for the shown run ("" when it has).
  virtual QString unavailable() const = 0;
  // Writes the page's teaching figure; subtitle names the run and its config.
  virtual bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) = 0;
};

}  // namespace shardscope
