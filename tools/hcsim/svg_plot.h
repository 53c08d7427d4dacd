// A tiny self-contained SVG line-plot writer (docs/tools.md#plot): one <polyline> per series,
// a log-2 x axis (sizes) or a linear one, a linear y axis from 0, axis labels, a legend. No
// dependencies; the same input gives the same bytes. Used by `hcsim plot` and `hcomm_test --plot`.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace hcsim {

struct PlotSeries {
  PlotSeries() = default;
  PlotSeries(std::string n, std::vector<std::pair<double, double>> p, bool markers = false)
      : name(std::move(n)), points(std::move(p)), markers_only(markers) {}
  std::string name;                               ///< legend entry
  std::vector<std::pair<double, double>> points;  ///< (x, y); drawn in increasing x
  bool markers_only = false;                      ///< dots without the connecting line (a scatter)
  std::vector<std::string> labels;                ///< when given, one text per point, drawn beside its dot
};

struct PlotSpec {
  std::string title, x_label = "size (bytes)", y_label = "busbw (GB/s)";
  std::string subtitle;  ///< a smaller line under the title (e.g. "flow tier"); none when empty
  bool log2_x = true;   ///< x > 0 on a log-2 axis, ticks at powers of two labelled 1K, 64M, ...
  int width = 800, height = 480;
  /// Dashed horizontal lines (a target), each (y, label); the y axis reaches the highest.
  std::vector<std::pair<double, std::string>> hlines;
};

/// The SVG document: one <polyline> (and a dot per point) and one legend entry per series that
/// has a point. Points with x <= 0 on a log axis, or non-finite values, are left out; a series
/// left with none is not drawn at all.
std::string svg_line_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series);
/// How every document of svg_line_plot begins (what an SVG output may replace; outputs.h).
extern const char* const kSvgPlotHead;

/// A linear axis' tick text: plain below 10,000 ("2.5", "1500"), then with k, M, G ("1.2M").
std::string tick_label(double v, double step);
/// "8", "512", "1K", "64K", "1M", "2G" for powers of two; other values as plain numbers.
std::string size_label(double bytes);

}  // namespace hcsim
