// search_bounds.cc — see search_bounds.h.

#include "synth/search_bounds.h"

#include <algorithm>
#include <cstdint>
#include <limits>

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

namespace {

// Indices e in [0, n) with floor(e / v) mod k == c and floor(e / w) mod k == c, for strides
// v < w with v·k and w·k dividing n: the digit under w is c on the intervals [w·(c + j·k),
// w·(c + j·k) + w), and on each the digit under v counts in closed form.
int64_t BothDigits(int64_t n, int64_t k, int64_t c, int64_t v, int64_t w, int64_t* work) {
  const int64_t period = v * k;
  auto below = [&](int64_t t) {  // Indices under t whose digit under v is c.
    return t / period * v + std::clamp(t % period - c * v, int64_t{0}, v);
  };
  const int64_t intervals = n / (w * k);
  *work += intervals;
  int64_t count = 0;
  for (int64_t j = 0; j < intervals; ++j) {
    const int64_t start = w * (c + j * k);
    count += below(start + w) - below(start);
  }
  return count;
}

}  // namespace

int64_t SliceLackingElements(const SliceDim* dims, int rank, int64_t k, int64_t* work) {
  // The coordinate matters only where a dimension has a in both types at different strides.
  bool per_coordinate = false;
  for (int i = 0; i < rank; ++i) {
    per_coordinate |= dims[i].stride != 0 && dims[i].stride_to != 0 &&
                      dims[i].stride != dims[i].stride_to;
  }
  __int128 most = 0;
  for (int64_t c = 0; c < (per_coordinate ? k : 1); ++c) {
    __int128 needed = 1, both = 1;
    for (int i = 0; i < rank; ++i) {
      const SliceDim& d = dims[i];
      needed *= d.stride_to != 0 ? d.size / k : d.size;
      if (d.stride == 0 && d.stride_to == 0) {
        both *= d.size;
      } else if (d.stride == 0 || d.stride_to == 0 || d.stride == d.stride_to) {
        both *= d.size / k;
      } else {
        both *= BothDigits(d.size, k, c, std::min(d.stride, d.stride_to),
                           std::max(d.stride, d.stride_to), work);
      }
    }
    most = std::max(most, needed - both);
  }
  return most > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                    : static_cast<int64_t>(most);
}

double SliceTransferUs(const AxisCost& axis, int64_t lacking, int64_t element_bytes,
                       int64_t slice_devices) {
  return axis.TransferUs(static_cast<double>(lacking) * static_cast<double>(element_bytes) /
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

bool SourceCannotBeatIncumbent(const SearchOptions& options, const RestBound& source) {
  return options.incumbent.has_value() &&
         !WithinSearchBounds(options, 0, 0, source.us, source.bytes_floor);
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
