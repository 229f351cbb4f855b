// baselines.cc — strategies `gspmd`, `greedy` (imitations of XLA and PyTorch DTensor) and the
// point-to-point `direct` exchange. docs/baselines.md documents the imitations.

#include "synth/baselines.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "synth/search.h"
#include "synth/step_builder.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool IsPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& list) {
  return prefix.size() <= list.size() && std::equal(prefix.begin(), prefix.end(), list.begin());
}

// The partial axes of `from` that `to` drops, in mesh order.
std::vector<std::string> ToReduce(const Mesh& mesh, const DistType& from, const DistType& to) {
  std::vector<std::string> axes;
  for (const std::string& axis : PartialInMeshOrder(mesh, from)) {
    if (!Contains(to.partial, axis)) axes.push_back(axis);
  }
  return axes;
}

// GSPMD on types with equal partial axes: the first pattern that applies (docs/baselines.md).
void GspmdReshard(const Mesh& mesh, const DistType& to, StepBuilder& b) {
  const DistType s = b.current();
  if (s == to) return;
  const int rank = s.rank();
  // 1. Only the device order differs (same tiles per dimension): one collective-permute.
  if (LocalShape(mesh, s) == LocalShape(mesh, to)) {
    b.Permute(to);
    return;
  }
  // 2. Refinement (target tiles a partially replicated source further): local dynamic-slice.
  bool refines = true, coarsens = true;
  for (int i = 0; i < rank; ++i) {
    refines = refines && IsPrefix(s.dims[i].axes, to.dims[i].axes);
    coarsens = coarsens && IsPrefix(to.dims[i].axes, s.dims[i].axes);
  }
  if (refines) {
    for (int i = 0; i < rank; ++i) {
      const std::vector<std::string>& t = to.dims[i].axes;
      if (t.size() > s.dims[i].axes.size()) {
        b.Apply(Collective::AllSlice({t.begin() + s.dims[i].axes.size(), t.end()}, i));
      }
    }
    return;
  }
  // 3. Coarsening (target replicates some tiled axes): all-gather over those subgroups.
  if (coarsens) {
    for (int i = 0; i < rank; ++i) {
      const std::vector<std::string>& a = s.dims[i].axes;
      if (a.size() > to.dims[i].axes.size()) {
        b.Apply(Collective::AllGather({a.begin() + to.dims[i].axes.size(), a.end()}, i));
      }
    }
    return;
  }
  // 4. Dimension swaps: a sequence of all-to-alls, each moving a suffix of one dimension to
  // the end of another such that both stay prefixes of the target (XLA's
  // GetReshardAllToAllSourceTargetDims handles one source/target dimension pair at a time).
  {
    StepBuilder trial(mesh, s);
    bool stuck = false;
    while (!(trial.current() == to) && !stuck) {
      stuck = true;
      const DistType& c = trial.current();
      for (int i = 0; i < rank && stuck; ++i) {
        const std::vector<std::string>& list = c.dims[i].axes;
        for (size_t len = list.size(); len >= 1 && stuck; --len) {
          std::vector<std::string> rest(list.begin(), list.end() - len);
          std::vector<std::string> suffix(list.end() - len, list.end());
          if (!IsPrefix(rest, to.dims[i].axes)) continue;
          for (int j = 0; j < rank && stuck; ++j) {
            if (j == i) continue;
            std::vector<std::string> grown = c.dims[j].axes;
            grown.insert(grown.end(), suffix.begin(), suffix.end());
            if (!IsPrefix(grown, to.dims[j].axes)) continue;
            if (trial.TryApply(Collective::AllToAll(suffix, i, j))) stuck = false;
          }
        }
      }
    }
    if (trial.current() == to) {
      for (Step& step : trial.steps()) b.Apply(step.op);
      return;
    }
  }
  // 5. "Involuntary full rematerialization": all-gather every dimension, then dynamic-slice.
  for (int i = 0; i < rank; ++i) {
    if (!b.current().dims[i].axes.empty()) b.Apply(Collective::AllGather(b.current().dims[i].axes, i));
  }
  for (int i = 0; i < rank; ++i) {
    if (!to.dims[i].axes.empty()) b.Apply(Collective::AllSlice(to.dims[i].axes, i));
  }
}

// Where an axis sits in a type: dimension and position, or kPartial / kUnused with pos -1.
struct Place {
  int dim = kUnused;
  int pos = -1;
  bool operator==(const Place&) const = default;
};

Place PlaceOf(const DistType& type, const std::string& axis) {
  for (int i = 0; i < type.rank(); ++i) {
    const std::vector<std::string>& list = type.dims[i].axes;
    auto it = std::find(list.begin(), list.end(), axis);
    if (it != list.end()) return Place{i, static_cast<int>(it - list.begin())};
  }
  return Place{Contains(type.partial, axis) ? kPartial : kUnused, -1};
}

// An axis sharding a dimension is in place when the target has it at the same position of
// the same dimension behind the same axes.
bool InPlace(const DistType& c, const DistType& to, const std::string& axis) {
  Place p = PlaceOf(c, axis);
  if (p.dim < 0 || !(PlaceOf(to, axis) == p)) return false;
  return std::equal(c.dims[p.dim].axes.begin(), c.dims[p.dim].axes.begin() + p.pos + 1,
                    to.dims[p.dim].axes.begin());
}

}  // namespace

Collective DirectExchange(const Mesh& mesh, const DistType& in, const DistType& out) {
  const int rank = in.rank();
  const std::vector<int64_t> in_local = LocalShape(mesh, in);
  const std::vector<int64_t> out_local = LocalShape(mesh, out);
  std::vector<Transfer> transfers;
  for (int64_t t = 0; t < mesh.num_devices(); ++t) {
    const std::vector<int64_t> out_offset = BlockOffset(mesh, out, t);
    const std::vector<int64_t> coords = mesh.Coordinates(t);
    // Per dimension, the range of input blocks the output block meets.
    std::vector<int64_t> first(rank), last(rank), block(rank);
    for (int i = 0; i < rank; ++i) {
      first[i] = out_offset[i] / in_local[i];
      last[i] = (out_offset[i] + out_local[i] - 1) / in_local[i];
      block[i] = first[i];
    }
    while (true) {
      // The holder of `block` that agrees with t on every axis `in` does not shard.
      std::vector<int64_t> holder_coords = coords;
      Transfer transfer;
      transfer.target = t;
      for (int i = 0; i < rank; ++i) {
        int64_t rest = block[i];
        const std::vector<std::string>& axes = in.dims[i].axes;
        for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
          const int index = mesh.AxisIndex(*a);
          const int64_t size = mesh.axes()[index].size;
          holder_coords[index] = rest % size;
          rest /= size;
        }
        const int64_t lo = std::max(out_offset[i], block[i] * in_local[i]);
        const int64_t hi = std::min(out_offset[i] + out_local[i], (block[i] + 1) * in_local[i]);
        transfer.source_offset.push_back(lo - block[i] * in_local[i]);
        transfer.target_offset.push_back(lo - out_offset[i]);
        transfer.shape.push_back(hi - lo);
      }
      transfer.source = mesh.DeviceId(holder_coords);
      transfers.push_back(std::move(transfer));
      int i = rank - 1;
      while (i >= 0 && block[i] == last[i]) {
        block[i] = first[i];
        --i;
      }
      if (i < 0) break;
      ++block[i];
    }
  }
  return Collective::AllToAllV(out_local, std::move(transfers));
}

namespace internal {

std::vector<Step> GspmdSteps(const Mesh& mesh, const DistType& from, const DistType& to) {
  StepBuilder b(mesh, from);
  const std::vector<std::string> reduce = ToReduce(mesh, from, to);
  if (!reduce.empty()) b.Apply(Collective::AllReduce(reduce));
  GspmdReshard(mesh, to, b);
  std::vector<Step> steps = std::move(b.steps());
  // XLA's ReduceScatterCreator pass: all-reduce followed by a dynamic-slice over the same
  // devices becomes one reduce-scatter.
  if (!reduce.empty() && steps.size() >= 2 && steps[1].op.kind == CollectiveKind::kAllSlice) {
    std::vector<std::string> sliced = steps[1].op.mesh_axes;
    std::vector<std::string> sorted = sliced;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> reduced = reduce;
    std::sort(reduced.begin(), reduced.end());
    if (sorted == reduced) {
      Step fused{Collective::ReduceScatter(sliced, steps[1].op.dim), steps[1].type};
      steps.erase(steps.begin(), steps.begin() + 2);
      steps.insert(steps.begin(), std::move(fused));
    }
  }
  return steps;
}

std::vector<Step> GreedySteps(const Mesh& mesh, const DistType& from, const DistType& to) {
  StepBuilder b(mesh, from);
  // Pass 1, "replicate first": in reverse mesh order, every sharded axis that is not in place
  // is all-gathered (with the axes nested inside it), unless it is innermost in its
  // dimension and bound for another dimension (then pass 2 moves it with one all_to_all).
  for (int a = mesh.num_axes() - 1; a >= 0; --a) {
    const std::string& axis = mesh.axes()[a].name;
    Place p = PlaceOf(b.current(), axis);
    if (p.dim < 0 || InPlace(b.current(), to, axis)) continue;
    const std::vector<std::string>& list = b.current().dims[p.dim].axes;
    Place q = PlaceOf(to, axis);
    bool innermost = p.pos + 1 == static_cast<int>(list.size());
    if (innermost && q.dim >= 0 && q.dim != p.dim) continue;
    b.Apply(Collective::AllGather({list.begin() + p.pos, list.end()}, p.dim));
  }
  // Pass 2: per mesh axis in mesh order, move the axis to its target placement when the
  // target dimension is ready for it (its earlier axes are in place); repeat until done.
  bool progress = true;
  while (progress && !(b.current() == to)) {
    progress = false;
    for (const MeshAxis& mesh_axis : mesh.axes()) {
      const std::string& axis = mesh_axis.name;
      Place p = PlaceOf(b.current(), axis), q = PlaceOf(to, axis);
      if (p.dim >= 0 && InPlace(b.current(), to, axis)) continue;
      if (p == q && p.dim < 0) continue;  // Both replicated or both partial.
      // The target dimension holds exactly the axes the target puts before this one.
      const bool ready =
          q.dim >= 0 && std::equal(b.current().dims[q.dim].axes.begin(),
                                   b.current().dims[q.dim].axes.end(), to.dims[q.dim].axes.begin(),
                                   to.dims[q.dim].axes.begin() + q.pos);
      if (p.dim == kPartial) {
        if (q.dim == kUnused) {
          b.Apply(Collective::AllReduce({axis}));
          progress = true;
        } else if (ready) {
          b.Apply(Collective::ReduceScatter({axis}, q.dim));
          progress = true;
        }
      } else if (p.dim == kUnused) {
        if (ready) {
          b.Apply(Collective::AllSlice({axis}, q.dim));
          progress = true;
        }
      } else if (q.dim == kUnused) {
        b.Apply(Collective::AllGather({axis}, p.dim));  // Innermost (pass 1 kept it).
        progress = true;
      } else if (ready && q.dim != p.dim) {
        b.Apply(Collective::AllToAll({axis}, p.dim, q.dim));
        progress = true;
      }
    }
    if (!progress && !(b.current() == to)) {
      // An innermost axis blocks a dimension another axis must enter: replicate it.
      for (const MeshAxis& mesh_axis : mesh.axes()) {
        Place p = PlaceOf(b.current(), mesh_axis.name);
        if (p.dim >= 0 && !InPlace(b.current(), to, mesh_axis.name)) {
          const std::vector<std::string>& list = b.current().dims[p.dim].axes;
          b.Apply(Collective::AllGather({list.begin() + p.pos, list.end()}, p.dim));
          progress = true;
          break;
        }
      }
    }
  }
  RESHARD_CHECK(b.current() == to) << "greedy stalled at " << ToString(b.current());
  return std::move(b.steps());
}

int64_t DirectTransferCount(const Mesh& mesh, const DistType& in, const DistType& out) {
  const std::vector<int64_t> in_local = LocalShape(mesh, in);
  const std::vector<int64_t> out_local = LocalShape(mesh, out);
  // Every tuple of `out` block indices is held by the same number of devices.
  __int128 total = mesh.num_devices();
  for (int i = 0; i < out.rank(); ++i) {
    const int64_t blocks = out.dims[i].size / out_local[i];
    total /= blocks;
  }
  for (int i = 0; i < out.rank(); ++i) {
    const int64_t blocks = out.dims[i].size / out_local[i];
    __int128 met = 0;  // Sum over out blocks of the in blocks each meets.
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * out_local[i] / in_local[i];
      const int64_t last = (b * out_local[i] + out_local[i] - 1) / in_local[i];
      met += last - first + 1;
    }
    total *= met;
    if (total > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(total);
}

std::vector<Step> DirectSteps(const Mesh& mesh, const DistType& from, const DistType& to) {
  StepBuilder b(mesh, from);
  const std::vector<std::string> reduce = ToReduce(mesh, from, to);
  if (!reduce.empty()) b.Apply(Collective::AllReduce(reduce));
  if (!(b.current() == to)) {
    b.steps().push_back(Step{DirectExchange(mesh, b.current(), to), to});
  }
  return std::move(b.steps());
}

}  // namespace internal
}  // namespace reshard
