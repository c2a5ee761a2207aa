#include "palette.h"

#include <algorithm>

namespace shardscope {

namespace {
// Okabe & Ito (2008), "Color Universal Design".
const QColor kOrange(0xE6, 0x9F, 0x00);
const QColor kSkyBlue(0x56, 0xB4, 0xE9);
const QColor kGreen(0x00, 0x9E, 0x73);
const QColor kYellow(0xF0, 0xE4, 0x42);
const QColor kBlue(0x00, 0x72, 0xB2);
const QColor kVermillion(0xD5, 0x5E, 0x00);
const QColor kPurple(0xCC, 0x79, 0xA7);
}  // namespace

QColor Palette::kind(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return kSkyBlue;
    case EventKind::Backward: return kBlue;
    case EventKind::Loss: return QColor(0x4D, 0x4D, 0x4D);
    case EventKind::AllReduce: return kOrange;
    case EventKind::ReduceScatter: return kVermillion;
    case EventKind::AllGather: return kGreen;
    case EventKind::OptimizerStep: return kPurple;
    case EventKind::Wait: return QColor(0xC8, 0xC8, 0xC8);
    case EventKind::Copy: return kYellow;
    case EventKind::BucketReady: return kOrange.darker(130);
    case EventKind::GradReady: return QColor(0x80, 0x80, 0x80);
    case EventKind::Error: return QColor(0xC0, 0x00, 0x00);
    case EventKind::Broadcast: return QColor(0x8C, 0x6D, 0x31);
    case EventKind::AllToAll: return QColor(0x88, 0x22, 0x55);
    case EventKind::Kernel: return QColor(0x7F, 0x9C, 0xB5);  // a muted blue: compute, phase unknown
    case EventKind::CpuOp: return QColor(0xB8, 0xB8, 0xB8);
    case EventKind::Launch: return QColor(0x9E, 0x8F, 0xB8);  // a muted violet: host time, not the device's
    case EventKind::Send: return QColor(0x2E, 0x8B, 0x8B);  // teal: stage to stage
    case EventKind::Recv: return QColor(0x6F, 0xB7, 0xB7);
    default: return QColor(0x99, 0x99, 0x99);
  }
}

QColor Palette::category(Category category) {
  switch (category) {
    case Category::Param: return kBlue;
    case Category::Grad: return kSkyBlue;
    case Category::Master: return kGreen;
    case Category::AdamM: return kOrange;
    case Category::AdamV: return kYellow;
    case Category::Gathered: return kPurple;
    case Category::GradFull: return kVermillion;
    case Category::Bucket: return QColor(0x6E, 0x6E, 0x6E);
    case Category::Activation: return QColor(0xA8, 0xA8, 0xA8);
    case Category::Workspace: return QColor(0xD9, 0xD9, 0xD9);
  }
  return Qt::gray;
}

QColor Palette::unitState(UnitState state, Theme theme) {
  switch (state) {
    case UnitState::Sharded: return themed(QColor(0xC9, 0xCD, 0xD2), theme);
    case UnitState::Gathering: return kGreen;
    case UnitState::Gathered: return kYellow;
    case UnitState::Computing: return kBlue;
    case UnitState::Reducing: return kVermillion;
    case UnitState::Freed: return themed(QColor(0xF7, 0xF7, 0xF7), theme);
  }
  return Qt::gray;
}

QString Palette::unitStateTitle(UnitState state) {
  switch (state) {
    case UnitState::Sharded: return QStringLiteral("sharded");
    case UnitState::Gathering: return QStringLiteral("gathering");
    case UnitState::Gathered: return QStringLiteral("gathered");
    case UnitState::Computing: return QStringLiteral("computing");
    case UnitState::Reducing: return QStringLiteral("reducing");
    case UnitState::Freed: return QStringLiteral("freed");
  }
  return {};
}

QColor Palette::series(int n) {
  static const QColor colors[] = {kBlue, kVermillion, kGreen, kOrange, kPurple, kSkyBlue, QColor(0x4D, 0x4D, 0x4D)};
  return colors[static_cast<size_t>(n) % (sizeof(colors) / sizeof(colors[0]))];
}

QColor Palette::textOn(const QColor& fill) {
  // Relative luminance (sRGB weights); 0.5 splits the Okabe–Ito set sensibly.
  const double y = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
  return y > 0.5 ? QColor(0x1A, 0x1A, 0x1A) : Qt::white;
}

namespace {
Theme g_theme = Theme::Light;
}

void Palette::setTheme(Theme theme) { g_theme = theme; }
Theme Palette::theme() { return g_theme; }

QColor Palette::themed(const QColor& light) { return themed(light, g_theme); }

QColor Palette::themed(const QColor& light, Theme theme) {
  if (theme == Theme::Light) return light;
  const int spread = std::max({light.red(), light.green(), light.blue()}) - std::min({light.red(), light.green(), light.blue()});
  if (spread > 40) return light;  // a hue: kinds, categories, the cursor
  // Mirror the lightness into [26, 236]: white becomes the canvas (#1A1D21
  // family), near-black text becomes near-white.
  const int l = light.lightness();
  const int mirrored = 26 + (255 - l) * 210 / 255;
  QColor out = QColor::fromHsl(light.hslHue() < 0 ? 210 : light.hslHue(), std::min(light.hslSaturation(), 40), mirrored);
  out.setAlpha(light.alpha());
  return out;
}

QColor Palette::foldedMixed() { return themed(QColor(0x9A, 0x9A, 0x9A)); }
QColor Palette::background() { return themed(Qt::white); }
QColor Palette::rankBand(int rank) { return themed(rank % 2 ? QColor(0xF4, 0xF6, 0xF8) : QColor(0xFF, 0xFF, 0xFF)); }
QColor Palette::grid(Theme theme) { return themed(QColor(0xE2, 0xE2, 0xE2), theme); }
QColor Palette::selection(Theme theme) { return themed(QColor(0x1A, 0x1A, 0x1A), theme); }

QColor Palette::cursor() { return QColor(0xC0, 0x00, 0x40); }
QColor Palette::step(Theme theme) { return themed(QColor(0x50, 0x50, 0x50), theme); }

QString Palette::kindTitle(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return QStringLiteral("forward");
    case EventKind::Backward: return QStringLiteral("backward");
    case EventKind::Loss: return QStringLiteral("loss");
    case EventKind::AllReduce: return QStringLiteral("all-reduce");
    case EventKind::ReduceScatter: return QStringLiteral("reduce-scatter");
    case EventKind::AllGather: return QStringLiteral("all-gather");
    case EventKind::OptimizerStep: return QStringLiteral("optimizer step");
    case EventKind::BucketReady: return QStringLiteral("bucket ready");
    case EventKind::GradReady: return QStringLiteral("gradient ready");
    case EventKind::Wait: return QStringLiteral("wait");
    case EventKind::Copy: return QStringLiteral("copy");
    case EventKind::Error: return QStringLiteral("error");
    case EventKind::Broadcast: return QStringLiteral("broadcast");
    case EventKind::AllToAll: return QStringLiteral("all-to-all");
    case EventKind::Kernel: return QStringLiteral("kernel");
    case EventKind::CpuOp: return QStringLiteral("CPU op");
    case EventKind::Launch: return QStringLiteral("kernel launch (host)");
    case EventKind::Send: return QStringLiteral("send (to next stage)");
    case EventKind::Recv: return QStringLiteral("receive (from a stage)");
    default: return QString::fromLatin1(eventKindName(kind).data(), static_cast<int>(eventKindName(kind).size()));
  }
}

QString Palette::kindShort(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return QStringLiteral("fwd");
    case EventKind::Backward: return QStringLiteral("bwd");
    case EventKind::Loss: return QStringLiteral("loss");
    case EventKind::AllReduce: return QStringLiteral("AR");
    case EventKind::ReduceScatter: return QStringLiteral("RS");
    case EventKind::AllGather: return QStringLiteral("AG");
    case EventKind::OptimizerStep: return QStringLiteral("optimizer");
    case EventKind::Wait: return QStringLiteral("wait");
    case EventKind::Copy: return QStringLiteral("copy");
    case EventKind::AllToAll: return QStringLiteral("A2A");
    default: return kindTitle(kind);
  }
}

}  // namespace shardscope
