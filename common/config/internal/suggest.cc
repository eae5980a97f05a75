#include "common/config/internal/suggest.h"

#include <algorithm>

namespace cairn::config_internal {
namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transposition).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string Suggest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    const bool close = d <= std::max<size_t>(2, c.size() / 3);
    const bool contains = word.size() >= 3 && c.size() >= 3 &&
                          (word.find(c) != std::string::npos || c.find(word) != std::string::npos);
    if ((close || contains) && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace cairn::config_internal
