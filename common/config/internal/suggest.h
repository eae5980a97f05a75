// "Did you mean ...?" for misspelt keys and values.
//
// Thread-safe (pure function).
#ifndef CAIRN_COMMON_CONFIG_INTERNAL_SUGGEST_H_
#define CAIRN_COMMON_CONFIG_INTERNAL_SUGGEST_H_

#include <string>
#include <vector>

namespace cairn::config_internal {

// The candidate closest to `word` by optimal-string-alignment distance
// (Levenshtein distance plus swaps of adjacent characters; Damerau 1964),
// when within max(2, |candidate| / 3) edits or when one of the two (3+
// characters) contains the other, as `num_servers` contains `servers`; else "".
std::string Suggest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace cairn::config_internal

#endif  // CAIRN_COMMON_CONFIG_INTERNAL_SUGGEST_H_
