// The SVG line-plot writer (svg_plot.h).
#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hcsim {
namespace {

std::string xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

// A "nice" step (1, 2 or 5 × 10^k) giving about `n` intervals over [0, hi].
double nice_step(double hi, int n) {
  const double raw = hi / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string y_label_text(double v, double step) { return tick_label(v, step); }

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string tick_label(double v, double step) {
  char b[32];
  if (std::fabs(v) >= 1e4 && step >= 1) {
    const char* units[] = {"k", "M", "G", "T"};
    int k = -1;
    double m = v, st = step;
    while (std::fabs(m) >= 1e3 && k < 3) { m /= 1e3; st /= 1e3; ++k; }
    const int prec = st >= 1 ? 0 : st >= 0.1 ? 1 : 2;
    std::snprintf(b, sizeof b, "%.*f%s", prec, m, units[k]);
  } else if (step >= 1) std::snprintf(b, sizeof b, "%.0f", v);
  else if (step >= 0.1) std::snprintf(b, sizeof b, "%.1f", v);
  else std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string size_label(double b) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int k = 0;
  double v = b;
  while (v >= 1024 && std::fmod(v, 1024) == 0 && k < 5) { v /= 1024; ++k; }
  char s[32];
  std::snprintf(s, sizeof s, "%.0f%s", v, units[k]);
  return s;
}

const char* const kSvgPlotHead = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"";

std::string svg_line_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series) {
  // Clean, sorted points per series.
  std::vector<PlotSeries> ss;
  for (const auto& s : series) {
    PlotSeries c{s.name, {}, s.markers_only};
    std::vector<std::size_t> idx;
    for (std::size_t k = 0; k < s.points.size(); ++k) {
      auto [x, y] = s.points[k];
      if (std::isfinite(x) && std::isfinite(y) && (!spec.log2_x || x > 0)) idx.push_back(k);
    }
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return s.points[a].first < s.points[b].first; });
    for (std::size_t k : idx) {
      c.points.push_back(s.points[k]);
      if (!s.labels.empty()) c.labels.push_back(k < s.labels.size() ? s.labels[k] : std::string());
    }
    if (!c.points.empty()) ss.push_back(std::move(c));
  }
  const double W = spec.width, H = spec.height;
  // Legend on the right; a subtitle moves the plot down by its line.
  const double left = 70, right = 190, top = spec.subtitle.empty() ? 40 : 54, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  for (auto& s : ss)
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  for (auto& [y, t] : spec.hlines)
    if (std::isfinite(y)) ymax = std::max(ymax, y);
  if (ss.empty()) { xmin = spec.log2_x ? 1 : 0; xmax = spec.log2_x ? 2 : 1; }
  auto tx = [&](double x) { return spec.log2_x ? std::log2(x) : x; };
  double lo = tx(xmin), hi = tx(xmax);
  if (spec.log2_x) { lo = std::floor(lo); hi = std::ceil(hi); }
  if (hi <= lo) {  // one x value: centre it in a window of +-10 % (or +-1)
    const double d = lo != 0 && !spec.log2_x ? std::fabs(lo) * 0.1 : 1;
    lo -= d;
    hi += d;
  }
  if (ymax <= 0) ymax = 1;
  const double ystep = nice_step(ymax, 5);
  const double ytop = std::ceil(ymax / ystep) * ystep;
  auto X = [&](double x) { return left + (tx(x) - lo) / (hi - lo) * pw; };
  auto Y = [&](double y) { return top + ph - std::max(0.0, y) / ytop * ph; };

  std::string o = kSvgPlotHead;
  o += " width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " + num(W) +
       " " + num(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<rect x=\"0\" y=\"0\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(left + pw / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + xml(spec.title) + "</text>\n";
  if (!spec.subtitle.empty())
    o += "<text x=\"" + num(left + pw / 2) + "\" y=\"41\" text-anchor=\"middle\" font-size=\"12\" fill=\"#555555\">" +
         xml(spec.subtitle) + "</text>\n";
  // Grid and ticks.
  o += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (double v = 0; v <= ytop + ystep / 2; v += ystep) o += "<line x1=\"" + num(left) + "\" y1=\"" + num(Y(v)) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(Y(v)) + "\"/>\n";
  o += "</g>\n<g font-size=\"11\" fill=\"#333333\">\n";
  for (double v = 0; v <= ytop + ystep / 2; v += ystep)
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(Y(v) + 4) + "\" text-anchor=\"end\">" + y_label_text(v, ystep) + "</text>\n";
  if (spec.log2_x) {
    const int span = static_cast<int>(hi - lo);
    const int every = span <= 12 ? 1 : (span + 11) / 12;  // at most about 12 labels
    for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); e += every) {
      const double x = left + (e - lo) / (hi - lo) * pw;
      o += "<text x=\"" + num(x) + "\" y=\"" + num(top + ph + 18) + "\" text-anchor=\"middle\">" + size_label(std::ldexp(1.0, e)) + "</text>\n";
      o += "<line x1=\"" + num(x) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(x) + "\" y2=\"" + num(top + ph + 5) + "\" stroke=\"#333333\"/>\n";
    }
  } else {
    const double step = nice_step(hi - lo, 6);
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {  // ticks inside the axis only
      const double x = left + (v - lo) / (hi - lo) * pw;
      o += "<text x=\"" + num(x) + "\" y=\"" + num(top + ph + 18) + "\" text-anchor=\"middle\">" + y_label_text(v, step) + "</text>\n";
    }
  }
  o += "</g>\n";
  // Axes and labels.
  o += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(top + ph) + "\" stroke=\"black\"/>\n";
  o += "<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" + num(top + ph) + "\" stroke=\"black\"/>\n";
  o += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 16) + "\" text-anchor=\"middle\">" + xml(spec.x_label) +
       (spec.log2_x ? " (log 2)" : "") + "</text>\n";
  o += "<text x=\"18\" y=\"" + num(top + ph / 2) + "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " + num(top + ph / 2) + ")\">" +
       xml(spec.y_label) + "</text>\n";
  // Series and legend.
  for (std::size_t k = 0; k < ss.size(); ++k) {
    const char* c = kColors[k % (sizeof kColors / sizeof *kColors)];
    std::string pts;
    for (auto [x, y] : ss[k].points) pts += (pts.empty() ? "" : " ") + num(X(x)) + "," + num(Y(y));
    o += "<g class=\"series\">\n<title>" + xml(ss[k].name) + "</title>\n";
    if (!ss[k].markers_only)
      o += "<polyline fill=\"none\" stroke=\"" + std::string(c) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    for (auto [x, y] : ss[k].points) o += "<circle cx=\"" + num(X(x)) + "\" cy=\"" + num(Y(y)) + "\" r=\"3\" fill=\"" + c + "\"/>\n";
    for (std::size_t i = 0; i < ss[k].labels.size(); ++i) {
      if (ss[k].labels[i].empty()) continue;
      auto [x, y] = ss[k].points[i];
      o += "<text x=\"" + num(X(x) + 6) + "\" y=\"" + num(Y(y) - 6) + "\" font-size=\"10\" fill=\"#333333\">" + xml(ss[k].labels[i]) + "</text>\n";
    }
    o += "</g>\n";
    const double ly = top + 10 + 20.0 * static_cast<double>(k);
    o += "<line x1=\"" + num(left + pw + 15) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(left + pw + 40) + "\" y2=\"" + num(ly) +
         "\" stroke=\"" + c + "\" stroke-width=\"2\"/>\n";
    o += "<text x=\"" + num(left + pw + 46) + "\" y=\"" + num(ly + 4) + "\">" + xml(ss[k].name) + "</text>\n";
  }
  for (auto& [y, t] : spec.hlines) {
    if (!std::isfinite(y)) continue;
    o += "<line x1=\"" + num(left) + "\" y1=\"" + num(Y(y)) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(Y(y)) +
         "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
    o += "<text x=\"" + num(left + pw - 4) + "\" y=\"" + num(Y(y) - 5) + "\" text-anchor=\"end\" font-size=\"11\" fill=\"#d62728\">" +
         xml(t) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace hcsim
