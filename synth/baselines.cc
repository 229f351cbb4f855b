// baselines.cc — strategies `gspmd`, `greedy` (imitations of XLA and PyTorch DTensor), the
// point-to-point `direct` exchange, and the Shardy-style reference pass (ShardySteps, a
// benchmark baseline, not a strategy). docs/baselines.md documents the imitations.

#include "synth/baselines.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "synth/search.h"
#include "synth/step_builder.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

bool IsPrefix(absl::Span<const AxisName> prefix, absl::Span<const AxisName> list) {
  return prefix.size() <= list.size() && std::equal(prefix.begin(), prefix.end(), list.begin());
}

// GSPMD on types with equal partial axes: the first pattern that applies (docs/baselines.md).
void GspmdReshard(const Mesh& mesh, const DistType& to, StepBuilder& b) {
  const DistType s = b.current();
  if (s == to) return;
  const int rank = s.rank();
  // 1. Only the device order differs (same tiles per dimension): one collective-permute.
  if (SameLocalShape(mesh, s, to)) {
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
      const AxisList& t = to.dims[i].axes;
      if (t.size() > s.dims[i].axes.size()) {
        b.Apply(Collective::AllSlice({t.begin() + s.dims[i].axes.size(), t.end()}, i));
      }
    }
    return;
  }
  // 3. Coarsening (target replicates some tiled axes): all-gather over those subgroups.
  if (coarsens) {
    for (int i = 0; i < rank; ++i) {
      const AxisList& a = s.dims[i].axes;
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
        const AxisList& list = c.dims[i].axes;
        for (size_t len = list.size(); len >= 1 && stuck; --len) {
          AxisList rest(list.begin(), list.end() - len);
          AxisList suffix(list.end() - len, list.end());
          if (!IsPrefix(rest, to.dims[i].axes)) continue;
          for (int j = 0; j < rank && stuck; ++j) {
            if (j == i) continue;
            AxisList grown = c.dims[j].axes;
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
    const AxisList& axes = b.current().dims[i].axes;
    if (!axes.empty()) b.Apply(Collective::AllGather(axes, i));
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

Place PlaceOf(const DistType& type, const AxisName& axis) {
  for (int i = 0; i < type.rank(); ++i) {
    const AxisList& list = type.dims[i].axes;
    auto it = std::find(list.begin(), list.end(), axis);
    if (it != list.end()) return Place{i, static_cast<int>(it - list.begin())};
  }
  return Place{ContainsAxis(type.partial, axis) ? kPartial : kUnused, -1};
}

// An axis sharding a dimension is in place when the target has it at the same position of
// the same dimension behind the same axes.
bool InPlace(const DistType& c, const DistType& to, const AxisName& axis) {
  Place p = PlaceOf(c, axis);
  if (p.dim < 0 || !(PlaceOf(to, axis) == p)) return false;
  return std::equal(c.dims[p.dim].axes.begin(), c.dims[p.dim].axes.begin() + p.pos + 1,
                    to.dims[p.dim].axes.begin());
}


// ---- Shardy-style reshard (ShardySteps). Works on a mesh whose axes are the prime-sized
// atoms of the user's axes, so "a sub-axis of size c" is "a run of atoms of total size c" and
// Shardy's capacity splits become choices of whole atoms. ----

// The part of a type that still differs from the target, per dimension: Shardy's
// inAxesPerDim / outAxesPerDim (the common prefix of the current and target lists removed).
// Views into both types: valid while neither changes (a StepBuilder's current type changes
// with every step it applies, so callers collect what they apply first).
class AxisDiff {
 public:
  using Axes = absl::Span<const AxisName>;

  AxisDiff(const DistType& current, const DistType& to) : current_(current), to_(to) {
    for (int d = 0; d < current.rank(); ++d) {
      const AxisList& c = current.dims[d].axes;
      const AxisList& t = to.dims[d].axes;
      size_t p = 0;
      while (p < c.size() && p < t.size() && c[p] == t[p]) ++p;
      common_.push_back(p);
    }
  }

  Axes in(int d) const { return Axes(current_.dims[d].axes).subspan(common_[d]); }
  Axes out(int d) const { return Axes(to_.dims[d].axes).subspan(common_[d]); }
  Axes prefix(int d) const { return Axes(to_.dims[d].axes).first(common_[d]); }
  // The dimension and index of an atom in `out`, or {-1, -1}.
  std::pair<int, int> OutPlace(const AxisName& atom) const {
    for (int d = 0; d < to_.rank(); ++d) {
      const Axes o = out(d);
      auto it = std::find(o.begin(), o.end(), atom);
      if (it != o.end()) return {d, static_cast<int>(it - o.begin())};
    }
    return {-1, -1};
  }
  bool Done() const {
    for (int d = 0; d < to_.rank(); ++d) {
      if (!in(d).empty() || !out(d).empty()) return false;
    }
    return true;
  }

 private:
  const DistType& current_;
  const DistType& to_;
  absl::InlinedVector<size_t, 4> common_;
};

AxisList ToAxisList(AxisDiff::Axes axes) { return {axes.begin(), axes.end()}; }

// AxisDiff(current, to).Done() without building the diff.
bool SameAxes(const DistType& current, const DistType& to) {
  for (int d = 0; d < current.rank(); ++d) {
    if (current.dims[d].axes != to.dims[d].axes) return false;
  }
  return true;
}

bool Divides(int64_t a, int64_t b) { return a % b == 0 || b % a == 0; }

// Partial sums `to` drops, reduced before any movement: per dimension, the run of such axes
// that `to` puts right behind the dimension's current axes is reduce_scattered onto it; the
// rest is all_reduced in one step.
void ShardyReduce(const Mesh& mesh, const DistType& to, StepBuilder& b) {
  AxisList pending = ToReduce(mesh, b.current(), to);
  for (int d = 0; d < to.rank() && !pending.empty(); ++d) {
    const AxisList& have = b.current().dims[d].axes;
    const AxisList& want = to.dims[d].axes;
    if (!IsPrefix(have, want)) continue;
    AxisList run;
    for (size_t k = have.size(); k < want.size() && ContainsAxis(pending, want[k]); ++k) {
      run.push_back(want[k]);
    }
    if (run.empty() || !b.TryApply(Collective::ReduceScatter(run, d))) continue;
    EraseAxesIf(pending, [&](const AxisName& a) { return ContainsAxis(run, a); });
  }
  if (!pending.empty()) b.Apply(Collective::AllReduce(pending));
}

// Shardy's all-slice: capacity of dimension d = |out_d| / gcd(|in_d|, |out_d|). Target axes
// not used yet are sliced on their own dimension while its capacity allows, the rest on the
// first dimension with capacity. (Shardy's extra rule that slices a target dimension's axes
// on the source dimension of a future all-to-all is not imitated.) True if it sliced.
bool ShardySlice(const Mesh& mesh, const DistType& to, StepBuilder& b) {
  const AxisDiff diff(b.current(), to);
  const int rank = to.rank();
  DistType next = b.current();
  std::vector<int64_t> capacity(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t in = mesh.GroupSize(diff.in(d)), out = mesh.GroupSize(diff.out(d));
    capacity[d] = out / std::gcd(in, out);
  }
  std::vector<AxisList> slicing(rank);
  auto take = [&](const AxisName& atom, int d) {
    const int64_t size = mesh.AxisSize(atom);
    const int64_t local = next.dims[d].size / mesh.GroupSize(next.dims[d].axes);
    if (capacity[d] % size != 0 || local % size != 0) return false;
    capacity[d] /= size;
    slicing[d].push_back(atom);
    next.dims[d].axes.push_back(atom);
    return true;
  };
  AxisList leftover;
  for (int d = 0; d < rank; ++d) {
    for (const AxisName& atom : diff.out(d)) {
      if (AxisUse(next, atom) != kUnused) continue;
      if (!take(atom, d)) leftover.push_back(atom);
    }
  }
  for (int d = 0; d < rank; ++d) {
    for (auto it = leftover.begin(); it != leftover.end() && capacity[d] > 1;) {
      it = take(*it, d) ? leftover.erase(it) : it + 1;
    }
  }
  bool sliced = false;
  for (int d = 0; d < rank; ++d) {
    if (slicing[d].empty()) continue;
    b.Apply(Collective::AllSlice(slicing[d], d));
    sliced = true;
  }
  return sliced;
}

// Shardy's conditions for a collective-permute (shouldCollectivePermute): some dimension has
// both misplaced and wanted axes of divisible sizes at its front; axes bound for one target
// dimension sit out of order or apart; an axis to gather sits behind one to move while its
// dimension wants nothing; or an axis to gather and an unused wanted axis have divisible sizes.
bool ShardyShouldPermute(const Mesh& mesh, const DistType& current, const AxisDiff& diff) {
  std::optional<int64_t> out_size, in_size;
  const int rank = current.rank();
  for (int d = 0; d < rank; ++d) {
    const AxisDiff::Axes in = diff.in(d);
    const AxisDiff::Axes out = diff.out(d);
    if (!in.empty() && !out.empty() &&
        Divides(mesh.AxisSize(in.front()), mesh.AxisSize(out.front()))) {
      return true;
    }
    for (const AxisName& atom : out) {
      if (AxisUse(current, atom) == kUnused) out_size = mesh.AxisSize(atom);
    }
    int last_dim = -1;  // Target dimension of the previous atom (-1: none or to gather).
    int last_index = 0;
    std::vector<bool> seen(rank, false);
    for (const AxisName& atom : in) {
      const auto [od, index] = diff.OutPlace(atom);
      if (od >= 0) {
        if ((od == d || seen[od]) && (last_dim != od || index != last_index + 1)) return true;
        seen[od] = true;
        last_index = index;
        last_dim = od;
      } else {
        if (last_dim >= 0 && out.empty()) return true;
        in_size = mesh.AxisSize(atom);
        last_dim = -1;
      }
    }
  }
  return out_size && in_size && Divides(*out_size, *in_size);
}

// Shardy's collective-permute (performCollectivePermute): each dimension keeps the size of
// its misplaced part (its capacity) and refills it with, in order, the wanted axes of that
// dimension that fit at the front (now in place), other wanted axes (appended, in any
// dimension with capacity, to be moved by all-to-alls), and the axes to gather (put in front,
// in their own dimension first, so they are gathered after the others move). False when the
// refill does not match every capacity exactly (mixed prime sizes) or changes nothing.
bool ShardyPermute(const Mesh& mesh, const DistType& to, bool paired, StepBuilder& b) {
  const DistType& current = b.current();
  const AxisDiff diff(current, to);
  if (!ShardyShouldPermute(mesh, current, diff)) return false;
  const int rank = to.rank();
  std::vector<int64_t> capacity(rank);
  std::vector<AxisList> placed(rank), in(rank), available_in(rank);
  AxisList available_out;
  for (int d = 0; d < rank; ++d) {
    placed[d] = ToAxisList(diff.prefix(d));
    capacity[d] = mesh.GroupSize(diff.in(d));
    const int64_t initial = capacity[d];
    size_t k = 0;
    const AxisDiff::Axes out = diff.out(d);
    for (; k < out.size() && capacity[d] > 1; ++k) {
      const int64_t size = mesh.AxisSize(out[k]);
      if (capacity[d] % size != 0) break;
      capacity[d] /= size;
      placed[d].push_back(out[k]);
    }
    available_out.insert(available_out.end(), out.begin() + k, out.end());
    // Axes to gather: those that took the place of wanted axes go to the back of the list,
    // the rest to the front, so step 3 below puts the latter back where they were.
    int64_t used = initial / capacity[d];
    AxisList gather, front;
    for (const AxisName& atom : diff.in(d)) {
      if (diff.OutPlace(atom).first >= 0) continue;
      const int64_t size = mesh.AxisSize(atom);
      if (used > 1 && used % size == 0) {
        used /= size;
        gather.push_back(atom);
      } else {
        front.push_back(atom);
      }
    }
    available_in[d] = front;
    available_in[d].insert(available_in[d].end(), gather.begin(), gather.end());
  }
  // Shardy's distributeInAxesWithinCapacity: dimension by dimension, take the atoms that fit.
  auto distribute = [&](int d, AxisList& atoms, bool to_front) {
    AxisList taken;
    for (auto it = atoms.begin(); it != atoms.end() && capacity[d] > 1;) {
      const int64_t size = mesh.AxisSize(*it);
      if (capacity[d] % size != 0) {
        ++it;
        continue;
      }
      capacity[d] /= size;
      taken.push_back(*it);
      it = atoms.erase(it);
    }
    in[d].insert(to_front ? in[d].begin() : in[d].end(), taken.begin(), taken.end());
  };
  for (int d = 0; d < rank; ++d) distribute(d, available_out, /*to_front=*/false);
  // The own-dimension pass of the axes to gather, then the others anywhere (both in front).
  for (int d = 0; d < rank; ++d) distribute(d, available_in[d], /*to_front=*/true);
  AxisList rest;
  for (const AxisList& atoms : available_in) {
    rest.insert(rest.end(), atoms.begin(), atoms.end());
  }
  for (int d = 0; d < rank; ++d) distribute(d, rest, /*to_front=*/true);
  DistType next = current;
  for (int d = 0; d < rank; ++d) {
    if (capacity[d] != 1) return false;
    next.dims[d].axes = placed[d];
    next.dims[d].axes.insert(next.dims[d].axes.end(), in[d].begin(), in[d].end());
  }
  if (next == current) return false;
  RESHARD_CHECK(SameLocalShape(mesh, next, current));
  b.Permute(next, paired);
  return true;
}

// Shardy's all-to-alls (getAllToAllInfo): per source dimension, the longest suffix of its
// misplaced axes that `to` wants in one other dimension moves there, repeatedly; with
// `in_order`, only when the suffix is what that dimension wants next. A move the typing rule
// rejects (divisibility: Shardy would pad) is skipped.
bool ShardyAllToAlls(const DistType& to, bool in_order, StepBuilder& b) {
  bool moved = false;
  for (int src = 0; src < to.rank(); ++src) {
    while (true) {
      const AxisDiff diff(b.current(), to);
      const AxisDiff::Axes in = diff.in(src);
      int tgt = -1;
      size_t count = 0;
      for (auto it = in.rbegin(); it != in.rend(); ++it) {
        const int od = diff.OutPlace(*it).first;
        if (od < 0 || od == src || (tgt >= 0 && od != tgt)) break;
        tgt = od;
        ++count;
      }
      if (tgt < 0) break;
      const AxisList suffix(in.end() - count, in.end());
      const AxisDiff::Axes want = diff.out(tgt);
      if (in_order && !IsPrefix(suffix, want)) break;
      if (!b.TryApply(Collective::AllToAll(suffix, src, tgt))) break;
      moved = true;
    }
  }
  return moved;
}

// Shardy's all-gather: per dimension, the suffix of misplaced axes `to` does not want.
bool ShardyGather(const DistType& to, StepBuilder& b) {
  std::vector<Collective> gathers;
  const AxisDiff diff(b.current(), to);
  for (int d = 0; d < to.rank(); ++d) {
    const AxisDiff::Axes in = diff.in(d);
    size_t count = 0;
    while (count < in.size() && diff.OutPlace(in[in.size() - 1 - count]).first < 0) ++count;
    if (count > 0) gathers.push_back(Collective::AllGather({in.end() - count, in.end()}, d));
  }
  for (Collective& gather : gathers) b.Apply(std::move(gather));
  return !gathers.empty();
}

// ShardySteps on a mesh whose atoms are axes (`from`, `to` refined).
std::vector<Step> ShardyStepsOnAtoms(const Mesh& mesh, const DistType& from, const DistType& to,
                                     bool* fell_back, bool paired) {
  StepBuilder b(mesh, from);
  ShardyReduce(mesh, to, b);
  // Shardy runs the sequence at most twice (enough when all sizes are powers of two).
  for (int round = 0; round < 2 && !SameAxes(b.current(), to); ++round) {
    ShardySlice(mesh, to, b);
    ShardyPermute(mesh, to, paired, b);
    ShardyAllToAlls(to, /*in_order=*/true, b);
    ShardyAllToAlls(to, /*in_order=*/false, b);
    ShardyGather(to, b);
  }
  const AxisDiff diff(b.current(), to);
  if (!diff.Done()) {
    // Not expressible in the rounds above (an axis that does not divide a capacity, or an
    // all-to-all the sizes forbid): gather what differs, then slice what is wanted.
    if (fell_back != nullptr) *fell_back = true;
    std::vector<Collective> steps;
    for (int d = 0; d < to.rank(); ++d) {
      if (!diff.in(d).empty()) steps.push_back(Collective::AllGather(ToAxisList(diff.in(d)), d));
    }
    for (int d = 0; d < to.rank(); ++d) {
      if (!diff.out(d).empty()) steps.push_back(Collective::AllSlice(ToAxisList(diff.out(d)), d));
    }
    for (Collective& step : steps) b.Apply(std::move(step));
  }
  RESHARD_CHECK(b.current() == to) << "shardy-style reshard ended at " << ToString(b.current());
  return std::move(b.steps());
}

// DirectExchange for types whose axes are whole axes of `mesh`.
Collective ExchangeOnWholeAxes(const Mesh& mesh, const DistType& in, const DistType& out) {
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
        const AxisList& axes = in.dims[i].axes;
        for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
          const int index = mesh.WholeAxisIndex(*a);
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

}  // namespace

Collective DirectExchange(const Mesh& mesh, const DistType& in, const DistType& out) {
  // Transfers name devices and element boxes, which a refinement keeps.
  return OnWholeAxes(mesh, in, out, ExchangeOnWholeAxes);
}

namespace internal {

std::vector<Step> GspmdSteps(const Mesh& mesh, const DistType& from, const DistType& to) {
  StepBuilder b(mesh, from);
  const AxisList reduce = ToReduce(mesh, from, to);
  if (!reduce.empty()) b.Apply(Collective::AllReduce(reduce));
  GspmdReshard(mesh, to, b);
  std::vector<Step> steps = std::move(b.steps());
  // XLA's ReduceScatterCreator pass: all-reduce followed by a dynamic-slice over the same
  // devices becomes one reduce-scatter.
  if (!reduce.empty() && steps.size() >= 2 && steps[1].op.kind == CollectiveKind::kAllSlice) {
    AxisList sliced = steps[1].op.mesh_axes;
    AxisList sorted = sliced;
    std::sort(sorted.begin(), sorted.end());
    AxisList reduced = reduce;
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
    const AxisName& axis = mesh.axis_name(a);
    Place p = PlaceOf(b.current(), axis);
    if (p.dim < 0 || InPlace(b.current(), to, axis)) continue;
    const AxisList& list = b.current().dims[p.dim].axes;
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
          const AxisList& list = b.current().dims[p.dim].axes;
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
  const AxisList reduce = ToReduce(mesh, from, to);
  if (!reduce.empty()) b.Apply(Collective::AllReduce(reduce));
  if (!(b.current() == to)) {
    b.steps().push_back(Step{DirectExchange(mesh, b.current(), to), to});
  }
  return std::move(b.steps());
}

absl::StatusOr<std::vector<Step>> ShardySteps(const Mesh& mesh, const DistType& from,
                                              const DistType& to, bool* fell_back,
                                              bool paired_permutes) {
  if (fell_back != nullptr) *fell_back = false;
  const AxisList refs = SubAxisRefs(mesh, from, to);
  if (refs.empty() && HasPrimeAxes(mesh)) {
    // The mesh is its own atoms: the steps name whole axes only, which coarsening would leave
    // as they are.
    return ShardyStepsOnAtoms(mesh, from, to, fell_back, paired_permutes);
  }
  absl::StatusOr<AxisRefinement> atoms = AxisRefinement::Create(mesh, refs, /*prime_factors=*/true);
  if (!atoms.ok()) return atoms.status();
  Plan plan;
  plan.mesh = atoms->refined();
  plan.source = atoms->Refine(from);
  plan.target = atoms->Refine(to);
  plan.steps = ShardyStepsOnAtoms(plan.mesh, plan.source, plan.target, fell_back, paired_permutes);
  return CoarsenPlan(mesh, std::move(plan)).steps;
}

}  // namespace internal
}  // namespace reshard
