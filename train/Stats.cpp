//===- Stats.cpp - the statistics of seed ensembles ------------------------===//
#include "train/Stats.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace mixprec::trainer {

Summary summarize(const std::vector<double> &values) {
  Summary s;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v))
      sum += v, ++s.count;
  if (!s.count)
    return s.mean = NAN, s.sd = NAN, s;
  s.mean = sum / s.count;
  double squares = 0;
  for (double v : values)
    if (std::isfinite(v))
      squares += (v - s.mean) * (v - s.mean);
  s.sd = s.count > 1 ? std::sqrt(squares / (s.count - 1)) : 0;
  return s;
}

namespace {

/// The continued fraction of I_x(a, b) (modified Lentz), for x < (a+1)/(a+b+2).
double betaFraction(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-15;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny)
    d = tiny;
  d = 1 / d;
  double h = d;
  // One Lentz update by the fraction's coefficient `aa`: the factor of h.
  auto update = [&](double aa) {
    d = 1 + aa * d;
    if (std::fabs(d) < tiny)
      d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny)
      c = tiny;
    d = 1 / d;
    return d * c;
  };
  for (int m = 1; m <= 10000; ++m) {
    int m2 = 2 * m;
    h *= update(m * (b - m) * x / ((qam + m2) * (a + m2)));
    double delta = update(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
    h *= delta;
    if (std::fabs(delta - 1) < eps)
      break;
  }
  return h;
}

} // namespace

double incompleteBeta(double a, double b, double x) {
  if (!(x > 0))
    return 0;
  if (!(x < 1))
    return 1;
  double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                          a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2))
    return front * betaFraction(a, b, x) / a;
  return 1 - front * betaFraction(b, a, 1 - x) / b;
}

double studentTCdf(double t, double df) {
  if (std::isnan(t) || !(df > 0))
    return NAN;
  if (std::isinf(t))
    return t > 0 ? 1 : 0;
  double tail = 0.5 * incompleteBeta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

double studentTQuantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0))
    return NAN;
  if (p == 0.5)
    return 0;
  // Bisection on the CDF (monotone): 200 halvings reach double precision
  // from any bracket; the bracket grows until it holds the quantile.
  double lo = -1, hi = 1;
  while (studentTCdf(lo, df) > p && lo > -1e300)
    lo *= 2;
  while (studentTCdf(hi, df) < p && hi < 1e300)
    hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * std::fmax(1, std::fabs(hi)); ++i) {
    double mid = 0.5 * (lo + hi);
    (studentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Difference welch(const Summary &a, const Summary &b, double level) {
  Difference d;
  d.difference = a.mean - b.mean;
  d.low = d.high = d.difference;
  if (a.count < 2 || b.count < 2)
    return d;
  d.valid = true;
  double va = a.sd * a.sd / a.count, vb = b.sd * b.sd / b.count, se2 = va + vb;
  if (!(se2 > 0))
    return d.df = std::numeric_limits<double>::infinity(), d;
  d.df = se2 * se2 / (va * va / (a.count - 1) + vb * vb / (b.count - 1));
  d.halfWidth = studentTQuantile(0.5 + level / 2, d.df) * std::sqrt(se2);
  d.low = d.difference - d.halfWidth;
  d.high = d.difference + d.halfWidth;
  return d;
}

Difference paired(const std::vector<double> &a, const std::vector<double> &b, double level) {
  std::vector<double> differences;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::isfinite(a[i]) && std::isfinite(b[i]))
      differences.push_back(a[i] - b[i]);
  Summary s = summarize(differences);
  Difference d;
  d.difference = d.low = d.high = s.count ? s.mean : NAN;
  if (s.count < 2)
    return d;
  d.valid = true;
  d.df = s.count - 1;
  d.halfWidth = studentTQuantile(0.5 + level / 2, d.df) * s.sd / std::sqrt(double(s.count));
  d.low = d.difference - d.halfWidth;
  d.high = d.difference + d.halfWidth;
  return d;
}

std::string verdict(const Difference &d, bool higherIsBetter, double scale,
                    const std::string &unit) {
  char text[256];
  double worse = higherIsBetter ? -d.difference : d.difference;
  bool surelyWorse = higherIsBetter ? d.high < 0 : d.low > 0;
  bool surelyBetter = higherIsBetter ? d.low > 0 : d.high < 0;
  if (!d.valid) {
    std::snprintf(text, sizeof text,
                  "no interval with fewer than 2 runs per precision (lower - fp32: %.3g%s)",
                  d.difference * scale, unit.c_str());
    return text;
  }
  if (surelyWorse)
    std::snprintf(text, sizeof text, "lower precision is worse by %.3g +- %.3g%s", worse * scale,
                  d.halfWidth * scale, unit.c_str());
  else if (surelyBetter)
    std::snprintf(text, sizeof text, "lower precision is better by %.3g +- %.3g%s",
                  -worse * scale, d.halfWidth * scale, unit.c_str());
  else
    std::snprintf(text, sizeof text,
                  "no difference detected at this N (lower - fp32: %.3g +- %.3g%s)", d.difference * scale,
                  d.halfWidth * scale, unit.c_str());
  return text;
}

} // namespace mixprec::trainer
