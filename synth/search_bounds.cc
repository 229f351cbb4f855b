// search_bounds.cc — see search_bounds.h.

#include "synth/search_bounds.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace reshard::internal {

int64_t PendingBytesBound(int64_t bytes_total, int64_t pending, __int128 unit) {
  if (pending <= 2) return bytes_total;
  const __int128 total = static_cast<__int128>(pending - 2) * unit + bytes_total;
  return total > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                     : static_cast<int64_t>(total);
}

__int128 PendingUnit(const Mesh& mesh, const DistType& to) {
  return static_cast<__int128>(GlobalElements(to)) * NumSummands(mesh, to) *
         ElementBytes(to.element_type);
}

double TimeBoundUs(const AxisCost& fastest, int64_t worst_elements, int64_t element_bytes,
                   int64_t bytes_bound, int64_t devices, int64_t pieces,
                   double crossing_alpha_us, double slice_transfer_us) {
  if (worst_elements == 0) return 0;
  const double worst = static_cast<double>(worst_elements * element_bytes);
  const double average = static_cast<double>(bytes_bound) / static_cast<double>(devices);
  const int rounds = std::max(1, LatencyRounds(pieces));
  const double latency = crossing_alpha_us > fastest.alpha_us
                             ? crossing_alpha_us + fastest.alpha_us * (rounds - 1)
                             : fastest.alpha_us * rounds;
  return latency + std::max(fastest.TransferUs(std::max(worst, average)), slice_transfer_us);
}

double TimeBoundOf(const Mesh& mesh, const CostModel& model, const DistType& from,
                   const DistType& to, const LowerBounds& bounds, int64_t bytes_bound,
                   double slice_transfer_us) {
  return TimeBoundUs(model.Fastest(mesh), bounds.max_lacking_elements,
                     ElementBytes(to.element_type), bytes_bound, mesh.num_devices(), bounds.pieces,
                     CrossingAlphaUs(mesh, model, from, to), slice_transfer_us);
}

int64_t SliceLackingElements(const SliceDim* dims, int rank, const int64_t* coords,
                             int64_t* work) {
  __int128 needed = 1, both = 1;
  for (int i = 0; i < rank; ++i) {
    const SliceDim& dim = dims[i];
    needed *= dim.size / FixedProduct(*dim.target);
    both *= CommonIndices(dim.size, *dim.type, *dim.target, coords, work);
  }
  const __int128 lacking = needed - both;
  return lacking > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                       : static_cast<int64_t>(lacking);
}

int64_t MoreLackingSlice(const SliceDim* dims, int rank, const int64_t* sizes, int count,
                         int64_t* work) {
  int64_t coords[kMaxSliceDigits] = {};
  const int64_t zeros = SliceLackingElements(dims, rank, coords, work);
  // What a slice lacks depends on its coordinates only in dimensions where both types have
  // axes of S (elsewhere SliceLackingElements counts sizes).
  bool varies = false;
  for (int i = 0; i < rank && !varies; ++i) {
    varies = FixedProduct(*dims[i].type) > 1 && FixedProduct(*dims[i].target) > 1;
  }
  if (!varies) return zeros;
  for (int j = 0; j < count; ++j) coords[j] = sizes[j] - 1;
  return std::max(zeros, SliceLackingElements(dims, rank, coords, work));
}

std::vector<SliceSet> SliceSets(const std::vector<double>& gbps,
                                const std::vector<int64_t>& sizes,
                                const std::vector<bool>& eligible, double fastest_gbps,
                                int64_t devices, int64_t layers) {
  const int k = static_cast<int>(gbps.size());
  std::vector<SliceSet> sets;
  for (int t = 0; t < k; ++t) {
    const double g = gbps[t];
    if (!eligible[t] || g >= fastest_gbps) continue;
    bool seen = false;  // Each bandwidth once, at its first axis.
    for (int u = 0; u < t && !seen; ++u) seen = eligible[u] && gbps[u] == g;
    if (seen) continue;
    SliceSet& set = sets.emplace_back();
    set.gbps = g;
    set.slot.assign(k, -1);
    int64_t slice_axes = 1;
    for (int a = 0; a < k; ++a) {
      if (!eligible[a] || gbps[a] > g) continue;
      set.slot[a] = static_cast<int>(set.sizes.size());
      set.sizes.push_back(sizes[a]);
      slice_axes *= sizes[a];
    }
    set.devices = devices / (slice_axes * layers);
  }
  return sets;
}

double SliceTransferUs(double gbps, int64_t lacking, int64_t element_bytes,
                       int64_t slice_devices) {
  return AxisCost{0, gbps}.TransferUs(static_cast<double>(lacking) *
                                      static_cast<double>(element_bytes) /
                                      static_cast<double>(slice_devices));
}

bool CanBeatIncumbent(const SearchOptions& options, double us, int64_t bytes) {
  if (!options.incumbent) return true;
  if (options.cost_model == nullptr) return bytes < options.incumbent->bytes;
  const double tolerance = 1e-9 * std::max(1.0, options.incumbent->us);
  if (us < options.incumbent->us - tolerance) return true;
  return us <= options.incumbent->us + tolerance && bytes < options.incumbent->bytes;
}

bool WithinSearchBounds(const SearchOptions& options, double us, int64_t cost, double rest_us,
                        int64_t bytes_floor) {
  if (bytes_floor > options.max_cost - cost) return false;
  if (options.cost_model == nullptr) return true;
  const double total_us = us + rest_us;
  if (total_us > options.max_cost_us) return false;
  const int64_t bytes = bytes_floor > std::numeric_limits<int64_t>::max() - cost
                            ? std::numeric_limits<int64_t>::max()
                            : cost + bytes_floor;
  return CanBeatIncumbent(options, total_us, bytes);
}

bool SourceOutOfBounds(const SearchOptions& options, const RestBound& source) {
  return !WithinSearchBounds(options, 0, 0, source.us, source.bytes_floor);
}

const char* SourceOutOfBoundsReason(const SearchOptions& options) {
  return options.incumbent ? " is cheaper than the one held"
                           : " fits the cost bound (the source's lower bound is above it)";
}

std::string FailureText(const SearchOptions& options, const DistType& type, const char* unnamed) {
  return options.describe_failures ? ToString(type) : unnamed;
}

bool PermuteClassOutOfBounds(const SearchOptions& options, const AxisCost& fastest,
                             MiddleGrowthBound* growth, int64_t pieces, double path_us,
                             int64_t path_bytes, int64_t in_bytes) {
  if (in_bytes > options.max_cost - path_bytes) return true;
  if (options.cost_model == nullptr) return false;
  double rest = 0;  // The heuristic's least value over the class's members.
  if (options.use_heuristic && pieces > 1) {
    rest = fastest.alpha_us * LatencyRounds(pieces);
    if (growth != nullptr) rest = std::max(rest, (*growth)(pieces));
  }
  // In the order the search adds them: (path + edge) + heuristic.
  return path_us + (fastest.alpha_us + fastest.TransferUs(static_cast<double>(in_bytes))) + rest >
         options.max_cost_us;
}

}  // namespace reshard::internal
