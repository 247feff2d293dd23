//===- Stats.h - the statistics of seed ensembles ---------------*- C++ -*-===//
//
// What `mixprec train --seeds N` reports of N runs per precision: the mean
// and sample standard deviation of a final metric, and the difference of two
// precisions' means with Welch's 95% interval (unequal variances, the
// Welch-Satterthwaite degrees of freedom, Student's t quantile). One run's
// accuracy moves by points with the summation order alone, so a lower
// precision is judged by the interval, never by one run.
//
// No LLVM (the runtime-only build compiles this file).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_TRAIN_STATS_H
#define MIXPREC_RUNTIME_TRAIN_STATS_H

#include <string>
#include <vector>

namespace mixprec::trainer {

/// Mean and sample standard deviation (n - 1; 0 for one value) of the
/// finite values; `count` of them.
struct Summary {
  double mean = 0, sd = 0;
  int count = 0;
};
Summary summarize(const std::vector<double> &values);

/// The regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1].
double incompleteBeta(double a, double b, double x);

/// Student's t distribution with `df` > 0 degrees of freedom (not only
/// integers): P(T <= t), and the t with P(T <= t) = p, p in (0, 1).
double studentTCdf(double t, double df);
double studentTQuantile(double p, double df);

/// The difference of means `a - b` with a two-sided `level` interval
/// (Welch). With fewer than 2 values on a side, or no spread on either, the
/// interval is the difference itself and df is 0.
struct Difference {
  double difference = 0, low = 0, high = 0, halfWidth = 0, df = 0;
  bool valid = false; ///< both sides have at least 2 finite values
};
Difference welch(const Summary &a, const Summary &b, double level = 0.95);

/// The paired difference a[i] - b[i] (runs that share their data order and
/// initial weights: the --compare run beside each seed's): the mean
/// difference with Student's `level` interval on n - 1 degrees of freedom.
/// Pairs with a non-finite side are left out; fewer than 2 pairs: invalid.
Difference paired(const std::vector<double> &a, const std::vector<double> &b,
                  double level = 0.95);

/// The verdict on a difference `lower - fp32` where higher is better
/// (accuracy; pass -difference for a loss): "no difference detected at this
/// N", "lower precision is worse by X +- Y UNIT" or "... better by ...".
/// `scale` multiplies the numbers (100: points), `unit` follows them.
std::string verdict(const Difference &d, bool higherIsBetter, double scale,
                    const std::string &unit);

} // namespace mixprec::trainer

#endif // MIXPREC_RUNTIME_TRAIN_STATS_H
