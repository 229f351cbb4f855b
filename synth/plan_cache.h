// plan_cache.h — Synthesize with memory: a bounded, thread-safe cache of results by problem.
//
//   reshard::PlanCache cache;  // PlanCache::Limits{}: 4 096 results, 2^22 units of plan size
//   absl::StatusOr<std::shared_ptr<const reshard::Plan>> plan =
//       cache.Synthesize(mesh, from, to, options);  // as reshard::Synthesize, remembered
//
// Partitioners ask for the same resharding many times: every layer of a model repeats its
// shardings, and a sharding search prices the same candidate moves again and again. A cold
// Synthesize call costs tens to hundreds of microseconds (docs/benchmarks.md, Synthesis
// latency); a repeated one here costs a lookup (BM_PlanCacheHit). Synthesize is deterministic
// and its budgets count work, not time, so a remembered result is exactly what a new call
// would return: the same plan, or the same error status.
//
// The key is everything Synthesize reads, field by field: the mesh, both types as given (two
// types that are equal but list their partial axes in another order are different keys, as
// their plans print their source differently), and every field of SynthesisOptions, cost
// model values bit for bit.
//
// Bounds: at most `max_results` results and `max_weight` units of plan size (PlanWeight: a
// unit per step, permute pair and all_to_all_v block, the parts of a plan whose size grows
// with the mesh). Past either bound the least recently used results go. A plan heavier than
// max_weight alone is returned but not kept.
//
// Thread safety: every method may be called from several threads at once. A miss synthesizes
// outside the lock, so threads missing on one key at once each synthesize it (each counts a
// miss) and the first result stays.
#ifndef RESHARD_SYNTH_PLAN_CACHE_H_
#define RESHARD_SYNTH_PLAN_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "synth/synthesize.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// A plan's size for PlanCache::Limits::max_weight: 1 per step, plus its permute pairs and
// all_to_all_v blocks.
int64_t PlanWeight(const Plan& plan);

class PlanCache {
 public:
  struct Limits {
    int64_t max_results = 4096;
    int64_t max_weight = int64_t{1} << 22;
  };
  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t evictions = 0;  // Results dropped for the bounds (not Clear).
    int64_t results = 0;    // Held now, errors included.
    int64_t weight = 0;     // Held now (an error weighs 1).
  };

  using Result = absl::StatusOr<std::shared_ptr<const Plan>>;

  PlanCache();
  // Limits below 1 are treated as 1.
  explicit PlanCache(Limits limits);

  // reshard::Synthesize(mesh, from, to, options), from memory when an earlier call had the
  // same key (see above). The plan is shared and immutable; copy it to change it.
  Result Synthesize(const Mesh& mesh, const DistType& from, const DistType& to,
                    const SynthesisOptions& options = {});

  Stats stats() const;
  // Drops every result (the counters of hits, misses and evictions stay).
  void Clear();

 private:
  struct Entry {
    std::string key;
    Result result;
    int64_t weight = 0;
  };
  using Order = std::list<Entry>;  // Most recently used first.

  void EvictOverLimits();  // Requires mutex_.

  const Limits limits_;
  mutable std::mutex mutex_;
  Order order_;
  // Keys view the entries' own (list nodes do not move), so each key is held once.
  std::unordered_map<std::string_view, Order::iterator> index_;
  Stats stats_;
};

}  // namespace reshard

#endif  // RESHARD_SYNTH_PLAN_CACHE_H_
