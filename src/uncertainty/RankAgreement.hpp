#pragma once
// How well a predicted uncertainty ranks frames by their actual error: Spearman's rank correlation, and the
// share of the worst frames that the highest predictions catch (what active learning picks).
#include <vector>

namespace deepkf {

// Ranks 1 .. n of the values, ties sharing the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double>& values);

// Spearman's rho: the Pearson correlation of the ranks of x and y (equal lengths, pairs with a NaN left
// out). NaN with fewer than 2 pairs or when either side has a single rank.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

// Of the ceil(fraction n) frames with the largest `actual`, the share also among the ceil(fraction n) frames
// with the largest `predicted` (pairs with a NaN left out; ties broken by position). NaN without pairs.
double top_fraction_caught(const std::vector<double>& predicted, const std::vector<double>& actual,
                           double fraction);

}  // namespace deepkf
