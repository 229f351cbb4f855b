// middle.h — internal to synth/: the middle phase of strategy `normal` on compact types.
//
// The middle of a valley (docs/synthesis.md, "The middle") is SearchPlan restricted to
// all_to_all and collective_permute between two types X and Y of the same local size and
// partial axes. MiddleSearch is that search, with the same result, statistics and work
// accounting, run on types stored as small arrays of mesh-axis indices instead of DistTypes
// (vectors of strings): a state is one 64-bit key, edges allocate nothing, and a Collective
// and DistType are built only for the steps of the returned path.
//
//   internal::MiddleCache cache;            // one per Synthesize call (both passes)
//   SearchOptions options = ...;            // only all_to_all and permutes allowed
//   absl::StatusOr<std::vector<Step>> middle =
//       internal::MiddleSearch(mesh, x, y, options, cache, &stats);
//
// Equality with SearchPlan is by construction (the same edges in the same order, the same
// costs in the same arithmetic, the same queue order and tie-breaks, the same work charges at
// the same points) and checked by tests/middle_test.cc, which runs both on random middles.
// Types it cannot encode (more than 15 mesh axes, rank above 8, more than 16 axis slots
// plus dimensions) go to SearchPlan itself.
#ifndef RESHARD_SYNTH_MIDDLE_H_
#define RESHARD_SYNTH_MIDDLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "synth/search.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard::internal {

// Permute classes and moved-device counts shared by the middle searches of one call, the
// compact counterpart of PermuteClassCache (same semantics: the work charged does not depend
// on it). Only for middles on the same mesh, element type and global shape.
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

// What MiddleSearch knows of the path it returns: its total bytes received (the cost the
// search minimised, equal to TotalBytes of the steps) and, in time mode, each step's modeled
// µs as the search priced it (equal to the strategies' StepUs). `known` is false when the
// middle was handed to SearchPlan (then the caller prices the steps).
struct MiddlePath {
  bool known = false;
  int64_t bytes = 0;
  std::vector<double> step_us;
};

// SearchPlan(mesh, from, to, options, stats) for options that allow only all_to_all and
// collective_permute, with options.fill_permute_pairs false and options.class_cache unused
// (`cache` plays its role). `from` and `to` are valid on `mesh` with the same element type,
// global shape, local size and partial axes (the ends of a valley's middle). Same result,
// statuses and statistics as SearchPlan.
absl::StatusOr<std::vector<Step>> MiddleSearch(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const SearchOptions& options,
                                               MiddleCache& cache, SearchStats* stats = nullptr,
                                               MiddlePath* path = nullptr);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_MIDDLE_H_
