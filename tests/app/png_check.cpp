// Says whether a screenshot shows a drawn window rather than a blank one:
// the PNG loads, has the expected size, holds many distinct colours, and most
// of its 64x64 tiles carry more than one colour (a blank or a half-painted
// window is one flat colour over large areas). Prints the figures either way.
// Usage: png_check FILE WIDTH HEIGHT; exit 0 pass, 1 fail, 2 bad usage.
#include <QColor>
#include <QHash>
#include <QImage>
#include <QSet>
#include <QString>
#include <algorithm>
#include <cstdio>

namespace {

constexpr int kMinColours = 64;            // text antialiasing alone gives more
constexpr double kMinForeground = 0.05;    // of all pixels, not the dominant colour
constexpr double kMinBusyTiles = 0.30;     // of 64x64 tiles, with 2+ colours
constexpr int kTile = 64;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: png_check FILE WIDTH HEIGHT\n");
    return 2;
  }
  bool ok_w = false, ok_h = false;
  const int want_w = QString::fromLocal8Bit(argv[2]).toInt(&ok_w);
  const int want_h = QString::fromLocal8Bit(argv[3]).toInt(&ok_h);
  if (!ok_w || !ok_h || want_w <= 0 || want_h <= 0) {
    std::fprintf(stderr, "error: WIDTH and HEIGHT must be positive integers, got '%s' and '%s'\n", argv[2], argv[3]);
    return 2;
  }
  QImage image;
  if (!image.load(QString::fromLocal8Bit(argv[1]))) {
    std::fprintf(stderr, "FAIL: cannot read '%s' as an image\n", argv[1]);
    return 1;
  }
  image = image.convertToFormat(QImage::Format_RGB32);

  QHash<QRgb, qint64> counts;
  int tiles = 0, busy = 0;
  for (int ty = 0; ty < image.height(); ty += kTile)
    for (int tx = 0; tx < image.width(); tx += kTile) {
      const QRgb first = image.pixel(tx, ty);
      bool varied = false;
      for (int y = ty; y < std::min(ty + kTile, image.height()); ++y) {
        const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
        for (int x = tx; x < std::min(tx + kTile, image.width()); ++x) {
          ++counts[line[x]];
          varied = varied || line[x] != first;
        }
      }
      ++tiles;
      busy += varied;
    }
  QRgb dominant = 0;
  qint64 dominant_count = 0;
  for (auto it = counts.cbegin(); it != counts.cend(); ++it)
    if (it.value() > dominant_count) {
      dominant = it.key();
      dominant_count = it.value();
    }
  const double pixels = static_cast<double>(image.width()) * image.height();
  const double foreground = 1.0 - static_cast<double>(dominant_count) / pixels;
  const double busy_tiles = tiles ? static_cast<double>(busy) / tiles : 0.0;
  std::printf("%s: %dx%d, %lld distinct colours, dominant %s covers %.1f%%, %.1f%% of %d tiles busy\n", argv[1],
              image.width(), image.height(), static_cast<long long>(counts.size()),
              qPrintable(QColor(dominant).name()), 100.0 * (1.0 - foreground), 100.0 * busy_tiles, tiles);

  bool pass = true;
  const auto fail = [&pass](const char* what) {
    std::printf("FAIL: %s\n", what);
    pass = false;
  };
  if (image.width() != want_w || image.height() != want_h) fail("size differs from the requested one");
  if (counts.size() < kMinColours) fail("too few distinct colours: nothing much was drawn");
  if (foreground < kMinForeground) fail("almost every pixel has the background colour");
  if (busy_tiles < kMinBusyTiles) fail("most of the window is flat colour");
  return pass ? 0 : 1;
}
