//===- StatsTest.cpp - the statistics of seed ensembles --------------------===//
//
// Student's t against closed forms (1, 2 and 4 degrees of freedom), the
// published 97.5% quantiles, the normal limit, and Welch's interval against
// one worked by hand; the verdict's three outcomes.
//
//===----------------------------------------------------------------------===//
#include "train/Stats.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mixprec::trainer;

namespace {

double cdf1(double t) { return 0.5 + std::atan(t) / M_PI; }
double cdf2(double t) { return 0.5 + t / (2 * std::sqrt(2 + t * t)); }
double cdf4(double t) {
  double q = 1 + t * t / 4;
  return 0.5 + 0.375 * t / std::sqrt(q) * (1 - t * t / (12 * q));
}

TEST(Stats, TCdfClosedForms) {
  for (double t = -30; t <= 30; t += 0.37) {
    EXPECT_NEAR(studentTCdf(t, 1), cdf1(t), 1e-12) << t;
    EXPECT_NEAR(studentTCdf(t, 2), cdf2(t), 1e-12) << t;
    EXPECT_NEAR(studentTCdf(t, 4), cdf4(t), 1e-12) << t;
  }
  EXPECT_EQ(studentTCdf(INFINITY, 3), 1);
  EXPECT_EQ(studentTCdf(-INFINITY, 3), 0);
  EXPECT_TRUE(std::isnan(studentTCdf(NAN, 3)));
  EXPECT_TRUE(std::isnan(studentTCdf(1, 0)));
}

TEST(Stats, TQuantilePublished) {
  // Two-sided 95% critical values (t tables, e.g. NIST's handbook).
  const std::pair<double, double> rows[] = {{1, 12.7062047362}, {2, 4.3026527297},
                                            {4, 2.7764451052},  {8, 2.3060041350},
                                            {30, 2.0422724563}};
  for (auto [df, t] : rows)
    EXPECT_NEAR(studentTQuantile(0.975, df), t, 1e-8 * t) << df;
  EXPECT_NEAR(studentTQuantile(0.975, 1e9), 1.959963985, 1e-6);
  EXPECT_NEAR(studentTQuantile(0.025, 8), -2.3060041350, 1e-8);
  EXPECT_EQ(studentTQuantile(0.5, 3.3), 0);
  // Non-integer degrees of freedom: the quantile inverts the CDF and lies
  // between its integer neighbours'.
  for (double df : {1.5, 5.88, 7.4, 12.25}) {
    double t = studentTQuantile(0.975, df);
    EXPECT_NEAR(studentTCdf(t, df), 0.975, 1e-12) << df;
    EXPECT_LT(t, studentTQuantile(0.975, std::floor(df)));
    EXPECT_GT(t, studentTQuantile(0.975, std::ceil(df)));
  }
  EXPECT_TRUE(std::isnan(studentTQuantile(0, 3)));
  EXPECT_TRUE(std::isnan(studentTQuantile(1, 3)));
}

TEST(Stats, Summary) {
  Summary s = summarize({1, 2, 3, 4, 5, NAN});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.sd, std::sqrt(2.5), 1e-15);
  EXPECT_EQ(summarize({7}).sd, 0);
  EXPECT_EQ(summarize({}).count, 0);
}

TEST(Stats, WelchByHand) {
  // a: mean 3, var 2.5 (n 5); b: mean 6, var 10 (n 5). Var of the
  // difference 0.5 + 2 = 2.5; df = 2.5^2 / (0.5^2/4 + 2^2/4) = 6.25/1.0625.
  Summary a = summarize({1, 2, 3, 4, 5}), b = summarize({2, 4, 6, 8, 10});
  Difference d = welch(a, b);
  ASSERT_TRUE(d.valid);
  EXPECT_NEAR(d.df, 6.25 / 1.0625, 1e-12);
  EXPECT_DOUBLE_EQ(d.difference, -3);
  double half = studentTQuantile(0.975, d.df) * std::sqrt(2.5);
  EXPECT_NEAR(d.halfWidth, half, 1e-12);
  EXPECT_NEAR(d.low, -3 - half, 1e-12);
  EXPECT_NEAR(d.high, -3 + half, 1e-12);
  // Equal variances and sizes: df = 2n - 2, as the pooled test's.
  Difference e = welch(summarize({1, 2, 3}), summarize({2, 3, 4}));
  EXPECT_NEAR(e.df, 4, 1e-12);
  EXPECT_FALSE(welch(summarize({1}), summarize({2, 3})).valid);
}

TEST(Stats, PairedByHand) {
  // Differences 1, 2, 3, 4 (a NaN pair left out): mean 2.5, sd sqrt(5/3),
  // df 3.
  Difference d = paired({2, 4, 6, 8, NAN}, {1, 2, 3, 4, 5});
  ASSERT_TRUE(d.valid);
  EXPECT_DOUBLE_EQ(d.difference, 2.5);
  EXPECT_EQ(d.df, 3);
  EXPECT_NEAR(d.halfWidth, studentTQuantile(0.975, 3) * std::sqrt(5.0 / 3) / 2, 1e-12);
  EXPECT_FALSE(paired({1}, {2}).valid);
}

TEST(Stats, Verdicts) {
  Difference d;
  d.valid = true;
  d.difference = -0.03, d.halfWidth = 0.01, d.low = -0.04, d.high = -0.02;
  EXPECT_EQ(verdict(d, true, 100, " points"), "lower precision is worse by 3 +- 1 points");
  EXPECT_EQ(verdict(d, false, 1, ""), "lower precision is better by 0.03 +- 0.01");
  d.low = -0.04, d.high = 0.01;
  EXPECT_EQ(verdict(d, true, 100, " points").rfind("no difference detected at this N", 0), 0u);
}

} // namespace
