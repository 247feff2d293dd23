//===- RunReport.cpp - the visual report of a training run -----------------===//
//
// Draws the HTML page of RunReport.h: the training CSVs are parsed by
// column name into one group per file (seeds split by the seed column), the
// metrics JSON by llvm::json; each chart is an inline <svg> drawn here
// (linear or logarithmic axes, mean lines with min..max bands over seeds,
// markers, legends), the op graph laid out by longest-path layers. Every
// text from the inputs is HTML-escaped, every coordinate is a finite number
// with one decimal (points that are not finite are left out), and a long
// run is drawn from at most kMaxPoints points per line (bucket means).
//
//===----------------------------------------------------------------------===//
#include "compiler/Report/RunReport.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace json = llvm::json;
using llvm::StringRef;

namespace mixprec::compiler {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The most points one line of a chart is drawn from; longer runs are
/// drawn from the means of consecutive buckets of steps.
constexpr size_t kMaxPoints = 1500;

/// The width of every chart (SVG user units; the page scales it down).
constexpr double kWidth = 960;

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

/// printf into a string.
template <typename... Ts> std::string fmt(const char *format, Ts... args) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(format, args...);
  return s;
}

/// `s` as HTML text or attribute value: markup characters as entities,
/// control characters and invalid UTF-8 as U+FFFD.
std::string esc(StringRef s) {
  std::string valid = json::isUTF8(s) ? s.str() : json::fixUTF8(s);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f)
        out += "\xEF\xBF\xBD";
      else
        out += c;
    }
  }
  return out;
}

/// A number for people: `sig` significant digits, exponents as "1.2e8".
std::string num(double v, int sig = 4) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  std::string s = fmt("%.*g", sig, v);
  size_t e = s.find('e');
  if (e == std::string::npos)
    return s;
  std::string mantissa = s.substr(0, e), digits = s.substr(e + 2);
  bool negative = s[e + 1] == '-';
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  return mantissa + "e" + (negative ? "-" : "") + digits;
}

/// A coordinate: one decimal. Callers give finite values only (0 stands
/// in for anything else, so no "nan" ever reaches an SVG attribute).
std::string xy(double v) {
  if (!std::isfinite(v))
    v = 0;
  std::string s = fmt("%.1f", v);
  return s == "-0.0" ? "0.0" : s;
}

/// `v` with an SI prefix: "3 G" + unit.
std::string si(double v, StringRef unit) {
  if (!std::isfinite(v))
    return num(v) + " " + unit.str();
  static const std::pair<double, const char *> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (auto [scale, prefix] : kPrefixes)
    if (std::fabs(v) >= scale)
      return num(v / scale, 3) + " " + prefix + unit.str();
  return num(v, 3) + " " + unit.str();
}

/// A rate: "66,086" (thousands separated from 10,000 up), "5000", "12.5".
std::string rate(double v) {
  if (!std::isfinite(v) || std::fabs(v) < 1e4 || std::fabs(v) >= 1e15)
    return num(v, 4);
  std::string digits = fmt("%.0f", std::fabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

/// A byte count: "9.77 KiB".
std::string bytes(double v) {
  if (!std::isfinite(v))
    return num(v) + " B";
  static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (std::fabs(v) < 1024)
    return num(v, 4) + " B";
  int unit = -1;
  while (std::fabs(v) >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return num(v, 3) + " " + kUnits[unit];
}

/// `text` cut to `max` characters (bytes; esc repairs a cut UTF-8
/// sequence), keeping its end: "…attn/MatMul".
std::string tail(StringRef text, size_t max) {
  if (text.size() <= max)
    return text.str();
  return "\xE2\x80\xA6" + text.take_back(max - 1).str();
}

const char *const kNotMeasured = "<span class=\"nm\">not measured</span>";

//===----------------------------------------------------------------------===//
// The training CSVs
//===----------------------------------------------------------------------===//

/// The columns the report reads (found by name in the header).
enum Col : int {
  Step,
  Epoch,
  Loss,
  LossScale,
  Skipped,
  GradNorm,
  TestLoss,
  TestAccuracy,
  Fp32Loss,
  Fp32Skipped,
  Fp32TestLoss,
  Fp32TestAccuracy,
  GradRelL2Max,
  GradCosineMin,
  kNumCols
};
// clang-format off
const char *const kColNames[kNumCols] = {
    "step", "epoch", "loss", "loss_scale", "skipped", "grad_norm", "test_loss", "test_accuracy",
    "fp32_loss", "fp32_skipped", "fp32_test_loss", "fp32_test_accuracy",
    "grad_rel_l2_max", "grad_cosine_min"};
// clang-format on

/// The rows of one data-order seed; a cell left empty is NaN.
struct SeedRun {
  std::string seed; ///< "" without a seed column
  std::array<std::vector<double>, kNumCols> col;
  size_t rows() const { return col[Step].size(); }
};

/// One CSV: one group of curves.
struct Group {
  std::string path, label, colour;
  std::vector<SeedRun> seeds;
  std::array<bool, kNumCols> has{};
  /// Cells that hold a number that is not finite ("nan", "inf"), per column.
  std::array<size_t, kNumCols> nonFinite{};
  size_t rows = 0;

  /// Whether column `c` holds a finite value in some row.
  bool anyFinite(Col c) const {
    for (const SeedRun &s : seeds)
      for (double v : s.col[c])
        if (std::isfinite(v))
          return true;
    return false;
  }
  /// "seed 7, seed 8" style names of the seeds ("" for a single unnamed one).
  std::string seedList() const {
    std::string out;
    for (const SeedRun &s : seeds)
      if (!s.seed.empty())
        out += (out.empty() ? "" : ", ") + s.seed;
    return out;
  }
};

/// Parses one cell: true with the value (NaN for an empty cell), false
/// when it is not a number.
bool parseCell(StringRef cell, double &out) {
  cell = cell.trim();
  if (cell.empty()) {
    out = kNaN;
    return true;
  }
  std::string lower = cell.lower();
  StringRef body = lower;
  bool negative = body.consume_front("-");
  if (!negative)
    body.consume_front("+");
  if (body == "nan") {
    out = kNaN;
    return true;
  }
  if (body == "inf" || body == "infinity") {
    out = negative ? -kInf : kInf;
    return true;
  }
  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  llvm::Expected<llvm::APFloat::opStatus> status =
      value.convertFromString(cell, llvm::APFloat::rmNearestTiesToEven);
  if (!status) {
    llvm::consumeError(status.takeError());
    return false;
  }
  out = value.convertToDouble(); // overflow is inf, underflow 0: numbers still
  return true;
}

/// Orders a seed's rows by step (a file written step by step already is).
void sortByStep(SeedRun &s) {
  const std::vector<double> &steps = s.col[Step];
  if (std::is_sorted(steps.begin(), steps.end()))
    return;
  std::vector<size_t> order(steps.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return steps[a] < steps[b]; });
  for (std::vector<double> &column : s.col) {
    std::vector<double> sorted(column.size());
    for (size_t i = 0; i < order.size(); ++i)
      sorted[i] = column[order[i]];
    column = std::move(sorted);
  }
}

bool parseCsv(const RunCsv &csv, Group &group, std::string &error) {
  group.path = csv.path;
  const std::string &path = csv.path;
  StringRef text = csv.text;
  std::array<int, kNumCols> index;
  index.fill(-1);
  int seedIndex = -1;
  size_t fields = 0, lineNo = 0;
  bool header = false;
  std::map<std::string, size_t> seedOf;
  auto at = [&](size_t line) { return path + ":" + std::to_string(line) + ": "; };
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    line = line.rtrim("\r");
    if (line.trim().empty())
      continue;
    llvm::SmallVector<StringRef> cells;
    line.split(cells, ',', -1, /*KeepEmpty=*/true);
    if (!header) {
      fields = cells.size();
      for (size_t i = 0; i < cells.size(); ++i) {
        StringRef name = cells[i].trim();
        if (i == 0)
          name.consume_front("\xEF\xBB\xBF"); // a byte-order mark
        name = name.trim().trim('"');
        int *slot = nullptr;
        if (name == "seed")
          slot = &seedIndex;
        for (int c = 0; c < kNumCols; ++c)
          if (name == kColNames[c])
            slot = &index[c];
        if (!slot)
          continue; // a column the report does not draw
        if (*slot >= 0) {
          error = at(lineNo) + "column '" + name.str() + "' appears twice in the header";
          return false;
        }
        *slot = static_cast<int>(i);
      }
      for (Col c : {Step, Loss})
        if (index[c] < 0) {
          error = at(lineNo) + "the header has no '" + kColNames[c] +
                  "' column (a CSV of mixprec train --csv starts with "
                  "[seed,]step,epoch,loss,loss_scale,...)";
          return false;
        }
      header = true;
      continue;
    }
    if (cells.size() != fields) {
      error = at(lineNo) + std::to_string(cells.size()) + " fields, the header has " +
              std::to_string(fields);
      return false;
    }
    std::string seed = seedIndex >= 0 ? cells[seedIndex].trim().str() : "";
    auto [it, added] = seedOf.emplace(seed, group.seeds.size());
    if (added) {
      group.seeds.emplace_back();
      group.seeds.back().seed = seed;
    }
    SeedRun &run = group.seeds[it->second];
    for (int c = 0; c < kNumCols; ++c) {
      if (index[c] < 0)
        continue;
      StringRef cell = cells[index[c]].trim();
      double v = kNaN;
      if (!parseCell(cell, v)) {
        error = at(lineNo) + "column '" + kColNames[c] + "' (field " +
                std::to_string(index[c] + 1) + "): '" + cell.str() + "' is not a number";
        return false;
      }
      if (c == Step && !std::isfinite(v)) {
        error = at(lineNo) + "column 'step' (field " + std::to_string(index[c] + 1) + "): '" +
                cell.str() + "' is not a step number";
        return false;
      }
      if (!cell.empty() && !std::isfinite(v))
        ++group.nonFinite[c];
      run.col[c].push_back(v);
    }
    for (int c = 0; c < kNumCols; ++c)
      if (index[c] < 0)
        run.col[c].push_back(kNaN);
    ++group.rows;
  }
  if (!header) {
    error = path + ": empty: no header row (a CSV of mixprec train --csv starts with "
                   "[seed,]step,epoch,loss,loss_scale,...)";
    return false;
  }
  for (int c = 0; c < kNumCols; ++c)
    group.has[c] = index[c] >= 0;
  for (SeedRun &s : group.seeds)
    sortByStep(s);
  return true;
}

//===----------------------------------------------------------------------===//
// Series
//===----------------------------------------------------------------------===//

/// A curve over steps: per step the mean, min and max over seeds.
struct Agg {
  std::vector<double> x, mean, lo, hi;
  size_t size() const { return x.size(); }
};

/// Column `c` of `runs` per step: the mean, min and max of the finite
/// values. With `keepGaps` a step where no run has a finite value is a gap
/// (NaN); without it (sparse columns: test loss) it is left out.
Agg aggregate(llvm::ArrayRef<const SeedRun *> runs, Col c, bool keepGaps) {
  struct Acc {
    double sum = 0, lo = kInf, hi = -kInf;
    size_t n = 0;
  };
  std::map<double, Acc> bySteps;
  for (const SeedRun *s : runs)
    for (size_t i = 0; i < s->rows(); ++i) {
      double v = s->col[c][i];
      if (!std::isfinite(v) && !keepGaps)
        continue;
      Acc &a = bySteps[s->col[Step][i]];
      if (std::isfinite(v)) {
        a.sum += v;
        a.lo = std::min(a.lo, v);
        a.hi = std::max(a.hi, v);
        ++a.n;
      }
    }
  Agg out;
  for (const auto &[step, a] : bySteps) {
    out.x.push_back(step);
    out.mean.push_back(a.n ? a.sum / a.n : kNaN);
    out.lo.push_back(a.n ? a.lo : kNaN);
    out.hi.push_back(a.n ? a.hi : kNaN);
  }
  return out;
}

Agg aggregate(const Group &g, Col c, bool keepGaps) {
  std::vector<const SeedRun *> runs;
  for (const SeedRun &s : g.seeds)
    runs.push_back(&s);
  return aggregate(runs, c, keepGaps);
}

/// How decimate reduces a bucket's values.
enum class Reduce { Mean, Min };

/// At most kMaxPoints points: buckets of consecutive steps, each the mean
/// of its steps and (Mean) the mean or (Min) the least of its finite
/// values; a band's lo and hi are the bucket's least and greatest.
Agg decimate(const Agg &in, Reduce reduce = Reduce::Mean) {
  if (in.size() <= kMaxPoints)
    return in;
  size_t bucket = (in.size() + kMaxPoints - 1) / kMaxPoints;
  Agg out;
  for (size_t start = 0; start < in.size(); start += bucket) {
    size_t end = std::min(in.size(), start + bucket);
    double xs = 0, sum = 0, least = kInf, lo = kInf, hi = -kInf;
    size_t n = 0;
    for (size_t i = start; i < end; ++i) {
      xs += in.x[i];
      if (std::isfinite(in.mean[i])) {
        sum += in.mean[i];
        least = std::min(least, in.mean[i]);
        ++n;
      }
      if (std::isfinite(in.lo[i]))
        lo = std::min(lo, in.lo[i]);
      if (std::isfinite(in.hi[i]))
        hi = std::max(hi, in.hi[i]);
    }
    out.x.push_back(xs / double(end - start));
    out.mean.push_back(n == 0 ? kNaN : reduce == Reduce::Mean ? sum / double(n) : least);
    out.lo.push_back(std::isfinite(lo) ? lo : kNaN);
    out.hi.push_back(std::isfinite(hi) ? hi : kNaN);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Charts
//===----------------------------------------------------------------------===//

/// Colours of the groups (Okabe-Ito, as examples/train_digits/plot_curves.py;
/// red is kept for skipped steps).
const char *const kGroupColours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                     "#56B4E9", "#D55E00", "#000000", "#999933"};
const char *const kSkippedColour = "#d62728";

enum class Glyph { Line, Dashed, Band, Dot, Ring, Tick, Square };

struct LegendItem {
  std::string label, colour;
  Glyph glyph = Glyph::Line;
};

struct Series {
  std::vector<double> x, y;
  std::string colour, title;
  bool dashed = false, stepwise = false;
  double width = 1.6, opacity = 1.0;
};

struct Band {
  std::vector<double> x, lo, hi;
  std::string colour;
  double opacity = 0.18;
};

struct Dot {
  double x, y;
  std::string colour, title;
  bool ring = false;
  double r = 3;
};

/// A red tick in a lane along the bottom of the plot (a skipped step).
struct Tick {
  double x;
  int lane;
  std::string colour, title;
};

struct Label {
  double x, y;
  std::string text, colour;
};

struct Chart {
  std::string id, title, xLabel = "step", yLabel;
  /// Logarithmic y whenever there is a positive value (else: when the
  /// values are positive and span more than two decades).
  bool forceLog = false;
  std::vector<Series> series;
  std::vector<Band> bands;
  std::vector<Dot> dots;
  std::vector<Tick> ticks;
  std::vector<Label> labels;
  std::vector<LegendItem> legend;
};

/// Draws `items` in rows from (left, top) within the chart width; returns
/// the y below the last row.
double drawLegend(llvm::raw_ostream &os, llvm::ArrayRef<LegendItem> items, double left,
                  double top) {
  if (items.empty())
    return top;
  double x = left, y = top + 8;
  os << "<g class=\"legend\" font-size=\"11.5\">";
  for (const LegendItem &item : items) {
    double w = 34 + 6.3 * double(item.label.size());
    if (x + w > kWidth - 10 && x > left) {
      x = left;
      y += 18;
    }
    const std::string &c = item.colour;
    switch (item.glyph) {
    case Glyph::Line:
    case Glyph::Dashed:
      os << "<line x1=\"" << xy(x) << "\" y1=\"" << xy(y) << "\" x2=\"" << xy(x + 22) << "\" y2=\""
         << xy(y) << "\" stroke=\"" << c << "\" stroke-width=\"2.2\""
         << (item.glyph == Glyph::Dashed ? " stroke-dasharray=\"6 3\"" : "") << "/>";
      break;
    case Glyph::Band:
      os << "<rect x=\"" << xy(x) << "\" y=\"" << xy(y - 5)
         << "\" width=\"22\" height=\"10\" fill=\"" << c << "\" fill-opacity=\"0.25\"/>";
      break;
    case Glyph::Dot:
    case Glyph::Ring:
      os << "<circle cx=\"" << xy(x + 11) << "\" cy=\"" << xy(y) << "\" r=\"3.5\" "
         << (item.glyph == Glyph::Dot ? "fill=\"" + c + "\""
                                      : "fill=\"#fff\" stroke=\"" + c + "\" stroke-width=\"1.5\"")
         << "/>";
      break;
    case Glyph::Tick:
      os << "<line x1=\"" << xy(x + 11) << "\" y1=\"" << xy(y - 6) << "\" x2=\"" << xy(x + 11)
         << "\" y2=\"" << xy(y + 6) << "\" stroke=\"" << c << "\" stroke-width=\"2\"/>";
      break;
    case Glyph::Square:
      os << "<rect x=\"" << xy(x + 5) << "\" y=\"" << xy(y - 6) << "\" width=\"12\" height=\"12\" "
         << "fill=\"" << c << "\" stroke=\"#555\" stroke-width=\"0.6\"/>";
      break;
    }
    os << "<text x=\"" << xy(x + 28) << "\" y=\"" << xy(y + 4) << "\">" << esc(item.label)
       << "</text>";
    x += w + 8;
  }
  os << "</g>";
  return y + 10;
}

/// Tick values of a linear axis over [lo, hi]: 1, 2 or 5 times a power of
/// ten apart, about `count` of them.
std::vector<double> niceTicks(double lo, double hi, int count) {
  std::vector<double> ticks;
  double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span))
    return ticks;
  double raw = span / count, power = std::pow(10, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  for (double k = std::ceil(lo / step); k * step <= hi + step * 1e-9; k += 1) {
    double v = k * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
    if (ticks.size() > 50)
      break;
  }
  return ticks;
}

/// A tick label: "0.25", "1e-4", "15000", "1.5e5".
std::string tickLabel(double v) {
  if (v == 0)
    return "0";
  double a = std::fabs(v);
  if (a < 1e5 && a >= 1 && v == std::round(v))
    return fmt("%.0f", v); // steps
  if (a >= 1e5 || a < 1e-3)
    return num(v, 2);
  return num(v, 4);
}

/// Where a chart's data lands: the axes' ranges (y in axis units: log10 on
/// a log axis) and the plot's box in pixels.
struct ChartFrame {
  bool logY = false;
  double x0 = kInf, x1 = -kInf, y0 = kInf, y1 = -kInf;
  double left = 74, right = kWidth - 18, top = 0, bottom = 0, dataBottom = 0, dataH = 0;
  /// Whether (x, y) can be drawn: finite, and y > 0 on a log axis.
  bool usable(double x, double y) const {
    return std::isfinite(x) && std::isfinite(y) && (!logY || y > 0);
  }
  /// `y` in axis units.
  double t(double y) const { return logY ? std::log10(y) : y; }
  /// The pixel column of `x`.
  double X(double x) const { return left + (x - x0) / (x1 - x0) * (right - left); }
  /// The pixel row of `y`.
  double Y(double y) const { return dataBottom - (t(y) - y0) / (y1 - y0) * dataH; }
};

/// Whether the chart's y axis is logarithmic: forced, or positive values
/// over more than two decades.
bool chooseLogY(const Chart &c) {
  // Which y values there are decides the axis.
  double minPos = kInf, maxPos = -kInf;
  bool nonPositive = false, anyY = false;
  auto seeY = [&](double y) {
    if (!std::isfinite(y))
      return;
    anyY = true;
    if (y > 0) {
      minPos = std::min(minPos, y);
      maxPos = std::max(maxPos, y);
    } else {
      nonPositive = true;
    }
  };
  for (const Series &s : c.series)
    for (double y : s.y)
      seeY(y);
  for (const Band &b : c.bands) {
    for (double y : b.lo)
      seeY(y);
    for (double y : b.hi)
      seeY(y);
  }
  for (const Dot &d : c.dots)
    seeY(d.y);
  bool anyPositive = minPos <= maxPos;
  return anyPositive && (c.forceLog || (!nonPositive && maxPos / minPos > 100));
}

/// Sets `f`'s ranges to the drawable data's (and the ticks' x); false when
/// nothing can be drawn.
bool fitRanges(const Chart &c, ChartFrame &f) {
  auto see = [&](double x, double y) {
    if (!f.usable(x, y))
      return;
    f.x0 = std::min(f.x0, x);
    f.x1 = std::max(f.x1, x);
    f.y0 = std::min(f.y0, f.t(y));
    f.y1 = std::max(f.y1, f.t(y));
  };
  for (const Series &s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i)
      see(s.x[i], s.y[i]);
  for (const Band &b : c.bands)
    for (size_t i = 0; i < b.x.size(); ++i)
      if (f.usable(b.x[i], b.lo[i]) && f.usable(b.x[i], b.hi[i])) {
        see(b.x[i], b.lo[i]);
        see(b.x[i], b.hi[i]);
      }
  for (const Dot &d : c.dots)
    see(d.x, d.y);
  const bool empty = !(f.x0 <= f.x1 && f.y0 <= f.y1);
  for (const Tick &k : c.ticks)
    if (std::isfinite(k.x) && !empty) {
      f.x0 = std::min(f.x0, k.x);
      f.x1 = std::max(f.x1, k.x);
    }
  return !empty;
}

/// Widens `f`'s ranges: an empty x range by 1 each side, y by 5% (or a
/// pad of its own when it is a single value).
void padRanges(ChartFrame &f) {
  if (f.x1 - f.x0 <= 0) {
    f.x0 -= 1;
    f.x1 += 1;
  }
  if (f.y1 - f.y0 <= std::max(1e-12, std::fabs(f.y1) * 1e-9)) {
    double pad = f.logY ? 1 : std::max(std::fabs(f.y1) * 0.1, 1e-9);
    if (!f.logY && f.y0 == 0)
      pad = 1;
    f.y0 -= pad;
    f.y1 += pad;
  } else {
    double pad = (f.y1 - f.y0) * 0.05;
    f.y0 -= pad;
    f.y1 += pad;
  }
}

/// The y axis's tick values in axis units (log10 on a log axis).
std::vector<double> yTickValues(const ChartFrame &f) {
  const double y0 = f.y0, y1 = f.y1;
  std::vector<double> yTicks;
  if (f.logY) {
    int first = static_cast<int>(std::ceil(y0 - 1e-9)),
        last = static_cast<int>(std::floor(y1 + 1e-9));
    int stride = std::max(1, (last - first + 1 + 7) / 8);
    for (int d = first; d <= last; d += stride)
      yTicks.push_back(d);
    if (yTicks.size() < 2) {
      yTicks.clear();
      for (int d = static_cast<int>(std::floor(y0)); d <= static_cast<int>(std::ceil(y1)); ++d)
        for (double m : {1.0, 2.0, 5.0}) {
          double a = d + std::log10(m);
          if (a >= y0 && a <= y1)
            yTicks.push_back(a);
        }
    }
    if (yTicks.size() < 2) { // less than a decade: linear steps of the values
      yTicks.clear();
      for (double v : niceTicks(std::pow(10, y0), std::pow(10, y1), 4))
        if (v > 0)
          yTicks.push_back(std::log10(v));
    }
  } else {
    yTicks = niceTicks(y0, y1, 6);
  }
  return yTicks;
}

/// Draws the axes: grid lines and labels.
void drawAxes(llvm::raw_ostream &os, const ChartFrame &f) {
  os << "<g class=\"axes\" fill=\"#444\">";
  for (double v : niceTicks(f.x0, f.x1, 8)) {
    double px = f.X(v);
    os << "<line x1=\"" << xy(px) << "\" y1=\"" << xy(f.top) << "\" x2=\"" << xy(px)
       << "\" y2=\"" << xy(f.bottom) << "\" stroke=\"#e6e6e6\"/><text x=\"" << xy(px)
       << "\" y=\"" << xy(f.bottom + 15) << "\" text-anchor=\"middle\">" << tickLabel(v)
       << "</text>";
  }
  for (double a : yTickValues(f)) {
    double py = f.dataBottom - (a - f.y0) / (f.y1 - f.y0) * f.dataH;
    double v = f.logY ? std::strtod(fmt("%.12g", std::pow(10, a)).c_str(), nullptr) : a;
    os << "<line x1=\"" << xy(f.left) << "\" y1=\"" << xy(py) << "\" x2=\"" << xy(f.right)
       << "\" y2=\"" << xy(py) << "\" stroke=\"#e6e6e6\"/><text x=\"" << xy(f.left - 6)
       << "\" y=\"" << xy(py + 4) << "\" text-anchor=\"end\">" << tickLabel(v) << "</text>";
  }
  os << "</g>";
}

/// Draws the chart's bands: one filled path per run of drawable points.
void drawBands(llvm::raw_ostream &os, const Chart &c, const ChartFrame &f) {
  for (const Band &b : c.bands) {
    std::vector<size_t> run;
    auto flush = [&] {
      if (run.size() >= 2) {
        os << "<path class=\"band\" d=\"";
        for (size_t k = 0; k < run.size(); ++k)
          os << (k ? "L" : "M") << xy(f.X(b.x[run[k]])) << " " << xy(f.Y(b.lo[run[k]]));
        for (size_t k = run.size(); k-- > 0;)
          os << "L" << xy(f.X(b.x[run[k]])) << " " << xy(f.Y(b.hi[run[k]]));
        os << "Z\" fill=\"" << b.colour << "\" fill-opacity=\"" << num(b.opacity, 3)
           << "\" stroke=\"none\"/>";
      }
      run.clear();
    };
    for (size_t i = 0; i < b.x.size(); ++i) {
      if (f.usable(b.x[i], b.lo[i]) && f.usable(b.x[i], b.hi[i]))
        run.push_back(i);
      else
        flush();
    }
    flush();
  }
}

/// Draws the chart's lines; a segment of one point is drawn as a dot.
void drawSeries(llvm::raw_ostream &os, const Chart &c, const ChartFrame &f) {
  for (const Series &s : c.series) {
    std::string d;
    std::vector<std::pair<double, double>> lone; // one-point segments: drawn as dots
    size_t segment = 0;
    double lastX = 0, lastY = 0;
    for (size_t i = 0; i <= s.x.size(); ++i) {
      bool ok = i < s.x.size() && f.usable(s.x[i], s.y[i]);
      if (!ok) {
        if (segment == 1)
          lone.push_back({lastX, lastY});
        segment = 0;
        continue;
      }
      double px = f.X(s.x[i]), py = f.Y(s.y[i]);
      if (segment == 0)
        d += "M" + xy(px) + " " + xy(py);
      else if (s.stepwise)
        d += "H" + xy(px) + "V" + xy(py);
      else
        d += "L" + xy(px) + " " + xy(py);
      lastX = px;
      lastY = py;
      ++segment;
    }
    if (!d.empty())
      os << "<path class=\"line\" d=\"" << d << "\" fill=\"none\" stroke=\"" << s.colour
         << "\" stroke-width=\"" << num(s.width, 3) << "\" stroke-opacity=\"" << num(s.opacity, 3)
         << "\" stroke-linejoin=\"round\"" << (s.dashed ? " stroke-dasharray=\"6 3\"" : "")
         << "><title>" << esc(s.title) << "</title></path>";
    for (auto [px, py] : lone)
      os << "<circle cx=\"" << xy(px) << "\" cy=\"" << xy(py) << "\" r=\"" << num(s.width, 3)
         << "\" fill=\"" << s.colour << "\" fill-opacity=\"" << num(s.opacity, 3) << "\"/>";
  }
}

/// Draws the chart's markers, tick marks (one per pixel column and lane)
/// and labels.
void drawMarks(llvm::raw_ostream &os, const Chart &c, const ChartFrame &f) {
  for (const Dot &dot : c.dots) {
    if (!f.usable(dot.x, dot.y))
      continue;
    os << "<circle class=\"point\" cx=\"" << xy(f.X(dot.x)) << "\" cy=\"" << xy(f.Y(dot.y))
       << "\" r=\"" << num(dot.r, 3) << "\" "
       << (dot.ring ? "fill=\"#fff\" stroke=\"" + dot.colour + "\" stroke-width=\"1.5\""
                    : "fill=\"" + dot.colour + "\" stroke=\"#fff\" stroke-width=\"0.6\"")
       << "><title>" << esc(dot.title) << "</title></circle>";
  }
  std::set<std::pair<int, std::string>> drawnTicks;
  for (const Tick &k : c.ticks) {
    if (!std::isfinite(k.x))
      continue;
    std::string px = xy(f.X(k.x));
    if (!drawnTicks.insert({k.lane, px}).second)
      continue; // one tick per pixel column and lane
    double yb = f.bottom - 2 - 9 * k.lane;
    os << "<line class=\"tick\" x1=\"" << px << "\" y1=\"" << xy(yb) << "\" x2=\"" << px
       << "\" y2=\"" << xy(yb - 7) << "\" stroke=\"" << k.colour << "\" stroke-width=\"1.4\">"
       << "<title>" << esc(k.title) << "</title></line>";
  }
  for (const Label &l : c.labels) {
    if (!f.usable(l.x, l.y))
      continue;
    double px = f.X(l.x), py = std::max(f.top + 12, f.Y(l.y) - 7);
    bool end = px > f.right - 200;
    os << "<text x=\"" << xy(end ? px - 4 : px + 4) << "\" y=\"" << xy(py) << "\" fill=\""
       << l.colour << "\" font-weight=\"bold\"" << (end ? " text-anchor=\"end\"" : "") << ">"
       << esc(l.text) << "</text>";
  }
}

/// Draws a chart as an <svg> (with `c.id`); `logY` says whether its y
/// axis came out logarithmic.
std::string renderChart(const Chart &c, bool &logY) {
  ChartFrame f;
  f.logY = logY = chooseLogY(c);
  const bool empty = !fitRanges(c, f);

  std::string svg;
  llvm::raw_string_ostream os(svg);
  // The legend is drawn first to know where the plot starts.
  std::string legend;
  llvm::raw_string_ostream legendOs(legend);
  const double left = f.left, right = f.right;
  double top = drawLegend(legendOs, c.legend, left, 6) + 8;
  const double plotH = 270, bottom = top + plotH, height = bottom + 48;
  os << "<svg id=\"" << esc(c.id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
     << "viewBox=\"0 0 " << xy(kWidth) << " " << xy(height) << "\" width=\"" << xy(kWidth)
     << "\" height=\"" << xy(height) << "\" role=\"img\" aria-labelledby=\"" << esc(c.id)
     << "-title\" font-size=\"11\">";
  os << "<title id=\"" << esc(c.id) << "-title\">" << esc(c.title) << "</title>";
  os << "<rect x=\"" << xy(left) << "\" y=\"" << xy(top) << "\" width=\"" << xy(right - left)
     << "\" height=\"" << xy(plotH) << "\" fill=\"#fcfcfc\" stroke=\"#999\"/>";
  os << legend;
  os << "<text x=\"" << xy((left + right) / 2) << "\" y=\"" << xy(height - 8)
     << "\" text-anchor=\"middle\" fill=\"#333\">" << esc(c.xLabel) << "</text>";
  os << "<text transform=\"translate(16 " << xy((top + bottom) / 2)
     << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">"
     << esc(c.yLabel + (logY ? " (log scale)" : "")) << "</text>";
  if (empty) {
    os << "<text x=\"" << xy((left + right) / 2) << "\" y=\"" << xy((top + bottom) / 2)
       << "\" text-anchor=\"middle\" fill=\"#888\" font-size=\"14\">no finite values to draw"
       << "</text></svg>";
    return svg;
  }
  padRanges(f);
  // Tick lanes (skipped steps) get the bottom of the plot to themselves.
  int lanes = 0;
  for (const Tick &k : c.ticks)
    lanes = std::max(lanes, k.lane + 1);
  f.top = top;
  f.bottom = bottom;
  f.dataBottom = bottom - (lanes ? 9.0 * lanes + 4 : 0);
  f.dataH = f.dataBottom - top;

  drawAxes(os, f);
  // Bands, lines, markers, ticks, labels.
  drawBands(os, c, f);
  drawSeries(os, c, f);
  drawMarks(os, c, f);
  os << "</svg>";
  return svg;
}

/// A band from an aggregate's lo and hi.
Band bandOf(const Agg &a, const std::string &colour, double opacity = 0.18) {
  Band b;
  b.x = a.x;
  b.lo = a.lo;
  b.hi = a.hi;
  b.colour = colour;
  b.opacity = opacity;
  return b;
}

Series seriesOf(const Agg &a, const std::string &colour, const std::string &title) {
  Series s;
  s.x = a.x;
  s.y = a.mean;
  s.colour = colour;
  s.title = title;
  return s;
}

/// "3 seeds (7, 8, 9)", or "" for one seed.
std::string seedsPhrase(const Group &g) {
  if (g.seeds.size() < 2)
    return "";
  std::string list = g.seedList();
  return std::to_string(g.seeds.size()) + " seeds" + (list.empty() ? "" : " (" + list + ")");
}

//===----------------------------------------------------------------------===//
// The metrics JSON
//===----------------------------------------------------------------------===//

std::optional<double> number(const json::Object *o, StringRef key) {
  if (!o)
    return std::nullopt;
  if (const json::Value *v = o->get(key))
    return v->getAsNumber();
  return std::nullopt;
}

std::optional<std::string> text(const json::Object *o, StringRef key) {
  if (!o)
    return std::nullopt;
  if (std::optional<StringRef> s = o->getString(key))
    return s->str();
  return std::nullopt;
}

const json::Object *object(const json::Object *o, StringRef key) {
  return o ? o->getObject(key) : nullptr;
}

/// A JSON scalar as text (a seed may be a number or a string).
std::string scalarText(const json::Value &v) {
  if (std::optional<int64_t> i = v.getAsInteger())
    return std::to_string(*i);
  if (std::optional<double> d = v.getAsNumber())
    return num(*d, 6);
  if (std::optional<StringRef> s = v.getAsString())
    return s->str();
  return "?";
}

/// `v` (escaped) or "not measured".
std::string orNotMeasured(const std::optional<std::string> &v) {
  return v ? esc(*v) : kNotMeasured;
}

//===----------------------------------------------------------------------===//
// The page
//===----------------------------------------------------------------------===//

const char *const kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,
  sans-serif;
  color:#222;background:#fff;margin:0 auto;padding:20px 24px 40px;max-width:1010px}
h1{font-size:23px;margin:6px 0 4px}
h2{font-size:17px;margin:30px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
ul.facts{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 18px;
  font-size:13.5px}
ul.facts b{color:#555;font-weight:600}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #d8d8d8;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.nm{color:#888;font-style:italic}
.warn{color:#b00020;font-weight:600}
.verdict{font-weight:700}
.note{color:#6b5200;background:#fff8e1;border:1px solid #efd88f;padding:8px 12px;
  border-radius:4px;font-size:13.5px}
.caption{color:#555;font-size:12.5px;margin:4px 0 0;line-height:1.45}
svg.chart{display:block;max-width:100%;height:auto;background:#fff}
footer{margin-top:36px;color:#888;font-size:12px}
)";

/// Everything a section draws from.
struct Inputs {
  std::vector<Group> &groups;
  const json::Object *metrics; ///< null without a metrics JSON
  std::string precision;       ///< the metrics' precision, "" if none
  std::string compare;         ///< the metrics' compare, "" if none
};

/// The note shown where a part of the metrics is missing.
std::string missingNote(const std::string &id, const std::string &what, const Inputs &in,
                        const std::string &key) {
  return "<div id=\"" + id + "\" class=\"note\">" + esc(what) + ": not measured (" +
         (in.metrics ? "the metrics JSON has no \"" + key + "\""
                     : std::string("no metrics given")) +
         ")</div>\n";
}

void lossSection(llvm::raw_ostream &os, const Inputs &in) {
  Chart c;
  c.id = "loss-curves";
  c.title = "Training loss per step";
  c.yLabel = "loss";
  std::vector<std::string> notes;
  bool anySeeds = false, anyFp32 = false, anyTest = false;
  for (const Group &g : in.groups) {
    const bool seeds = g.seeds.size() > 1;
    anySeeds |= seeds;
    Agg loss = decimate(aggregate(g, Loss, true));
    if (seeds)
      c.bands.push_back(bandOf(loss, g.colour));
    std::string what = g.label + " loss" +
                       (seeds ? " (mean of " + std::to_string(g.seeds.size()) + " seeds)" : "");
    c.series.push_back(seriesOf(loss, g.colour, what));
    c.legend.push_back({what, g.colour, Glyph::Line});
    if (g.anyFinite(Fp32Loss)) {
      anyFp32 = true;
      Agg fp32 = decimate(aggregate(g, Fp32Loss, true));
      if (seeds)
        c.bands.push_back(bandOf(fp32, g.colour, 0.08));
      Series s = seriesOf(fp32, g.colour, g.label + ": the FP32 run beside it");
      s.dashed = true;
      s.width = 1.3;
      c.series.push_back(s);
      c.legend.push_back({g.label + ": FP32 beside", g.colour, Glyph::Dashed});
    }
    for (auto [col, ring, name] : {std::tuple{TestLoss, false, "test loss"},
                                   std::tuple{Fp32TestLoss, true, "FP32 test loss"}}) {
      Agg test = aggregate(g, col, false);
      if (test.size() == 0)
        continue;
      anyTest = true;
      for (size_t i = 0; i < test.size(); ++i)
        c.dots.push_back({test.x[i], test.mean[i], g.colour,
                          g.label + " " + name + " at step " + num(test.x[i], 10) + ": " +
                              num(test.mean[i], 6) + (seeds ? " (mean over seeds)" : ""),
                          ring, 3.6});
      c.legend.push_back({g.label + " " + name, g.colour, ring ? Glyph::Ring : Glyph::Dot});
    }
    if (g.nonFinite[Loss])
      notes.push_back(g.label + ": rows whose loss is not finite, left out of the line: " +
                      std::to_string(g.nonFinite[Loss]));
    if (g.rows == 0)
      notes.push_back(g.label + ": the CSV has no rows");
  }
  if (anySeeds)
    c.legend.push_back({"min..max over seeds", "#777", Glyph::Band});
  bool logY = false;
  os << "<h2>Loss</h2>\n" << renderChart(c, logY) << "\n<p class=\"caption\">";
  os << "Training loss at every step";
  if (anySeeds)
    os << "; with several data-order seeds the line is the mean over seeds and the band spans "
          "their min..max at each step";
  if (anyFp32)
    os << "; dashed: the FP32 run trained beside it on the same batches (--compare fp32)";
  if (anyTest)
    os << "; dots: the test loss at evaluation steps (rings: the FP32 run's)";
  os << "." << (logY ? " The y axis is logarithmic (the values span more than two decades)." : "");
  for (const Group &g : in.groups)
    if (std::string s = seedsPhrase(g); !s.empty())
      os << " " << esc(g.label) << ": " << esc(s) << ".";
  for (const std::string &n : notes)
    os << " " << esc(n) << ".";
  if (in.groups.size() > 0 && std::all_of(in.groups.begin(), in.groups.end(),
                                          [](const Group &g) { return g.rows > kMaxPoints; }))
    os << " Long runs are drawn from at most " << kMaxPoints
       << " points per line (means of consecutive steps).";
  os << "</p>\n";
}

void lossScaleSection(llvm::raw_ostream &os, const Inputs &in) {
  Chart c;
  c.id = "loss-scale";
  c.title = "Loss scale per step, skipped steps marked";
  c.yLabel = "loss scale";
  c.forceLog = true;
  std::vector<std::string> notes;
  bool anySkipped = false;
  for (size_t gi = 0; gi < in.groups.size(); ++gi) {
    const Group &g = in.groups[gi];
    if (!g.has[LossScale])
      notes.push_back(g.label + ": no loss_scale column");
    for (size_t k = 0; k < g.seeds.size(); ++k) {
      const SeedRun &s = g.seeds[k];
      Series line = seriesOf(decimate(aggregate({&s}, LossScale, true), Reduce::Min), g.colour,
                             g.label + " loss scale" + (s.seed.empty() ? "" : ", seed " + s.seed));
      line.stepwise = true;
      if (k > 0) {
        line.opacity = 0.35;
        line.width = 1;
      } else {
        line.width = 1.8;
      }
      c.series.push_back(line);
    }
    c.legend.push_back(
        {g.label + " loss scale" +
             (g.seeds.size() > 1 ? " (seed " + g.seeds[0].seed + "; others faint)" : ""),
         g.colour, Glyph::Line});
    size_t skipped = 0;
    std::string perSeed;
    for (const SeedRun &s : g.seeds) {
      size_t n = 0;
      for (size_t i = 0; i < s.rows(); ++i)
        if (std::isfinite(s.col[Skipped][i]) && s.col[Skipped][i] != 0) {
          ++n;
          c.ticks.push_back({s.col[Step][i], static_cast<int>(gi), kSkippedColour,
                             g.label + (s.seed.empty() ? "" : " seed " + s.seed) + ": step " +
                                 num(s.col[Step][i], 12) + " skipped (overflow)"});
        }
      skipped += n;
      if (g.seeds.size() > 1)
        perSeed += (perSeed.empty() ? "" : ", ") + std::string("seed ") + s.seed + ": " +
                   std::to_string(n);
    }
    anySkipped |= skipped > 0;
    std::string note = g.label + ": " + std::to_string(skipped) + " of " + std::to_string(g.rows) +
                       " steps skipped";
    if (g.rows)
      note += " (" + num(100.0 * double(skipped) / double(g.rows), 3) + "%)";
    if (!perSeed.empty())
      note += " [" + perSeed + "]";
    if (g.has[Fp32Skipped]) {
      size_t fp32 = 0;
      for (const SeedRun &s : g.seeds)
        for (double v : s.col[Fp32Skipped])
          fp32 += std::isfinite(v) && v != 0;
      note += "; the FP32 run beside it skipped " + std::to_string(fp32);
    }
    notes.push_back(note);
  }
  if (anySkipped)
    c.legend.push_back({"skipped step (one row of ticks per group, from the bottom)",
                        kSkippedColour, Glyph::Tick});
  bool logY = false;
  os << "<h2>Loss scale</h2>\n" << renderChart(c, logY) << "\n<p class=\"caption\">";
  os << "The loss scale each step used (dynamic loss scaling halves it on an overflow and "
        "grows it after clean steps; 1 without scaling)";
  if (in.groups.size() > 1 || anySkipped)
    os << "; red ticks along the bottom: steps skipped because a gradient overflowed";
  os << ".";
  for (const std::string &n : notes)
    os << " " << esc(n) << ".";
  os << "</p>\n";
}

void gradNormSection(llvm::raw_ostream &os, const Inputs &in) {
  Chart c;
  c.id = "grad-norm";
  c.title = "Gradient norm per step";
  c.yLabel = "gradient norm";
  std::vector<std::string> notes;
  bool anySeeds = false;
  for (const Group &g : in.groups) {
    const bool seeds = g.seeds.size() > 1;
    anySeeds |= seeds;
    Agg norm = decimate(aggregate(g, GradNorm, true));
    if (seeds)
      c.bands.push_back(bandOf(norm, g.colour, 0.14));
    std::string what = g.label + " gradient norm" +
                       (seeds ? " (mean of " + std::to_string(g.seeds.size()) + " seeds)" : "");
    c.series.push_back(seriesOf(norm, g.colour, what));
    c.legend.push_back({what, g.colour, Glyph::Line});
    if (!g.has[GradNorm])
      notes.push_back(g.label + ": no grad_norm column");
    else if (g.nonFinite[GradNorm])
      notes.push_back(g.label + ": steps whose norm is not finite (overflows), left out: " +
                      std::to_string(g.nonFinite[GradNorm]));
  }
  if (anySeeds)
    c.legend.push_back({"min..max over seeds", "#777", Glyph::Band});
  bool logY = false;
  os << "<h2>Gradient norm</h2>\n" << renderChart(c, logY) << "\n<p class=\"caption\">";
  os << "The global L2 norm of the unscaled gradients at each step"
     << (anySeeds ? ", the mean over seeds (band: min..max)" : "") << ".";
  if (logY)
    os << " The y axis is logarithmic.";
  for (const std::string &n : notes)
    os << " " << esc(n) << ".";
  os << "</p>\n";
}

/// One parameter of the gradient comparison.
struct ParamError {
  std::string name;
  std::map<double, std::vector<double>> relByStep; ///< rel_l2 per step, over seeds
  double worst = -kInf, worstStep = kNaN, minCosine = kInf;
  double lastStep = -kInf;
  std::optional<double> zero, fp32Zero, drift; ///< at the last step
  size_t first = 0;                            ///< order of first appearance
};

const char *const kParamColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
                                     "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79"};

/// Gathers each parameter's errors and the seeds from the metrics JSON's
/// "gradient_comparison"; the number of comparisons.
size_t collectParamErrors(const Inputs &in, std::map<std::string, ParamError> &params,
                          std::set<std::string> &seeds) {
  const json::Array *entries = in.metrics ? in.metrics->getArray("gradient_comparison") : nullptr;
  size_t comparisons = 0;
  if (entries)
    for (const json::Value &entry : *entries) {
      const json::Object *e = entry.getAsObject();
      std::optional<double> step = number(e, "step");
      const json::Array *list = e ? e->getArray("params") : nullptr;
      if (!step || !std::isfinite(*step) || !list)
        continue;
      ++comparisons;
      if (const json::Value *seed = e->get("seed"))
        seeds.insert(scalarText(*seed));
      size_t i = 0;
      for (const json::Value &pv : *list) {
        const json::Object *p = pv.getAsObject();
        ++i;
        if (!p)
          continue;
        std::string name = text(p, "name").value_or("#" + std::to_string(i));
        auto [it, added] = params.try_emplace(name);
        ParamError &pe = it->second;
        if (added) {
          pe.name = name;
          pe.first = params.size();
        }
        std::optional<double> rel = number(p, "rel_l2");
        if (rel && std::isfinite(*rel)) {
          pe.relByStep[*step].push_back(*rel);
          if (*rel > pe.worst) {
            pe.worst = *rel;
            pe.worstStep = *step;
          }
        }
        if (std::optional<double> cosine = number(p, "cosine"); cosine && std::isfinite(*cosine))
          pe.minCosine = std::min(pe.minCosine, *cosine);
        if (*step >= pe.lastStep) {
          pe.lastStep = *step;
          pe.zero = number(p, "zero_fraction");
          pe.fp32Zero = number(p, "fp32_zero_fraction");
          pe.drift = number(p, "drift");
        }
      }
    }
  return comparisons;
}

/// The gradient-error chart from the CSV's grad_rel_l2_max column, when the
/// metrics JSON has no per-layer comparison; a note when the CSV has none either.
void csvGradErrorChart(llvm::raw_ostream &os, const Inputs &in) {
  // The CSV's per-step extremes, when the run wrote them.
  bool fromCsv = false;
  Chart c;
  c.id = "grad-error";
  c.title = "Gradient error against FP32 (the CSV's worst parameter per step)";
  c.yLabel = "max relative L2 error over parameters";
  for (const Group &g : in.groups) {
    Agg rel = decimate(aggregate(g, GradRelL2Max, false));
    if (rel.size() == 0)
      continue;
    fromCsv = true;
    Series s = seriesOf(rel, g.colour, g.label + ": max rel_l2 over parameters");
    c.series.push_back(s);
    for (size_t i = 0; i < rel.size(); ++i)
      c.dots.push_back(
          {rel.x[i], rel.mean[i], g.colour,
           g.label + " step " + num(rel.x[i], 10) + ": max rel_l2 " + num(rel.mean[i], 4), false,
           2.6});
    c.legend.push_back({g.label + ": max rel_l2 over parameters", g.colour, Glyph::Line});
  }
  if (!fromCsv) {
    os << "<div id=\"grad-error\" class=\"note\">no gradient comparison in this run (use "
          "--compare fp32 --compare-every K)</div>\n";
    return;
  }
  bool logY = false;
  os << renderChart(c, logY) << "\n<p class=\"caption\">The largest relative L2 error "
     << "(|g - g_fp32| / |g_fp32|) over the parameters at each comparison step, from the CSV's "
        "grad_rel_l2_max column; the per-layer breakdown is in the metrics JSON's "
        "\"gradient_comparison\", which was not given.</p>\n";
}

/// The table of the worst parameters (at most 20) of `ranked`.
void gradErrorTable(llvm::raw_ostream &os, const std::vector<const ParamError *> &ranked) {
  const size_t rows = std::min<size_t>(ranked.size(), 20);
  os << "<table id=\"grad-error-table\"><tr><th>parameter</th><th>max rel_l2 (step)</th>"
        "<th>min cosine</th><th>zero fraction (FP32), last step</th><th>drift, last step</th>"
        "</tr>\n";
  auto cell = [](const std::optional<double> &v) {
    return v && std::isfinite(*v) ? num(*v, 4) : std::string(kNotMeasured);
  };
  for (size_t k = 0; k < rows; ++k) {
    const ParamError &pe = *ranked[k];
    os << "<tr><td>" << esc(pe.name) << "</td><td class=\"num\">" << num(pe.worst, 4) << " ("
       << num(pe.worstStep, 10) << ")</td><td class=\"num\">"
       << (std::isfinite(pe.minCosine) ? num(pe.minCosine, 6) : std::string(kNotMeasured))
       << "</td><td class=\"num\">" << cell(pe.zero) << " (" << cell(pe.fp32Zero)
       << ")</td><td class=\"num\">" << cell(pe.drift) << "</td></tr>\n";
  }
  os << "</table>\n";
  if (ranked.size() > rows)
    os << "<p class=\"caption\">" << ranked.size() - rows
       << " more parameters, all with a smaller max rel_l2.</p>\n";
}

void gradErrorSection(llvm::raw_ostream &os, const Inputs &in) {
  os << "<h2>Gradient error against FP32, per layer</h2>\n";
  std::map<std::string, ParamError> params;
  std::set<std::string> seeds;
  size_t comparisons = collectParamErrors(in, params, seeds);
  std::vector<const ParamError *> ranked;
  for (const auto &[name, pe] : params)
    if (!pe.relByStep.empty())
      ranked.push_back(&pe);
  std::stable_sort(ranked.begin(), ranked.end(), [](const ParamError *a, const ParamError *b) {
    return a->worst != b->worst ? a->worst > b->worst : a->first < b->first;
  });

  if (ranked.empty()) {
    csvGradErrorChart(os, in);
    return;
  }

  const ParamError &worst = *ranked.front();
  Chart c;
  c.id = "grad-error";
  c.title = "Relative L2 error of each parameter's gradient against FP32";
  c.yLabel = "relative L2 error vs FP32";
  const size_t coloured = std::min<size_t>(ranked.size(), std::size(kParamColours));
  // Grey lines first, so the coloured ones are drawn over them.
  for (size_t k = ranked.size(); k-- > 0;) {
    const ParamError &pe = *ranked[k];
    Series s;
    for (const auto &[step, values] : pe.relByStep) {
      s.x.push_back(step);
      s.y.push_back(std::accumulate(values.begin(), values.end(), 0.0) / double(values.size()));
    }
    s.title = pe.name + ": rel_l2 (mean over seeds)";
    if (k < coloured) {
      s.colour = kParamColours[k];
      s.width = k == 0 ? 3 : 1.5;
      for (size_t i = 0; i < s.x.size(); ++i)
        c.dots.push_back({s.x[i], s.y[i], s.colour,
                          pe.name + ", step " + num(s.x[i], 10) + ": rel_l2 " + num(s.y[i], 4),
                          false, k == 0 ? 3.4 : 2.4});
    } else {
      s.colour = "#9a9a9a";
      s.width = 1;
      s.opacity = 0.55;
    }
    c.series.push_back(s);
  }
  for (size_t k = 0; k < coloured; ++k)
    c.legend.push_back(
        {(k == 0 ? "worst: " : "") + ranked[k]->name, kParamColours[k], Glyph::Line});
  if (ranked.size() > coloured)
    c.legend.push_back(
        {std::to_string(ranked.size() - coloured) + " more parameters", "#9a9a9a", Glyph::Line});
  c.labels.push_back({worst.worstStep, worst.worst, "worst: " + worst.name, kParamColours[0]});
  bool logY = false;
  os << renderChart(c, logY) << "\n<p class=\"caption\">";
  os << "Relative L2 error |g - g<sub>fp32</sub>| / |g<sub>fp32</sub>| of each parameter's "
        "gradient, against the FP32 run beside it on the same batch and weights, at "
     << comparisons << " comparison" << (comparisons == 1 ? "" : "s");
  if (seeds.size() > 1)
    os << " over " << seeds.size() << " seeds (lines: the mean over seeds)";
  os << ". The worst layer: <b>" << esc(worst.name) << "</b> (rel_l2 " << num(worst.worst, 4)
     << " at step " << num(worst.worstStep, 10) << ").";
  if (logY)
    os << " The y axis is logarithmic.";
  os << "</p>\n";

  gradErrorTable(os, ranked);
}

/// One part of a memory bar.
struct Segment {
  std::string name, colour;
  double value;
};

/// The parts of a memory breakdown (`m`: "memory" or "fp32_memory") and,
/// when its total exceeds their sum, the rest as "other". `sum` is their
/// sum; `absent` gets the required parts it leaves out.
std::vector<Segment> memoryParts(const json::Object *m, std::optional<double> total, double &sum,
                                 std::vector<std::string> *absent) {
  struct Part {
    const char *key, *colour;
    bool required;
  };
  static const Part kParts[] = {
      {"weights", "#0072B2", true},         {"master_weights", "#56B4E9", true},
      {"optimizer_state", "#009E73", true}, {"other_state", "#999933", false},
      {"gradients", "#E69F00", true},       {"peak_activations", "#CC79A7", true}};
  std::vector<Segment> segments;
  sum = 0;
  for (const Part &p : kParts) {
    std::optional<double> v = number(m, p.key);
    if (v && std::isfinite(*v) && *v >= 0) {
      segments.push_back({p.key, p.colour, *v});
      sum += *v;
    } else if (p.required && absent) {
      absent->push_back(p.key);
    }
  }
  if (total && *total > sum * 1.0005 && !segments.empty())
    segments.push_back({"other", "#c7c7c7", *total - sum});
  return segments;
}

void memorySection(llvm::raw_ostream &os, const Inputs &in) {
  os << "<h2>Memory</h2>\n";
  const json::Object *m = object(in.metrics, "memory");
  const json::Object *fp32Parts = object(in.metrics, "fp32_memory");
  auto nonNegative = [](std::optional<double> v) {
    return v && std::isfinite(*v) && *v >= 0 ? v : std::nullopt;
  };
  std::optional<double> total = nonNegative(number(m, "total")),
                        fp32 = nonNegative(number(m, "fp32_total")),
                        ratio = nonNegative(number(m, "ratio_to_fp32"));
  if (!fp32)
    fp32 = nonNegative(number(fp32Parts, "total"));
  std::vector<std::string> absent;
  double sum = 0, fp32Sum = 0;
  std::vector<Segment> segments = memoryParts(m, total, sum, &absent);
  std::vector<Segment> fp32Segments = memoryParts(fp32Parts, fp32, fp32Sum, nullptr);
  double runTotal = total ? *total : sum;
  if (!fp32 && fp32Sum > 0)
    fp32 = fp32Sum;
  if (!m || (runTotal <= 0 && !(fp32 && *fp32 > 0))) {
    os << missingNote("memory", "memory", in, "memory");
    return;
  }
  const std::string run = in.precision.empty() ? "this run" : "this run (" + in.precision + ")";
  // The legend: each part of this run (and of FP32's, when it is known).
  std::vector<LegendItem> legend;
  std::map<std::string, double> fp32Of;
  for (const Segment &s : fp32Segments)
    fp32Of[s.name] = s.value;
  for (const Segment &s : segments) {
    auto it = fp32Of.find(s.name);
    legend.push_back({s.name + " " + bytes(s.value) +
                          (it != fp32Of.end() ? " (FP32 " + bytes(it->second) + ")" : ""),
                      s.colour, Glyph::Square});
  }
  if (fp32 && fp32Segments.empty())
    legend.push_back({"FP32 total " + bytes(*fp32), "#8c8c8c", Glyph::Square});
  std::string legendSvg;
  llvm::raw_string_ostream legendOs(legendSvg);
  const double left = 170, right = kWidth - 110;
  double top = drawLegend(legendOs, legend, 20, 6) + 12;
  const double barH = 34, gap = 18;
  const double rowsTop = top, axisY = rowsTop + 2 * barH + gap + 8, height = axisY + 36;
  double maxBytes = std::max(runTotal, fp32 ? *fp32 : 0.0);
  if (!(maxBytes > 0))
    maxBytes = 1;
  auto X = [&](double b) { return left + b / (maxBytes * 1.02) * (right - left); };
  os << "<svg id=\"memory\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 "
     << xy(kWidth) << " " << xy(height) << "\" width=\"" << xy(kWidth) << "\" height=\""
     << xy(height) << "\" role=\"img\" aria-labelledby=\"memory-title\" font-size=\"11\">"
     << "<title id=\"memory-title\">Memory breakdown against the FP32 total</title>" << legendSvg;
  // The byte axis.
  for (double v : niceTicks(0, maxBytes * 1.02, 6)) {
    double px = X(v);
    os << "<line x1=\"" << xy(px) << "\" y1=\"" << xy(rowsTop - 4) << "\" x2=\"" << xy(px)
       << "\" y2=\"" << xy(axisY) << "\" stroke=\"#e6e6e6\"/><text x=\"" << xy(px) << "\" y=\""
       << xy(axisY + 14) << "\" text-anchor=\"middle\" fill=\"#444\">" << esc(bytes(v))
       << "</text>";
  }
  // One bar: its parts stacked (or one block of `total`), the total after it.
  auto bar = [&](double y, const std::string &label, const std::vector<Segment> &parts,
                 double barTotal, const char *blockColour, double opacity) {
    os << "<text x=\"" << xy(left - 8) << "\" y=\"" << xy(y + barH / 2 + 4)
       << "\" text-anchor=\"end\" fill=\"#222\">" << esc(label) << "</text>";
    double x = 0;
    for (const Segment &s : parts) {
      double x0 = X(x), x1 = X(x + s.value);
      double share = barTotal > 0 ? 100 * s.value / barTotal : 0;
      os << "<rect class=\"segment\" x=\"" << xy(x0) << "\" y=\"" << xy(y) << "\" width=\""
         << xy(std::max(0.0, x1 - x0)) << "\" height=\"" << xy(barH) << "\" fill=\"" << s.colour
         << "\" fill-opacity=\"" << num(opacity, 3)
         << "\" stroke=\"#fff\" stroke-width=\"1\"><title>" << esc(label) << ", " << esc(s.name)
         << ": " << esc(bytes(s.value)) << " (" << num(share, 3) << "%)</title></rect>";
      if (x1 - x0 > 64)
        os << "<text x=\"" << xy((x0 + x1) / 2) << "\" y=\"" << xy(y + barH / 2 + 4)
           << "\" text-anchor=\"middle\" fill=\"" << (opacity < 1 ? "#222" : "#fff")
           << "\" font-size=\"10.5\">" << esc(bytes(s.value)) << "</text>";
      x += s.value;
    }
    if (parts.empty() && barTotal > 0)
      os << "<rect class=\"segment\" x=\"" << xy(X(0)) << "\" y=\"" << xy(y) << "\" width=\""
         << xy(X(barTotal) - X(0)) << "\" height=\"" << xy(barH) << "\" fill=\"" << blockColour
         << "\"><title>" << esc(label) << ": " << esc(bytes(barTotal)) << "</title></rect>";
    os << "<text x=\"" << xy(X(std::max(barTotal, x)) + 6) << "\" y=\"" << xy(y + barH / 2 + 4)
       << "\" fill=\"#222\" font-weight=\"bold\">" << esc(bytes(barTotal)) << "</text>";
  };
  bar(rowsTop, run, segments, runTotal, "#0072B2", 1);
  double y = rowsTop + barH + gap;
  if (fp32) {
    bar(y, "FP32", fp32Segments, *fp32, "#8c8c8c", 0.55);
  } else {
    os << "<text x=\"" << xy(left - 8) << "\" y=\"" << xy(y + barH / 2 + 4)
       << "\" text-anchor=\"end\" fill=\"#222\">FP32</text><text x=\"" << xy(left + 6) << "\" y=\""
       << xy(y + barH / 2 + 4) << "\" fill=\"#888\" font-style=\"italic\">not measured</text>";
  }
  os << "</svg>\n<p class=\"caption\">The memory the run holds, by part (stacked), against the "
        "same training at FP32"
     << (fp32Segments.empty() ? "" : " (its parts paler)") << ".";
  if (ratio)
    os << " Ratio to FP32: <b>" << num(*ratio, 4) << "</b>.";
  else if (fp32 && *fp32 > 0)
    os << " Ratio to FP32: <b>" << num(runTotal / *fp32, 4) << "</b> (computed from the totals).";
  if (!total)
    os << " The total is the sum of the parts (\"total\" not measured).";
  if (!absent.empty()) {
    os << " Not measured:";
    for (size_t i = 0; i < absent.size(); ++i)
      os << (i ? ", " : " ") << absent[i];
    os << ".";
  }
  os << "</p>\n";
}

/// The applied-step rate of the CSVs (steps not skipped), for when the
/// metrics leave it out.
std::optional<std::pair<size_t, size_t>> appliedFromCsv(const Inputs &in) {
  size_t rows = 0, skipped = 0;
  bool any = false;
  for (const Group &g : in.groups) {
    if (!g.has[Skipped])
      continue;
    any = true;
    for (const SeedRun &s : g.seeds)
      for (double v : s.col[Skipped]) {
        ++rows;
        skipped += std::isfinite(v) && v != 0;
      }
  }
  if (!any || rows == 0)
    return std::nullopt;
  return std::make_pair(rows - skipped, rows);
}

/// `v` when it is a finite number, else nothing.
std::optional<double> finite(std::optional<double> v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

/// The table of the metrics' "ensemble": each precision's metrics over seeds.
void ensembleTable(llvm::raw_ostream &os, const json::Object *M) {
  // The ensemble over seeds.
  const json::Object *ensemble = object(M, "ensemble");
  if (!ensemble || ensemble->empty())
    return;
  os << "<h2>Ensemble over seeds</h2>\n<table id=\"ensemble\"><tr><th>precision</th>"
        "<th>metric</th><th>mean</th><th>sd</th><th>n</th><th>values</th></tr>\n";
  std::vector<std::string> precisions;
  for (const auto &kv : *ensemble)
    precisions.push_back(kv.first.str());
  std::sort(precisions.begin(), precisions.end());
  for (const std::string &p : precisions) {
    const json::Object *metrics = ensemble->getObject(p);
    if (!metrics)
      continue;
    std::vector<std::string> names;
    for (const auto &kv : *metrics)
      names.push_back(kv.first.str());
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
      const json::Object *stat = metrics->getObject(name);
      if (!stat)
        continue;
      auto mean = finite(number(stat, "mean")), sd = finite(number(stat, "sd"));
      std::string values;
      size_t count = 0;
      if (const json::Array *vs = stat->getArray("values")) {
        count = vs->size();
        for (size_t i = 0; i < vs->size() && i < 16; ++i)
          values += (i ? ", " : "") +
                    ((*vs)[i].getAsNumber() ? num(*(*vs)[i].getAsNumber(), 5) : std::string("?"));
        if (vs->size() > 16)
          values += ", &hellip;";
      }
      os << "<tr><td>" << esc(p) << "</td><td>" << esc(name) << "</td><td class=\"num\">"
         << (mean ? esc(num(*mean, 5)) : std::string(kNotMeasured)) << "</td><td class=\"num\">"
         << (sd ? esc(num(*sd, 3)) : std::string(kNotMeasured)) << "</td><td class=\"num\">"
         << (count ? std::to_string(count) : std::string(kNotMeasured)) << "</td><td>"
         << (values.empty() ? std::string(kNotMeasured) : values) << "</td></tr>\n";
    }
  }
  os << "</table>\n";
}

void metricsSection(llvm::raw_ostream &os, const Inputs &in) {
  os << "<h2>Metrics</h2>\n<table id=\"metrics\"><tr><th>metric</th><th>value</th>"
        "<th>details</th></tr>\n";
  auto row = [&](const char *id, const char *name, const std::string &value,
                 const std::string &details) {
    os << "<tr id=\"metric-" << id << "\"><th>" << name << "</th><td>" << value << "</td><td>"
       << details << "</td></tr>\n";
  };
  auto join = [](const std::vector<std::string> &parts) {
    std::string out;
    for (const std::string &p : parts)
      out += (out.empty() ? "" : "; ") + p;
    return out;
  };
  const json::Object *M = in.metrics;

  // Throughput.
  if (const json::Object *t = object(M, "throughput")) {
    auto samples = finite(number(t, "samples_per_s")), tokens = finite(number(t, "tokens_per_s")),
         fp32 = finite(number(t, "fp32_samples_per_s")), ratio = finite(number(t, "ratio_to_fp32"));
    std::optional<std::string> source = text(t, "fp32_source");
    std::string value = samples ? esc(rate(*samples)) + " samples/s" : kNotMeasured;
    if (ratio)
      value += " (" + esc(num(*ratio, 4)) + "&times; FP32)";
    row("throughput", "throughput", value,
        join({"tokens/s: " + (tokens ? esc(rate(*tokens)) : std::string(kNotMeasured)),
              "FP32: " + (fp32 ? esc(rate(*fp32)) + " samples/s" : std::string(kNotMeasured)) +
                  (source ? " (source: " + esc(*source) + ")" : ""),
              "ratio to FP32: " + (ratio ? esc(num(*ratio, 4)) : std::string(kNotMeasured))}));
  } else {
    row("throughput", "throughput", kNotMeasured, "");
  }

  // Memory.
  if (const json::Object *m = object(M, "memory")) {
    auto total = finite(number(m, "total")), fp32 = finite(number(m, "fp32_total")),
         ratio = finite(number(m, "ratio_to_fp32"));
    std::string value = ratio ? "ratio to FP32: " + esc(num(*ratio, 4)) : std::string(kNotMeasured);
    row("memory", "memory", value,
        join({"total " + (total ? esc(bytes(*total)) : std::string(kNotMeasured)),
              "FP32 total " + (fp32 ? esc(bytes(*fp32)) : std::string(kNotMeasured))}));
  } else {
    row("memory", "memory", kNotMeasured, "");
  }

  // Metric difference.
  if (const json::Object *d = object(M, "metric_difference")) {
    std::string metric = text(d, "metric").value_or("the metric");
    auto diff = finite(number(d, "difference")), df = finite(number(d, "df")),
         n = finite(number(d, "n"));
    auto pm = finite(number(d, "precision_mean")), psd = finite(number(d, "precision_sd")),
         fm = finite(number(d, "fp32_mean")), fsd = finite(number(d, "fp32_sd"));
    std::optional<std::pair<double, double>> ci;
    if (const json::Array *a = d->getArray("ci95"); a && a->size() == 2)
      if (auto lo = (*a)[0].getAsNumber(), hi = (*a)[1].getAsNumber(); lo && hi)
        ci = {*lo, *hi};
    std::optional<std::string> verdict = text(d, "verdict");
    std::string value = diff ? "difference " + esc(num(*diff, 4)) : std::string(kNotMeasured);
    value += ci ? " (95% CI " + esc(num(ci->first, 4)) + " .. " + esc(num(ci->second, 4)) + ")"
                : " (95% CI " + std::string(kNotMeasured) + ")";
    auto meanSd = [&](std::optional<double> mean, std::optional<double> sd) {
      if (!mean)
        return std::string(kNotMeasured);
      return esc(num(*mean, 5)) + (sd ? " &plusmn; " + esc(num(*sd, 3)) : "");
    };
    std::string label = in.precision.empty() ? "this run" : in.precision;
    row("difference", "metric difference", value,
        join({esc(metric) + ": " + esc(label) + " " + meanSd(pm, psd) + " vs FP32 " +
                  meanSd(fm, fsd),
              "n = " + (n ? esc(num(*n, 6)) + " per precision" : std::string(kNotMeasured)),
              "Welch df " + (df ? esc(num(*df, 3)) : std::string(kNotMeasured)),
              "verdict: <span class=\"verdict\">" + orNotMeasured(verdict) + "</span>"}));
  } else {
    row("difference", "metric difference", kNotMeasured, "");
  }

  // Applied steps.
  if (const json::Object *a = object(M, "applied_steps")) {
    auto applied = finite(number(a, "applied")), total = finite(number(a, "total")),
         rate = finite(number(a, "rate"));
    std::optional<std::string> warning = text(a, "warning");
    std::string value = applied && total ? esc(num(*applied, 12)) + " / " + esc(num(*total, 12))
                                         : std::string(kNotMeasured);
    if (rate)
      value += " (" + esc(num(100 * *rate, 4)) + "%)";
    row("applied", "applied steps", value,
        warning && !warning->empty() ? "<span class=\"warn\">" + esc(*warning) + "</span>"
                                     : std::string("no warning"));
  } else if (auto fromCsv = appliedFromCsv(in)) {
    row("applied", "applied steps",
        std::to_string(fromCsv->first) + " / " + std::to_string(fromCsv->second) + " (" +
            num(100.0 * double(fromCsv->first) / double(fromCsv->second), 4) + "%)",
        "counted from the CSVs (skipped = 0), every seed and group; the metrics do not say");
  } else {
    row("applied", "applied steps", kNotMeasured, "");
  }

  // MFU.
  if (const json::Object *u = object(M, "mfu")) {
    auto mfu = finite(number(u, "mfu")), flops = finite(number(u, "flops_per_step")),
         achieved = finite(number(u, "achieved_flops_per_s")),
         peak = finite(number(u, "peak_flops_per_s"));
    std::optional<std::string> source = text(u, "peak_source");
    std::string value = mfu ? esc(num(100 * *mfu, 3)) + "% of peak" : std::string(kNotMeasured);
    row("mfu", "MFU", value,
        join({"FLOP per step: " + (flops ? esc(si(*flops, "FLOP")) : std::string(kNotMeasured)),
              "achieved " + (achieved ? esc(si(*achieved, "FLOP/s")) : std::string(kNotMeasured)),
              "peak " + (peak ? esc(si(*peak, "FLOP/s")) : std::string(kNotMeasured)) +
                  " (peak source: " + orNotMeasured(source) + ")"}));
  } else {
    row("mfu", "MFU", kNotMeasured, "");
  }
  os << "</table>\n";
  if (!M)
    os << "<p class=\"caption\">No metrics were given: the table shows what the CSVs alone "
          "say.</p>\n";

  ensembleTable(os, M);
}

/// The dtype classes of the op graph: name, legend label, fill.
struct DTypeClass {
  const char *slug, *label, *fill;
};
const DTypeClass kDTypes[] = {{"f32", "f32", "#9ecae9"},
                              {"tf32", "tf32", "#7fd1c8"},
                              {"bf16", "bf16", "#9fd67f"},
                              {"f16", "f16", "#ffbe7d"},
                              {"f8E4M3FN", "f8E4M3FN", "#ff8f8c"},
                              {"f8E5M2", "f8E5M2", "#c9a0dc"},
                              {"other", "integer/other", "#d7d2cc"}};

/// The class of a dtype as the graph names it (MLIR's names, or the
/// precision names).
size_t dtypeClass(StringRef dtype) {
  std::string d = dtype.trim().lower();
  if (d == "f32" || d == "fp32" || d == "float32" || d == "float")
    return 0;
  if (d == "tf32")
    return 1;
  if (d == "bf16" || d == "bfloat16")
    return 2;
  if (d == "f16" || d == "fp16" || d == "float16" || d == "half")
    return 3;
  if (d == "f8e4m3fn" || d == "f8e4m3" || d == "e4m3" || d == "fp8e4m3" || d == "float8_e4m3fn" ||
      d == "fp8")
    return 4;
  if (d == "f8e5m2" || d == "e5m2" || d == "fp8e5m2" || d == "float8_e5m2")
    return 5;
  return 6;
}

/// An op of the op graph: what it is, its layer and where it is drawn.
struct OpGraphNode {
  std::string name, op, dtype;
  size_t cls = 6;
  int layer = -1;
  double key = 0, x = 0, y = 0;
  std::vector<size_t> preds, succs;
};

/// The op graph of the metrics' "graph": its ops, its edges (by index in
/// `nodes`), and what was left out.
struct OpGraph {
  std::vector<OpGraphNode> nodes;
  std::set<std::pair<size_t, size_t>> edges;
  size_t duplicates = 0, badEdges = 0;
};

/// Reads the ops and edges of `graph` (JSON) into `g`: an op whose id is
/// taken, and an edge naming no op or an op itself, are counted, not kept.
void readOpGraph(const json::Object *graph, const json::Array *nodeList, OpGraph &g) {
  std::map<int64_t, size_t> byId;
  for (size_t i = 0; i < nodeList->size(); ++i) {
    const json::Object *o = (*nodeList)[i].getAsObject();
    if (!o)
      continue;
    int64_t id = o->getInteger("id").value_or(static_cast<int64_t>(i));
    if (!byId.emplace(id, g.nodes.size()).second) {
      ++g.duplicates;
      continue;
    }
    OpGraphNode n;
    n.name = text(o, "name").value_or("");
    n.op = text(o, "op").value_or("?");
    n.dtype = text(o, "dtype").value_or("");
    n.cls = dtypeClass(n.dtype);
    g.nodes.push_back(std::move(n));
  }
  if (const json::Array *edgeList = graph->getArray("edges"))
    for (const json::Value &e : *edgeList) {
      const json::Array *pair = e.getAsArray();
      std::optional<int64_t> a, b;
      if (pair && pair->size() == 2) {
        a = (*pair)[0].getAsInteger();
        b = (*pair)[1].getAsInteger();
      }
      auto ia = a ? byId.find(*a) : byId.end(), ib = b ? byId.find(*b) : byId.end();
      if (ia == byId.end() || ib == byId.end() || ia->second == ib->second) {
        ++g.badEdges;
        continue;
      }
      if (g.edges.insert({ia->second, ib->second}).second) {
        g.nodes[ia->second].succs.push_back(ib->second);
        g.nodes[ib->second].preds.push_back(ia->second);
      }
    }
}

/// The ops of `nodes` by layer, each layer ordered to cross fewer edges;
/// sets each op's layer and key.
std::vector<std::vector<size_t>> layerOpGraph(std::vector<OpGraphNode> &nodes) {
  // Longest-path layers (Kahn's order); ops on a cycle follow their
  // placed predecessors.
  std::vector<size_t> indegree(nodes.size()), ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if ((indegree[i] = nodes[i].preds.size()) == 0) {
      nodes[i].layer = 0;
      ready.push_back(i);
    }
  for (size_t head = 0; head < ready.size(); ++head)
    for (size_t s : nodes[ready[head]].succs) {
      nodes[s].layer = std::max(nodes[s].layer, nodes[ready[head]].layer + 1);
      if (--indegree[s] == 0)
        ready.push_back(s);
    }
  for (OpGraphNode &n : nodes)
    if (indegree[&n - nodes.data()] != 0) {
      int layer = 0;
      for (size_t p : n.preds)
        layer = std::max(layer, nodes[p].layer + 1);
      n.layer = layer;
    }
  int layerCount = 0;
  for (const OpGraphNode &n : nodes)
    layerCount = std::max(layerCount, n.layer + 1);
  std::vector<std::vector<size_t>> layers(layerCount);
  for (size_t i = 0; i < nodes.size(); ++i)
    layers[nodes[i].layer].push_back(i);
  // Within a layer: by the mean position of the predecessors (fewer crossings).
  for (auto &layer : layers) {
    for (size_t i : layer) {
      OpGraphNode &n = nodes[i];
      double sum = 0;
      size_t placed = 0;
      for (size_t p : n.preds)
        if (nodes[p].layer < n.layer) {
          sum += nodes[p].key;
          ++placed;
        }
      n.key = placed ? sum / double(placed) : 1e9 + double(i);
    }
    std::stable_sort(layer.begin(), layer.end(),
                     [&](size_t a, size_t b) { return nodes[a].key < nodes[b].key; });
    for (size_t k = 0; k < layer.size(); ++k)
      nodes[layer[k]].key = double(k) / double(std::max<size_t>(1, layer.size() - 1));
  }
  return layers;
}

/// Draws the ops as boxes coloured by dtype, with their op and the end of
/// their name.
void drawOpGraphNodes(llvm::raw_ostream &os, const std::vector<OpGraphNode> &nodes, double boxW,
                      double boxH) {
  for (const OpGraphNode &n : nodes) {
    const DTypeClass &k = kDTypes[n.cls];
    StringRef op = n.op;
    op.consume_front("mp.");
    os << "<g class=\"node\" data-dtype=\"" << k.slug << "\"><title>"
       << esc((n.name.empty() ? std::string("(unnamed)") : n.name) + ": " + n.op + " (" +
              (n.dtype.empty() ? std::string("no dtype") : n.dtype) + ")")
       << "</title><rect x=\"" << xy(n.x) << "\" y=\"" << xy(n.y) << "\" width=\"" << xy(boxW)
       << "\" height=\"" << xy(boxH) << "\" rx=\"3\" fill=\"" << k.fill
       << "\" stroke=\"#555\" stroke-width=\"0.6\"/><text x=\"" << xy(n.x + 5) << "\" y=\""
       << xy(n.y + 12) << "\" fill=\"#111\">" << esc(tail(op, 16)) << "</text><text x=\""
       << xy(n.x + 5) << "\" y=\"" << xy(n.y + 23) << "\" fill=\"#333\" font-size=\"8\">"
       << esc(tail(n.name, 21)) << "</text></g>";
  }
}

void opGraphSection(llvm::raw_ostream &os, const Inputs &in) {
  os << "<h2>Op graph by dtype</h2>\n";
  const json::Object *graph = object(in.metrics, "graph");
  const json::Array *nodeList = graph ? graph->getArray("nodes") : nullptr;
  if (!nodeList || nodeList->empty()) {
    os << missingNote("op-graph", "the op graph", in, "graph");
    return;
  }
  OpGraph g;
  readOpGraph(graph, nodeList, g);
  std::vector<OpGraphNode> &nodes = g.nodes;
  const std::set<std::pair<size_t, size_t>> &edges = g.edges;
  const size_t badEdges = g.badEdges, duplicates = g.duplicates;
  const size_t edgeCount = edges.size();
  std::array<size_t, std::size(kDTypes)> counts{};
  for (const OpGraphNode &n : nodes)
    ++counts[n.cls];

  const size_t kMaxNodes = 3000;
  if (nodes.size() > kMaxNodes) {
    os << "<div id=\"op-graph\" class=\"note\">the op graph has " << nodes.size()
       << " ops, too many to draw (at most " << kMaxNodes << "); by dtype:";
    for (size_t k = 0; k < counts.size(); ++k)
      os << (k ? ", " : " ") << kDTypes[k].label << " " << counts[k];
    os << "</div>\n";
    return;
  }

  std::vector<std::vector<size_t>> layers = layerOpGraph(nodes);
  const int layerCount = static_cast<int>(layers.size());

  // Layers are columns, left to right, wrapped into bands of kColumns; a
  // layer of more than kRows ops takes several columns.
  const double boxW = 100, boxH = 28, colW = 116, rowH = 36, pad = 12;
  const size_t kRows = 12;
  const size_t kColumns = static_cast<size_t>((kWidth - 2 * pad - boxW) / colW) + 1;
  std::vector<size_t> columnRows;                             // ops per column
  std::vector<std::pair<size_t, size_t>> where(nodes.size()); // (column, row)
  for (const auto &layer : layers) {
    size_t columns = std::max<size_t>(1, (layer.size() + kRows - 1) / kRows);
    size_t perColumn = (layer.size() + columns - 1) / std::max<size_t>(1, columns);
    size_t first = columnRows.size();
    columnRows.resize(first + columns, 0);
    for (size_t k = 0; k < layer.size(); ++k) {
      size_t column = first + k / std::max<size_t>(1, perColumn);
      where[layer[k]] = {column, columnRows[column]++};
    }
  }
  size_t bands = (columnRows.size() + kColumns - 1) / kColumns;
  std::vector<double> bandTop(bands + 1, 0);
  std::vector<size_t> bandRows(bands, 1);
  for (size_t c = 0; c < columnRows.size(); ++c)
    bandRows[c / kColumns] = std::max(bandRows[c / kColumns], columnRows[c]);
  std::string legendSvg;
  llvm::raw_string_ostream legendOs(legendSvg);
  std::vector<LegendItem> legend;
  for (size_t k = 0; k < std::size(kDTypes); ++k)
    legend.push_back({std::string(kDTypes[k].label) + " (" + std::to_string(counts[k]) + ")",
                      kDTypes[k].fill, Glyph::Square});
  double top = drawLegend(legendOs, legend, pad, 6) + 14;
  bandTop[0] = top;
  for (size_t b = 0; b < bands; ++b)
    bandTop[b + 1] = bandTop[b] + double(bandRows[b]) * rowH + 26;
  const double height = bandTop[bands] + 4;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto [column, row] = where[i];
    size_t band = column / kColumns;
    // Centre a column's ops in its band.
    double slack = double(bandRows[band] - columnRows[column]) * rowH / 2;
    nodes[i].x = pad + double(column % kColumns) * colW;
    nodes[i].y = bandTop[band] + slack + double(row) * rowH;
  }

  os << "<svg id=\"op-graph\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 "
     << xy(kWidth) << " " << xy(height) << "\" width=\"" << xy(kWidth) << "\" height=\""
     << xy(height) << "\" role=\"img\" aria-labelledby=\"op-graph-title\" font-size=\"10\">"
     << "<title id=\"op-graph-title\">The model's op graph, ops coloured by dtype</title>"
     << "<defs><marker id=\"og-arrow\" viewBox=\"0 0 8 8\" refX=\"7.5\" refY=\"4\" "
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0L8 4L0 8Z\" "
        "fill=\"#777\"/></marker></defs>"
     << legendSvg;
  for (size_t b = 1; b < bands; ++b)
    os << "<line x1=\"" << xy(pad) << "\" y1=\"" << xy(bandTop[b] - 13) << "\" x2=\""
       << xy(kWidth - pad) << "\" y2=\"" << xy(bandTop[b] - 13)
       << "\" stroke=\"#ddd\" stroke-dasharray=\"2 4\"/>";
  os << "<g class=\"edges\" fill=\"none\" stroke=\"#777\" stroke-width=\"0.9\">";
  for (auto [a, b] : edges) {
    const OpGraphNode &s = nodes[a], &d = nodes[b];
    double x1 = s.x + boxW, y1 = s.y + boxH / 2, x2 = d.x, y2 = d.y + boxH / 2;
    bool sameBand = where[a].first / kColumns == where[b].first / kColumns;
    double bend = sameBand ? std::max(14.0, (x2 - x1) / 2) : 50;
    os << "<path d=\"M" << xy(x1) << " " << xy(y1) << "C" << xy(x1 + bend) << " " << xy(y1) << " "
       << xy(x2 - bend) << " " << xy(y2) << " " << xy(x2) << " " << xy(y2) << "\""
       << (sameBand ? "" : " stroke-opacity=\"0.35\" stroke-dasharray=\"3 3\"")
       << " marker-end=\"url(#og-arrow)\"/>";
  }
  os << "</g><g class=\"nodes\">";
  drawOpGraphNodes(os, nodes, boxW, boxH);
  os << "</g></svg>\n<p class=\"caption\">" << nodes.size() << " ops, " << edgeCount
     << " edges, in " << layerCount
     << " layers by the longest path from the inputs, left to right, wrapping every " << kColumns
     << " columns (dashed edges continue in a later row); each box shows the op and the end of "
        "its name (hover for the whole name and dtype).";
  if (badEdges)
    os << " Edges not drawn (naming no op, or an op itself): " << badEdges << ".";
  if (duplicates)
    os << " Ops not drawn (an id already used): " << duplicates << ".";
  os << "</p>\n";
}

/// The table of the groups: what each CSV holds and how it ended.
void runsTable(llvm::raw_ostream &os, const Inputs &in) {
  os << "<table id=\"runs\"><tr><th>group</th><th>CSV</th><th>seeds</th><th>rows</th>"
        "<th>last loss</th><th>last test loss</th><th>last test accuracy</th>"
        "<th>FP32 last test accuracy</th></tr>\n";
  // The last finite value of a column, the mean over seeds.
  auto last = [](const Group &g, Col c) -> std::string {
    double sum = 0;
    size_t n = 0;
    for (const SeedRun &s : g.seeds)
      for (size_t i = s.rows(); i-- > 0;)
        if (std::isfinite(s.col[c][i])) {
          sum += s.col[c][i];
          ++n;
          break;
        }
    if (!n)
      return kNotMeasured;
    return num(sum / double(n), 5) + (g.seeds.size() > 1 ? " (mean)" : "");
  };
  for (const Group &g : in.groups) {
    os << "<tr><td><span style=\"color:" << g.colour << "\">&#9632;</span> " << esc(g.label)
       << "</td><td>" << esc(g.path) << "</td><td>"
       << (g.seeds.size() > 1
               ? esc(std::to_string(g.seeds.size()) + ": " + g.seedList())
               : std::string(g.seeds.empty() || g.seeds[0].seed.empty() ? "1"
                                                                        : esc(g.seeds[0].seed)))
       << "</td><td class=\"num\">" << g.rows << "</td><td class=\"num\">" << last(g, Loss)
       << "</td><td class=\"num\">" << last(g, TestLoss) << "</td><td class=\"num\">"
       << last(g, TestAccuracy) << "</td><td class=\"num\">"
       << (g.has[Fp32TestAccuracy] ? last(g, Fp32TestAccuracy) : std::string("&ndash;"))
       << "</td></tr>\n";
  }
  os << "</table>\n";
}

/// The page's header: what the run was.
void header(llvm::raw_ostream &os, const Inputs &in) {
  const json::Object *M = in.metrics;
  std::optional<std::string> model = text(M, "model");
  os << "<h1>Training run" << (model ? ": " + esc(*model) : std::string()) << "</h1>\n";
  os << "<ul class=\"facts\">";
  auto fact = [&](const char *name, const std::string &value) {
    os << "<li><b>" << name << "</b> " << value << "</li>";
  };
  fact("model", orNotMeasured(model));
  fact("precision", in.precision.empty() ? kNotMeasured : esc(in.precision));
  fact("compare", in.compare.empty() ? std::string("none given") : esc(in.compare));
  fact("backend", orNotMeasured(text(M, "backend")));
  std::string seeds;
  if (const json::Array *list = M ? M->getArray("seeds") : nullptr)
    for (const json::Value &v : *list)
      seeds += (seeds.empty() ? "" : ", ") + scalarText(v);
  fact("seeds", seeds.empty() ? kNotMeasured : esc(seeds));
  auto integer = [&](const char *key) {
    std::optional<double> v = number(M, key);
    return v && std::isfinite(*v) ? esc(num(*v, 12)) : std::string(kNotMeasured);
  };
  fact("batch", integer("batch"));
  fact("steps", integer("steps"));
  if (std::optional<double> version = number(M, "mixprec_run_metrics"); version && *version > 1)
    fact("note", "metrics version " + esc(num(*version, 6)) +
                     " (this page knows version 1; parts it does not know are left out)");
  os << "</ul>\n";
  runsTable(os, in);
}

} // namespace

bool renderRunReport(const std::vector<RunCsv> &csvs, const std::string &metricsJson,
                     std::string &html, std::string &error, const std::string &metricsName) {
  if (csvs.empty()) {
    error = "no training CSV given";
    return false;
  }
  std::vector<Group> groups(csvs.size());
  for (size_t i = 0; i < csvs.size(); ++i)
    if (!parseCsv(csvs[i], groups[i], error))
      return false;
  std::optional<json::Value> document;
  const json::Object *metrics = nullptr;
  if (!metricsJson.empty()) {
    llvm::Expected<json::Value> parsed = json::parse(metricsJson);
    if (!parsed) {
      error = metricsName + ": malformed JSON: " + llvm::toString(parsed.takeError());
      return false;
    }
    document = std::move(*parsed);
    metrics = document->getAsObject();
    if (!metrics) {
      error = metricsName + ": not a JSON object (the run metrics are one object, "
                            "{\"mixprec_run_metrics\": 1, ...})";
      return false;
    }
  }
  Inputs in{groups, metrics, text(metrics, "precision").value_or(""),
            text(metrics, "compare").value_or("")};

  // Labels: the metrics' precision for a lone CSV, else the file stems
  // (whole paths where two stems are the same).
  std::map<std::string, size_t> stems;
  for (Group &g : groups)
    ++stems[llvm::sys::path::stem(g.path).str()];
  for (size_t i = 0; i < groups.size(); ++i) {
    Group &g = groups[i];
    std::string stem = llvm::sys::path::stem(g.path).str();
    if (groups.size() == 1 && !in.precision.empty())
      g.label = in.precision;
    else
      g.label = stem.empty() || stems[stem] > 1 ? g.path : stem;
    if (g.label.empty())
      g.label = "run " + std::to_string(i + 1);
    g.colour = kGroupColours[i % std::size(kGroupColours)];
  }

  std::string title = "mixprec training run";
  if (std::optional<std::string> model = text(metrics, "model"))
    title += ": " + *model;
  if (!in.precision.empty())
    title += " (" + in.precision + ")";
  html.clear();
  llvm::raw_string_ostream os(html);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
     << "<title>" << esc(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  header(os, in);
  lossSection(os, in);
  lossScaleSection(os, in);
  gradNormSection(os, in);
  gradErrorSection(os, in);
  memorySection(os, in);
  metricsSection(os, in);
  opGraphSection(os, in);
  os << "<footer>Made by mixprec report-run from";
  for (const Group &g : groups)
    os << " " << esc(g.path);
  if (metrics)
    os << " and " << esc(metricsName);
  os << ". One self-contained page: no script, no other file.</footer>\n</body>\n</html>\n";
  return true;
}

} // namespace mixprec::compiler
