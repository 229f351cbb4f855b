// compact_search.h — internal to synth/: SearchPlan on compact types.
//
// SearchPlan (synth/search.h) explores distributed types. Stored as DistTypes (vectors of axis
// names) every edge copies strings and every lookup hashes them, which dominated `optimal` and
// `normal`'s middle searches. CompactSearch is the same search on types stored as small arrays
// of mesh-axis indices with a bit mask of partial axes: a state is a 64-bit key plus the mask,
// edges allocate nothing, and a Collective and DistType are built only for the steps of the
// returned path. SearchPlan runs it whenever the types can be encoded.
//
//   internal::MiddleCache cache;            // one per Synthesize call (both passes of normal)
//   SearchOptions options = ...;            // only all_to_all and permutes allowed
//   absl::StatusOr<std::vector<Step>> middle =
//       internal::MiddleSearch(mesh, x, y, options, cache, &stats);
//
// Equality with the DistType search (internal::SearchPlanOnDistTypes) is by construction (the
// same edges in the same order, the same costs in the same arithmetic, the same queue order and
// tie-breaks, the same work charges at the same points) and checked by
// tests/compact_search_test.cc on random searches under every option set the strategies use.
// Types it cannot encode (more than 15 mesh axes, rank 0 or above 8, more than 17 axis slots
// plus dimensions, sub-axis names) stay with the DistType search.
#ifndef RESHARD_SYNTH_COMPACT_SEARCH_H_
#define RESHARD_SYNTH_COMPACT_SEARCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "synth/search.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard::internal {

// Permute classes, moved-device counts and heuristic walks shared by the searches of one
// caller (e.g. the middle searches of one Synthesize call, which meet the same classes and
// states again per candidate), the compact counterpart of PermuteClassCache: the work charged
// does not depend on it. Only for searches on the same mesh, element type and global shape.
class MiddleCache {
 public:
  MiddleCache();
  ~MiddleCache();
  MiddleCache(const MiddleCache&) = delete;
  MiddleCache& operator=(const MiddleCache&) = delete;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// What the search knows of the path it returns: its total bytes received (the cost the
// search minimised, equal to TotalBytes of the steps) and, in time mode, each step's modeled
// µs as the search priced it (equal to the strategies' StepUs). `known` is false when the
// search was handed to the DistType search (then the caller prices the steps).
struct MiddlePath {
  bool known = false;
  int64_t bytes = 0;
  std::vector<double> step_us;
};

// SearchPlan(mesh, from, to, options, stats) on compact types, for valid, reshardable `from`
// and `to` (CheckReshardable) and options without a class_cache (`cache` plays its role;
// null: a cache for this search only). nullopt when the types cannot be encoded. Same result,
// statuses and statistics as the DistType search.
std::optional<absl::StatusOr<std::vector<Step>>> CompactSearch(
    const Mesh& mesh, const DistType& from, const DistType& to, const SearchOptions& options,
    MiddleCache* cache, SearchStats* stats = nullptr, MiddlePath* path = nullptr);

// The middle of a valley (docs/synthesis.md, "The middle"): SearchPlan(mesh, from, to, options,
// stats) for options that allow only all_to_all and collective_permute, with
// options.fill_permute_pairs false and options.class_cache unused (`cache` plays its role).
// `from` and `to` are valid on `mesh` with the same element type, global shape, local size and
// partial axes. Same result, statuses and statistics as SearchPlan.
absl::StatusOr<std::vector<Step>> MiddleSearch(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const SearchOptions& options,
                                               MiddleCache& cache, SearchStats* stats = nullptr,
                                               MiddlePath* path = nullptr);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_COMPACT_SEARCH_H_
