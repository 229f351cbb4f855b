// compact_search_test — synth/compact_search.h and synth/plan_check.h against the code they
// replace, and the soundness of the searches' pruning.
//
// The compact search must return exactly what the DistType search
// (internal::SearchPlanOnDistTypes) returns: the same steps, status and message, and the same
// statistics and work (`normal` subtracts the statistics from budgets shared by its
// candidates, so they too must agree). One sweep draws random middles of valleys (pairs of
// types of the same local size and partial axes on meshes of 1-4 axes) and compares
// MiddleSearch under the option sets `normal` uses: bytes mode with and without a cost bound,
// time mode under a uniform and a non-uniform model, and tight state and work caps; along
// every optimal middle path it also checks the middle's bounds (growth and order terms). The
// other draws random pairs of any types and compares SearchPlan under the option sets of
// `optimal`, normal's fallback and the tests: every collective kind, byte bound, incumbents,
// cost and memory bounds, permute pairs. SearchBounds checks that cost bounds at an optimum's
// own cost prune nothing that reaches it. CheckSynthesizedPlan must agree with CheckPlan on
// synthesized plans and on plans whose permute pairs were mutated. LinkOrder must rank links as
// CostModel::Between prices them.
#include "synth/compact_search.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "synth/placement.h"
#include "synth/plan_check.h"
#include "synth/search.h"
#include "synth/search_bounds.h"
#include "synth/synthesize.h"
#include "tests/test_util.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using test::M;

// A random valid type of `dims` on `mesh`: each axis unused, partial (if `partial_ok` and in
// `allowed_partial`, when given) or appended to a random dimension; nullopt when invalid.
std::optional<DistType> RandomType(std::mt19937& rng, const Mesh& mesh,
                                   const std::vector<int64_t>& dims, bool partial_ok,
                                   const AxisList* allowed_partial) {
  DistType t;
  for (int64_t d : dims) t.dims.push_back(Dim{d, {}});
  std::vector<int> order(mesh.num_axes());
  for (int i = 0; i < mesh.num_axes(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (int a : order) {
    const std::string& name = mesh.axes()[a].name;
    const int r = static_cast<int>(rng() % (dims.size() + 2));
    if (r < static_cast<int>(dims.size())) {
      t.dims[r].axes.push_back(name);
    } else if (r == static_cast<int>(dims.size()) && partial_ok &&
               (allowed_partial == nullptr ||
                std::find(allowed_partial->begin(), allowed_partial->end(), name) !=
                    allowed_partial->end())) {
      t.partial.push_back(name);
    }
  }
  if (!Validate(mesh, t).ok()) return std::nullopt;
  return t;
}

// A global shape of 1 to `max_rank` dimensions drawn from `sizes`.
std::vector<int64_t> RandomDims(std::mt19937& rng, int max_rank,
                                absl::Span<const int64_t> sizes) {
  const int rank = 1 + static_cast<int>(rng() % max_rank);
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(sizes[rng() % sizes.size()]);
  return dims;
}

// Fast x, slow b and z: permute pairs and group costs depend on which axes they cross.
CostModel SkewedModel() {
  CostModel skewed;
  skewed.SetAxis("x", AxisCost{1.5, 300});
  skewed.SetAxis("b", AxisCost{12, 20});
  skewed.SetAxis("z", AxisCost{10, 25});
  return skewed;
}

std::string Describe(const absl::StatusOr<std::vector<Step>>& steps) {
  if (!steps.ok()) return steps.status().ToString();
  std::string out;
  for (const Step& s : *steps) {
    absl::StrAppend(&out, ToString(s.op), " -> ", ToString(s.type), "; ");
  }
  return out;
}

void ExpectSameStats(const SearchStats& want, const SearchStats& got, const std::string& where) {
  EXPECT_EQ(want.states_settled, got.states_settled) << where;
  EXPECT_EQ(want.states_generated, got.states_generated) << where;
  EXPECT_EQ(want.work, got.work) << where;
}

// Each outcome was seen more than the given number of times, so that a sweep is not vacuous.
void ExpectOutcomes(const std::map<absl::StatusCode, int>& codes, int ok, int not_found,
                    int exhausted) {
  auto seen = [&](absl::StatusCode code) {
    auto it = codes.find(code);
    return it == codes.end() ? 0 : it->second;
  };
  EXPECT_GT(seen(absl::StatusCode::kOk), ok);
  EXPECT_GT(seen(absl::StatusCode::kNotFound), not_found);
  EXPECT_GT(seen(absl::StatusCode::kResourceExhausted), exhausted);
  for (const auto& [code, count] : codes) {
    std::printf("%s: %d\n", absl::StatusCodeToString(code).c_str(), count);
  }
}

// The options `normal` gives a middle search from `x` (bytes mode, its default budgets).
SearchOptions MiddleOptions(const Mesh& mesh, const DistType& x) {
  SearchOptions options;
  options.max_local_bytes = LocalBytes(mesh, x);
  options.max_states = 4000;
  options.max_work = int64_t{1} << 26;
  options.fill_permute_pairs = false;
  options.allow_all_slice = options.allow_all_gather = false;
  options.allow_all_reduce = options.allow_reduce_scatter = false;
  return options;
}

TEST(MiddleSearch, EqualsSearchPlanOnRandomMiddles) {
  std::mt19937 rng(7);
  const char* meshes[] = {"x=8",         "x=2,y=4",         "x=4,y=4",       "x=2,y=2,z=2",
                          "x=2,y=4,z=4", "x=4,y=4,z=4",     "x=1,y=2,z=4",   "a=2,b=2,c=2,d=2",
                          "a=2,b=4,c=2,d=4", "x=2,y=3,z=2", "x=2,y=2,z=8"};
  const int64_t sizes[] = {8, 16, 32, 48, 64, 128, 256};
  CostModel uniform;
  const CostModel skewed = SkewedModel();
  int compared = 0;
  std::map<absl::StatusCode, int> codes;  // Outcomes seen, so that the sweep is not vacuous.
  for (int iter = 0; iter < 6000 && compared < 1500; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const std::vector<int64_t> dims = RandomDims(rng, 4, sizes);
    std::optional<DistType> x = RandomType(rng, mesh, dims, rng() % 4 == 0, nullptr);
    if (!x) continue;
    std::optional<DistType> y = RandomType(rng, mesh, dims, !x->partial.empty(), &x->partial);
    if (!y || x == y || LocalBytes(mesh, *x) != LocalBytes(mesh, *y) ||
        PartialInMeshOrder(mesh, *x) != PartialInMeshOrder(mesh, *y)) {
      continue;
    }
    ++compared;
    for (int variant = 0; variant < 6; ++variant) {
      SearchOptions options = MiddleOptions(mesh, *x);
      switch (variant) {
        case 1:
          options.max_cost = LocalBytes(mesh, *x) * mesh.num_devices() / 2;
          break;
        case 2:
          options.cost_model = &uniform;
          break;
        case 3:
          options.cost_model = &skewed;
          options.max_cost_us = 40;
          break;
        case 4:
          options.max_states = 3;
          break;
        case 5:
          options.max_work = 20000;
          options.cost_model = &uniform;
          break;
        default:
          break;
      }
      SearchStats want_stats, got_stats;
      absl::StatusOr<std::vector<Step>> want =
          internal::SearchPlanOnDistTypes(mesh, *x, *y, options, &want_stats);
      ++codes[want.status().code()];
      internal::MiddleCache cache;
      // Twice through one cache, as `normal`'s candidates share it.
      for (int pass = 0; pass < 2; ++pass) {
        internal::MiddlePath path;
        absl::StatusOr<std::vector<Step>> got =
            internal::MiddleSearch(mesh, *x, *y, options, cache, &got_stats, &path);
        const std::string where = absl::StrCat(mesh.ToString(), " ", ToString(*x), " -> ",
                                               ToString(*y), " variant ", variant, " pass ", pass);
        ASSERT_EQ(want.status().code(), got.status().code()) << where << "\n"
                                                              << Describe(want) << "\n"
                                                              << Describe(got);
        if (want.ok()) {
          ASSERT_EQ(*want, *got) << where << "\n" << Describe(want) << "\n" << Describe(got);
          // The path's bytes and per-step µs are those of its steps.
          ASSERT_TRUE(path.known) << where;
          int64_t bytes = 0;
          const DistType* in = &*x;
          for (size_t k = 0; k < got->size(); ++k) {
            const Step& step = (*got)[k];
            const bool permute = step.op.kind == CollectiveKind::kCollectivePermute;
            const int64_t moved = permute ? internal::MovedDevices(mesh, *in, step.type) : 0;
            bytes += permute ? moved * LocalBytes(mesh, *in)
                             : mesh.num_devices() * BytesReceived(mesh, *in, step.op, 0);
            if (options.cost_model != nullptr) {
              const double us =
                  !permute ? options.cost_model->StepCostUs(mesh, *in, step.op)
                  : moved == 0
                      ? 0.0
                      : options.cost_model->StepCostUs(
                            mesh, *in, MinimalPermute(mesh, *in, step.type, options.cost_model));
              ASSERT_EQ(path.step_us.at(k), us) << where << " step " << k;
            }
            in = &step.type;
          }
          EXPECT_EQ(path.bytes, bytes) << where;
          // The growth bound and its order term (the middle's heuristic) are below what the
          // rest of this optimal path costs, from every type on it.
          if (options.cost_model != nullptr) {
            const AxisCost fastest = options.cost_model->Fastest(mesh);
            internal::MiddleGrowthBound growth(fastest.alpha_us, fastest.TransferUs(1.0),
                                               static_cast<double>(LocalBytes(mesh, *x)));
            const std::vector<int64_t> y_local = LocalShape(mesh, *y);
            double rest = 0;
            for (double us : path.step_us) rest += us;
            const DistType* at = &*x;
            bool size_one = false;
            for (const MeshAxis& axis : mesh.axes()) size_one |= axis.size == 1;
            for (size_t k = 0; k <= got->size(); ++k) {
              const int64_t pieces = internal::PiecesNeeded(LocalShape(mesh, *at), y_local, 1);
              const double bound = growth(pieces);
              ASSERT_LE(bound, rest + 1e-9) << where << " from step " << k;
              if (!size_one) {  // The order term: permutes move devices.
                int64_t unsettled = 1;
                AxisList have_axes, want_axes;
                for (int i = 0; i < at->rank(); ++i) {
                  const AxisList& have = at->dims[i].axes;
                  const AxisList& want = y->dims[i].axes;
                  size_t common = 0;
                  while (common < have.size() && common < want.size() &&
                         have[common] == want[common]) {
                    ++common;
                  }
                  for (size_t p = common; p < have.size(); ++p) unsettled *= mesh.AxisSize(have[p]);
                  have_axes.insert(have_axes.end(), have.begin(), have.end());
                  want_axes.insert(want_axes.end(), want.begin(), want.end());
                }
                std::sort(have_axes.begin(), have_axes.end());
                std::sort(want_axes.begin(), want_axes.end());
                const double order =
                    growth.Order(pieces, have_axes == want_axes, unsettled);
                ASSERT_LE(order, rest + 1e-9) << where << " order bound from step " << k;
              }
              if (k < got->size()) {
                rest -= path.step_us[k];
                at = &(*got)[k].type;
              }
            }
          }
        }
        ExpectSameStats(want_stats, got_stats, where);
      }
    }
  }
  EXPECT_GE(compared, 500);
  ExpectOutcomes(codes, 1000, 50, 50);
}

// The searches of one `normal` call share a MiddleCache across objectives: a time-mode
// middle (which bounds every permute member and keeps only class sizes) may meet a class
// first, and a bytes-mode middle (which needs the members) after it, or the other way round.
// Each must return and charge exactly what it does with a cache of its own.
TEST(MiddleSearch, SharedCacheAcrossObjectivesChangesNothing) {
  std::mt19937 rng(11);
  const char* meshes[] = {"x=2,y=4,z=4", "x=4,y=4,z=4", "a=2,b=2,c=2,d=2", "x=2,y=3,z=2",
                          "a=2,b=2,c=2,d=2,e=2,f=2"};
  const int64_t sizes[] = {16, 64, 256, 4096};
  CostModel uniform;
  int compared = 0;
  for (int iter = 0; iter < 3000 && compared < 200; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const std::vector<int64_t> dims = RandomDims(rng, 3, sizes);
    std::optional<DistType> x = RandomType(rng, mesh, dims, false, nullptr);
    if (!x) continue;
    std::optional<DistType> y = RandomType(rng, mesh, dims, false, nullptr);
    if (!y || x == y || LocalBytes(mesh, *x) != LocalBytes(mesh, *y)) continue;
    ++compared;
    const SearchOptions bytes = MiddleOptions(mesh, *x);
    SearchOptions timed = bytes;
    timed.cost_model = &uniform;
    const SearchOptions* orders[2][2] = {{&timed, &bytes}, {&bytes, &timed}};
    for (const auto& order : orders) {
      internal::MiddleCache shared;
      for (const SearchOptions* options : order) {
        internal::MiddleCache own;
        SearchStats want_stats, got_stats;
        internal::MiddlePath want_path, got_path;
        absl::StatusOr<std::vector<Step>> want =
            internal::MiddleSearch(mesh, *x, *y, *options, own, &want_stats, &want_path);
        absl::StatusOr<std::vector<Step>> got =
            internal::MiddleSearch(mesh, *x, *y, *options, shared, &got_stats, &got_path);
        const std::string where =
            absl::StrCat(mesh.ToString(), " ", ToString(*x), " -> ", ToString(*y),
                         options->cost_model != nullptr ? " timed" : " bytes");
        ASSERT_EQ(want.status().code(), got.status().code()) << where;
        if (want.ok()) {
          ASSERT_EQ(*want, *got) << where;
        }
        ExpectSameStats(want_stats, got_stats, where);
      }
    }
  }
  EXPECT_GE(compared, 100);
}

TEST(CompactSearch, EqualsDistTypeSearchOnRandomPairs) {
  std::mt19937 rng(13);
  const char* meshes[] = {"x=8",         "x=2,y=4",     "x=4,y=4",         "x=2,y=2,z=2",
                          "x=2,y=4,z=4", "x=1,y=2,z=4", "a=2,b=2,c=2,d=2", "x=2,y=3,z=2",
                          "a=2,b=4,c=2,d=4"};
  const int64_t sizes[] = {8, 16, 24, 48, 64, 256};
  CostModel uniform;
  const CostModel skewed = SkewedModel();
  int compared = 0;
  std::map<absl::StatusCode, int> codes;
  for (int iter = 0; iter < 8000 && compared < 700; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const std::vector<int64_t> dims = RandomDims(rng, 3, sizes);
    std::optional<DistType> from = RandomType(rng, mesh, dims, rng() % 2 == 0, nullptr);
    if (!from) continue;
    // Keep some of the source's partial axes, in a shuffled order (SearchPlan accepts any).
    AxisList kept;
    for (const AxisName& axis : from->partial) {
      if (rng() % 3 == 0) kept.push_back(axis);
    }
    std::optional<DistType> to = RandomType(rng, mesh, dims, false, nullptr);
    if (!to) continue;
    for (const AxisName& axis : kept) {
      if (AxisUse(*to, axis) == kUnused) to->partial.push_back(axis);
    }
    std::shuffle(to->partial.begin(), to->partial.end(), rng);
    if (!Validate(mesh, *to).ok()) continue;
    ++compared;
    const int64_t bound = std::max(LocalBytes(mesh, *from), LocalBytes(mesh, *to));
    for (int variant = 0; variant < 8; ++variant) {
      SearchOptions options;
      options.max_local_bytes = bound;
      options.max_states = 3000;
      options.max_work = int64_t{1} << 25;
      switch (variant) {
        case 0:  // Normal's fallback.
          options.bytes_bound = true;
          options.fill_permute_pairs = false;
          break;
        case 1:  // Optimal.
          options.cost_model = &uniform;
          options.bytes_bound = true;
          break;
        case 2:
          options.cost_model = &skewed;
          options.bytes_bound = rng() % 2 == 0;
          break;
        case 3:  // Plain Dijkstra, a cost cap, twice the memory.
          options.max_cost = LocalBytes(mesh, *from) * mesh.num_devices();
          options.max_local_bytes = 2 * bound;
          break;
        case 4:  // An incumbent to beat (time, then bytes mode).
          options.cost_model = &uniform;
          options.bytes_bound = true;
          options.incumbent = SearchOptions::Incumbent{30, bound * mesh.num_devices()};
          break;
        case 5:
          options.bytes_bound = true;
          options.incumbent = SearchOptions::Incumbent{0, bound * mesh.num_devices() / 2};
          break;
        case 6:  // Tight caps, no heuristic.
          options.cost_model = &uniform;
          options.use_heuristic = false;
          options.max_states = 1 + static_cast<int64_t>(rng() % 20);
          options.max_cost_us = 60;
          break;
        default:  // Some kinds off, a small work budget.
          options.cost_model = &uniform;
          options.allow_all_gather = rng() % 2 == 0;
          options.allow_all_slice = rng() % 2 == 0;
          options.allow_permute = rng() % 2 == 0;
          options.max_work = 5000 + static_cast<int64_t>(rng() % 200000);
          break;
      }
      // Every other pair with the short failure messages of `normal`'s middle searches.
      options.describe_failures = compared % 2 == 0;
      SearchStats want_stats, got_stats;
      absl::StatusOr<std::vector<Step>> want =
          internal::SearchPlanOnDistTypes(mesh, *from, *to, options, &want_stats);
      absl::StatusOr<std::vector<Step>> got = SearchPlan(mesh, *from, *to, options, &got_stats);
      ++codes[want.status().code()];
      const std::string where = absl::StrCat(mesh.ToString(), " ", ToString(*from), " -> ",
                                             ToString(*to), " variant ", variant);
      ASSERT_EQ(want.status(), got.status()) << where;
      if (want.ok()) {
        ASSERT_EQ(*want, *got) << where << "\n" << Describe(want) << "\n" << Describe(got);
      }
      ExpectSameStats(want_stats, got_stats, where);
    }
  }
  EXPECT_GE(compared, 500);
  ExpectOutcomes(codes, 1500, 100, 100);
}

// A middle search whose cost budget is below its source's own bound ends before expanding the
// source, on DistTypes and on compact types alike: NotFound naming the bound, nothing settled.
// With the budget at the optimum's cost both find it.
TEST(MiddleSearch, EndsAtTheSourceBelowItsBound) {
  const Mesh mesh = M("x=2,y=2,z=4");
  const DistType x = test::T(mesh, "f32[64{x},64{y},64{z}]");
  const DistType y = test::T(mesh, "f32[64{z},64{x},64{y}]");
  CostModel model;
  SearchOptions options = MiddleOptions(mesh, x);
  options.cost_model = &model;
  internal::MiddleCache first;
  internal::MiddlePath path;
  absl::StatusOr<std::vector<Step>> best =
      internal::MiddleSearch(mesh, x, y, options, first, nullptr, &path);
  ASSERT_TRUE(best.ok()) << best.status();
  ASSERT_TRUE(path.known);
  double us = 0;
  for (double step : path.step_us) us += step;
  ASSERT_GT(us, 10.0);  // Two steps at least (the local shapes differ): two alphas.
  for (const double budget : {1.0, us + 1e-9 * us}) {
    options.max_cost_us = budget;
    SearchStats want_stats, got_stats;
    absl::StatusOr<std::vector<Step>> want =
        internal::SearchPlanOnDistTypes(mesh, x, y, options, &want_stats);
    internal::MiddleCache cache;
    absl::StatusOr<std::vector<Step>> got =
        internal::MiddleSearch(mesh, x, y, options, cache, &got_stats);
    ASSERT_EQ(want.status(), got.status()) << budget;
    ExpectSameStats(want_stats, got_stats, absl::StrCat(budget));
    if (budget < us) {
      EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
      EXPECT_NE(got.status().message().find("source's lower bound"), absl::string_view::npos)
          << got.status();
      EXPECT_NE(got.status().message().find(ToString(x)), absl::string_view::npos) << got.status();
      EXPECT_EQ(got_stats.states_settled, 0);
      // Without describe_failures: the same status, the types unnamed, on both searches.
      SearchOptions quiet = options;
      quiet.describe_failures = false;
      internal::MiddleCache quiet_cache;
      const absl::Status short_status =
          internal::MiddleSearch(mesh, x, y, quiet, quiet_cache).status();
      EXPECT_EQ(short_status, internal::SearchPlanOnDistTypes(mesh, x, y, quiet).status());
      EXPECT_EQ(short_status.code(), got.status().code());
      EXPECT_NE(short_status.message().find("no plan from the source to the target"),
                absl::string_view::npos)
          << short_status;
    } else {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, *best);
      EXPECT_GT(got_stats.states_settled, 0);
    }
  }
}

// Branch and bound prunes nothing within its bounds (what makes skipping whole permute classes,
// internal::PermuteClassOutOfBounds, and the heuristic's pruning sound): with max_cost and
// max_cost_us set to an optimum's own cost the search returns a plan of that cost, and just
// below it NotFound. Full searches (bytes mode, time mode under a uniform and a skewed model) and
// middles (all_to_all and permutes between types of one local size, where the growth bound
// applies).
TEST(CompactSearch, EncodesSixteenNibbleKeys) {
  // 15 axes none of them partial and rank 2: 15 axis nibbles and one closing dimension 0 fill
  // the 64-bit key exactly (the last dimension needs no closing nibble). Such searches run on
  // compact types, with the DistType search's result and statistics; at rank 3 CompactSearch
  // declines them (nullopt).
  std::string text;
  for (char c = 'a'; c <= 'o'; ++c) {
    absl::StrAppend(&text, text.empty() ? "" : ",", std::string(1, c), "=2");
  }
  const Mesh mesh = M(text);
  std::mt19937 rng(16);
  const int64_t sizes[] = {256, 512, 1024};
  int compared[2] = {0, 0};
  std::map<absl::StatusCode, int> codes;
  for (int iter = 0; iter < 400 && (compared[0] < 12 || compared[1] < 4); ++iter) {
    const int rank = compared[0] < 12 ? 2 : 3;
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(sizes[rng() % std::size(sizes)]);
    std::optional<DistType> x = RandomType(rng, mesh, dims, false, nullptr);
    if (!x || x->dims[0].axes.size() < 2) continue;
    // One or two moves away, so that searches also succeed: the last axis of dimension 0
    // moved to the end of dimension 1 (an all_to_all), and/or two axes of dimension 0
    // swapped (a permute).
    DistType y = *x;
    AxisList& first = y.dims[0].axes;
    if (iter % 3 != 1) {
      y.dims[1].axes.push_back(first.back());
      first.pop_back();
    }
    if (iter % 3 != 0 && first.size() >= 2) std::swap(first[0], first[1]);
    if (y == *x || !Validate(mesh, y).ok()) continue;
    ++compared[rank - 2];
    SearchOptions options = MiddleOptions(mesh, *x);
    options.max_work = 1 << 22;
    // One permute reaches thousands of types on 15 equal axes: without permutes the searches
    // also end (found, or nothing within the states).
    options.allow_permute = iter % 2 == 0;
    const std::string where = absl::StrCat(ToString(*x), " -> ", ToString(y));
    std::optional<absl::StatusOr<std::vector<Step>>> got =
        internal::CompactSearch(mesh, *x, y, options, nullptr);
    ASSERT_EQ(got.has_value(), rank == 2) << where;
    if (!got) continue;
    SearchStats want_stats, got_stats;
    absl::StatusOr<std::vector<Step>> want =
        internal::SearchPlanOnDistTypes(mesh, *x, y, options, &want_stats);
    got = internal::CompactSearch(mesh, *x, y, options, nullptr, &got_stats);
    ++codes[want.status().code()];
    ASSERT_EQ(want.status().code(), got->status().code()) << where << "\n"
                                                          << Describe(want) << "\n"
                                                          << Describe(*got);
    if (want.ok()) {
      EXPECT_EQ(*want, **got) << where;
    }
    ExpectSameStats(want_stats, got_stats, where);
  }
  EXPECT_EQ(compared[0], 12);
  EXPECT_EQ(compared[1], 4);
  EXPECT_GT(codes[absl::StatusCode::kOk], 0);  // Not only searches that give up.
  for (const auto& [code, count] : codes) {
    std::printf("%s: %d\n", absl::StatusCodeToString(code).c_str(), count);
  }
}

TEST(SearchBounds, PruneNothingWithinThem) {
  std::mt19937 rng(17);
  const char* meshes[] = {"x=8", "x=2,y=4", "x=4,y=4", "x=2,y=2,z=2", "x=2,y=4,z=4",
                          "a=2,b=2,c=2,d=2", "x=2,y=3,z=2"};
  const int64_t sizes[] = {8, 16, 24, 64, 256};
  CostModel uniform;
  CostModel skewed;
  skewed.SetAxis("x", AxisCost{1.5, 300});
  skewed.SetAxis("z", AxisCost{10, 25});
  int checked = 0;
  for (int iter = 0; iter < 4000 && checked < 600; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const std::vector<int64_t> dims = RandomDims(rng, 3, sizes);
    const bool middle = rng() % 2 == 0;
    std::optional<DistType> from = RandomType(rng, mesh, dims, rng() % 3 == 0, nullptr);
    if (!from) continue;
    std::optional<DistType> to = RandomType(rng, mesh, dims, middle && !from->partial.empty(),
                                            &from->partial);
    if (!to || from == to) continue;
    if (middle && (LocalBytes(mesh, *from) != LocalBytes(mesh, *to) ||
                   PartialInMeshOrder(mesh, *from) != PartialInMeshOrder(mesh, *to))) {
      continue;
    }
    const int variant = static_cast<int>(rng() % 3);
    SearchOptions options;
    options.max_local_bytes = std::max(LocalBytes(mesh, *from), LocalBytes(mesh, *to));
    options.max_states = 5000;
    options.cost_model = variant == 0 ? nullptr : variant == 1 ? &uniform : &skewed;
    options.bytes_bound = rng() % 2 == 0;
    if (middle) {
      options.allow_all_slice = options.allow_all_gather = false;
      options.allow_all_reduce = options.allow_reduce_scatter = false;
    }
    absl::StatusOr<std::vector<Step>> best = SearchPlan(mesh, *from, *to, options);
    if (!best.ok() || best->empty()) continue;
    ++checked;
    // The plan's cost as the search adds it up.
    double us = 0;
    int64_t bytes = 0;
    const DistType* in = &*from;
    for (const Step& step : *best) {
      if (options.cost_model != nullptr) us += options.cost_model->StepCostUs(mesh, *in, step.op);
      for (int64_t d = 0; d < mesh.num_devices(); ++d) {
        bytes += BytesReceived(mesh, *in, step.op, d);
      }
      in = &step.type;
    }
    const std::string where = absl::StrCat(mesh.ToString(), " ", ToString(*from), " -> ",
                                           ToString(*to), " variant ", variant,
                                           middle ? " middle" : "");
    SearchOptions within = options;
    within.max_cost = bytes;
    if (options.cost_model != nullptr) within.max_cost_us = us + 1e-9 * std::max(1.0, us);
    absl::StatusOr<std::vector<Step>> again = SearchPlan(mesh, *from, *to, within);
    ASSERT_TRUE(again.ok()) << where << ": " << again.status();
    // Another plan of the same cost may come first: the bounds drop paths before their ties.
    const Metrics want = ComputeMetrics(mesh, *from, *best, options.cost_model == nullptr
                                                                ? CostModel{}
                                                                : *options.cost_model);
    const Metrics got = ComputeMetrics(mesh, *from, *again, options.cost_model == nullptr
                                                                ? CostModel{}
                                                                : *options.cost_model);
    EXPECT_EQ(want.bytes_received_total, got.bytes_received_total) << where;
    if (options.cost_model != nullptr) {
      EXPECT_EQ(want.cost_us, got.cost_us) << where;
    }
    SearchOptions below = options;
    if (options.cost_model != nullptr && us > 1e-6) {
      below.max_cost_us = us * (1 - 1e-6);
    } else {
      below.max_cost = bytes - 1;
    }
    if (options.cost_model == nullptr || us > 1e-6 || bytes > 0) {
      EXPECT_EQ(SearchPlan(mesh, *from, *to, below).status().code(), absl::StatusCode::kNotFound)
          << where;
    }
  }
  EXPECT_GE(checked, 300);
}

// A type with dimensions of sizes `dim_sizes` in which each of the axes names[0..axes), taken
// in a random order, goes to a random dimension unless rng() % skip_one_in == 0.
DistType RandomShardedType(std::mt19937& rng, const char* const* names, int axes,
                           const std::vector<int64_t>& dim_sizes, unsigned skip_one_in) {
  const int rank = static_cast<int>(dim_sizes.size());
  DistType type;
  for (int i = 0; i < rank; ++i) type.dims.push_back(Dim{dim_sizes[i], {}});
  std::vector<int> order(axes);
  for (int a = 0; a < axes; ++a) order[a] = a;
  std::shuffle(order.begin(), order.end(), rng);
  for (int a : order) {
    if (rng() % skip_one_in != 0) type.dims[rng() % rank].axes.push_back(names[a]);
  }
  return type;
}

// SliceLackingElements against the definition, on random meshes, types, axis sets S and
// slices: the elements some device of the slice needs in the target and none of them holds,
// by listing every device's blocks.
TEST(SliceBound, LackingElementsMatchEnumeration) {
  std::mt19937 rng(7);
  const char* names[] = {"x", "y", "z"};
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int axes = 1 + static_cast<int>(rng() % 3);
    std::vector<MeshAxis> mesh_axes;
    int64_t product = 1;
    for (int a = 0; a < axes; ++a) {
      mesh_axes.push_back({names[a], 1 + static_cast<int64_t>(rng() % 4)});
      product *= mesh_axes.back().size;
    }
    const Mesh mesh = *Mesh::Create(mesh_axes);
    const int rank = 1 + static_cast<int>(rng() % 2);
    const std::vector<int64_t> dim_sizes(rank, 2 * product);
    const DistType from = RandomShardedType(rng, names, axes, dim_sizes, 3);
    const DistType to = RandomShardedType(rng, names, axes, dim_sizes, 3);
    ASSERT_TRUE(Validate(mesh, from).ok() && Validate(mesh, to).ok());
    // S: a random set of the axes of size above 1; coordinates on them.
    std::vector<int> slot(axes, -1);
    std::vector<int64_t> coords;
    for (int a = 0; a < axes; ++a) {
      if (mesh_axes[a].size > 1 && rng() % 2 == 0) {
        slot[a] = static_cast<int>(coords.size());
        coords.push_back(static_cast<int64_t>(rng() % mesh_axes[a].size));
      }
    }
    auto digits = [&](const Dim& dim) {
      internal::SliceDigits out;
      for (const AxisName& axis : dim.axes) {
        const int a = mesh.AxisIndex(axis);
        if (mesh_axes[a].size > 1) out.Add(mesh_axes[a].size, slot[a]);
      }
      return out;
    };
    std::vector<internal::SliceDigits> from_digits, to_digits;
    for (int i = 0; i < rank; ++i) {
      from_digits.push_back(digits(from.dims[i]));
      to_digits.push_back(digits(to.dims[i]));
    }
    std::vector<internal::SliceDim> dims;
    for (int i = 0; i < rank; ++i) {
      dims.push_back({from.dims[i].size, &from_digits[i], &to_digits[i]});
    }
    int64_t work = 0;
    const int64_t lacking =
        internal::SliceLackingElements(dims.data(), rank, coords.data(), &work);
    // The definition: mark the elements the slice's devices hold and need.
    const int64_t n = 2 * product;
    const int64_t elements = rank == 1 ? n : n * n;
    std::vector<bool> held(elements), needed(elements);
    auto mark = [&](const DistType& type, int64_t device, std::vector<bool>& set) {
      const std::vector<int64_t> offset = BlockOffset(mesh, type, device);
      const std::vector<int64_t> local = LocalShape(mesh, type);
      for (int64_t e = 0; e < elements; ++e) {
        const int64_t i0 = rank == 1 ? e : e / n, i1 = rank == 1 ? 0 : e % n;
        const bool in = i0 >= offset[0] && i0 < offset[0] + local[0] &&
                        (rank == 1 || (i1 >= offset[1] && i1 < offset[1] + local[1]));
        if (in) set[e] = true;
      }
    };
    for (int64_t d = 0; d < mesh.num_devices(); ++d) {
      const std::vector<int64_t> c = mesh.Coordinates(d);
      bool in_slice = true;
      for (int a = 0; a < axes; ++a) in_slice &= slot[a] < 0 || c[a] == coords[slot[a]];
      if (!in_slice) continue;
      mark(from, d, held);
      mark(to, d, needed);
    }
    int64_t want = 0;
    for (int64_t e = 0; e < elements; ++e) want += needed[e] && !held[e];
    EXPECT_EQ(lacking, want) << mesh.ToString() << " " << ToString(from) << " -> "
                             << ToString(to) << " slice of " << coords.size() << " axes";
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

// LackingElements (the lower bounds' walk) against the definition, a pass over every device
// with its blocks: on random meshes and types whose local sizes need not divide one another,
// by either walk, with and without the total.
TEST(LowerBounds, LackingElementsMatchDeviceWalk) {
  std::mt19937 rng(11);
  const char* names[] = {"x", "y", "z", "w"};
  const int64_t sizes[] = {1, 2, 2, 3, 4, 6};
  for (int trial = 0; trial < 500; ++trial) {
    const int axes = 1 + static_cast<int>(rng() % 4);
    std::vector<MeshAxis> mesh_axes;
    int64_t product = 1;
    for (int a = 0; a < axes; ++a) {
      mesh_axes.push_back({names[a], sizes[rng() % 6]});
      product *= mesh_axes.back().size;
    }
    const Mesh mesh = *Mesh::Create(mesh_axes);
    const int rank = 1 + static_cast<int>(rng() % 3);
    std::vector<int64_t> dim_sizes(rank);
    for (int64_t& size : dim_sizes) size = product * (1 + static_cast<int64_t>(rng() % 3));
    const DistType from = RandomShardedType(rng, names, axes, dim_sizes, 4);
    const DistType to = RandomShardedType(rng, names, axes, dim_sizes, 4);
    ASSERT_TRUE(Validate(mesh, from).ok() && Validate(mesh, to).ok());
    auto roles = [&](const DistType& type) {
      std::vector<internal::AxisRole> out(axes);
      for (int i = 0; i < rank; ++i) {
        int64_t stride = 1;
        const AxisList& dim = type.dims[i].axes;
        for (auto a = dim.rbegin(); a != dim.rend(); ++a) {
          out[mesh.AxisIndex(*a)] = internal::AxisRole{i, stride};
          stride *= mesh.AxisSize(*a);
        }
      }
      return out;
    };
    std::vector<int64_t> axis_sizes;
    for (const MeshAxis& axis : mesh_axes) axis_sizes.push_back(axis.size);
    const std::vector<int64_t> from_local = LocalShape(mesh, from), to_local = LocalShape(mesh, to);
    const int64_t target_elements = LocalElements(mesh, to);
    int64_t worst = 0;
    __int128 total = 0;
    for (int64_t d = 0; d < mesh.num_devices(); ++d) {
      const std::vector<int64_t> f = BlockOffset(mesh, from, d), t = BlockOffset(mesh, to, d);
      int64_t held = 1;
      for (int i = 0; i < rank; ++i) {
        held *= std::max<int64_t>(
            0, std::min(f[i] + from_local[i], t[i] + to_local[i]) - std::max(f[i], t[i]));
      }
      worst = std::max(worst, target_elements - held);
      total += target_elements - held;
    }
    const std::string where = mesh.ToString() + " " + ToString(from) + " -> " + ToString(to);
    for (const internal::LackingWalk walk :
         {internal::LackingWalk::kCheaper, internal::LackingWalk::kEveryTuple,
          internal::LackingWalk::kFixedTuples, internal::LackingWalk::kByDimension}) {
      for (const bool need_total : {true, false}) {
        const internal::Lacking got =
            internal::LackingElements(axis_sizes, roles(from), from_local, roles(to), to_local,
                                      target_elements, need_total, walk);
        EXPECT_EQ(got.worst, worst) << where << " walk " << static_cast<int>(walk);
        EXPECT_TRUE(got.total == (need_total ? total : -1))
            << where << " walk " << static_cast<int>(walk);
        // What searches charge for the walk: at least one tuple, and for the walk over every
        // tuple at most the tuples of the axes either type uses (fewer where a tuple of the
        // outer axes holds nothing, so the innermost axis is not walked).
        EXPECT_GE(got.visits, 1) << where << " walk " << static_cast<int>(walk);
        if (walk == internal::LackingWalk::kEveryTuple) {
          int64_t tuples = 1;
          for (const MeshAxis& axis : mesh_axes) {
            if (AxisUse(from, axis.name) >= 0 || AxisUse(to, axis.name) >= 0) tuples *= axis.size;
          }
          EXPECT_LE(got.visits, tuples) << where;
        }
        // The walk by dimension with the total visits every tuple of the linking axes (in a
        // dimension of each type, different ones) and per tuple every tuple of each linked
        // dimension's own axes, even where it reuses sums computed for an earlier tuple:
        // the searches charge by these visits.
        if (walk == internal::LackingWalk::kByDimension && need_total) {
          int64_t linking = 1;
          std::vector<int64_t> own(rank, 1);
          std::vector<bool> linked(rank, false);
          for (const MeshAxis& axis : mesh_axes) {
            const int i = AxisUse(from, axis.name), j = AxisUse(to, axis.name);
            if (axis.size == 1 || (i < 0 && j < 0)) continue;
            if (i >= 0 && j >= 0 && i != j) {
              linking *= axis.size;
              linked[i] = linked[j] = true;
            } else {
              own[i >= 0 ? i : j] *= axis.size;
            }
          }
          int64_t per_tuple = 0, once = 0;
          for (int i = 0; i < rank; ++i) (linked[i] ? per_tuple : once) += own[i];
          EXPECT_EQ(got.visits, linking * per_tuple + once) << where;
        }
      }
    }
  }
}

// MovedDevices on meshes of more than 4 096 devices, where it counts the solutions of the
// placement-key equation by merged runs of partial sums instead of walking the devices,
// against the definition: the devices whose block differs. Pairs of one local shape: axis
// orders shuffled within dimensions and equal-size axes swapped between them.
TEST(MovedDevices, CountsByPartialSumsOnLargeMeshes) {
  std::mt19937 rng(5);
  const char* names[] = {"a", "b", "c", "d", "e", "f", "g"};
  const int64_t sizes[] = {2, 2, 4, 3, 8};
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<MeshAxis> mesh_axes;
    int64_t product = 1;
    for (int a = 0; a < 7 && product <= 4096; ++a) {
      mesh_axes.push_back({names[a], sizes[rng() % 5]});
      product *= mesh_axes.back().size;
    }
    if (product <= 4096) continue;
    const Mesh mesh = *Mesh::Create(mesh_axes);
    const int rank = 2 + static_cast<int>(rng() % 2);
    DistType in;
    in.dims.resize(rank);
    for (const MeshAxis& axis : mesh_axes) in.dims[rng() % rank].axes.push_back(axis.name);
    for (Dim& dim : in.dims) dim.size = mesh.GroupSize(dim.axes) * (1 + rng() % 2);
    DistType out = in;
    for (int move = 0; move < 4; ++move) {
      Dim& dim = out.dims[rng() % rank];
      std::shuffle(dim.axes.begin(), dim.axes.end(), rng);
      Dim& other = out.dims[rng() % rank];
      if (dim.axes.empty() || other.axes.empty()) continue;
      AxisName& x = dim.axes[rng() % dim.axes.size()];
      AxisName& y = other.axes[rng() % other.axes.size()];
      if (mesh.AxisSize(x) == mesh.AxisSize(y)) std::swap(x, y);
    }
    ASSERT_TRUE(Validate(mesh, in).ok() && Validate(mesh, out).ok());
    ASSERT_EQ(LocalShape(mesh, in), LocalShape(mesh, out));
    int64_t moved = 0;
    for (int64_t device = 0; device < mesh.num_devices(); ++device) {
      if (BlockOffset(mesh, in, device) != BlockOffset(mesh, out, device)) ++moved;
    }
    EXPECT_EQ(internal::MovedDevices(mesh, in, out), moved)
        << mesh.ToString() << " " << ToString(in) << " -> " << ToString(out);
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// `optimal`'s charge per visit of the heuristic's walk (SearchOptions::walk_visit_work): on a
// mesh of many atoms the walks cost more than one unit per device, and the search must pay
// for them, with the same result.
TEST(WalkVisitWork, ChargesTheWalksWithoutChangingTheResult) {
  const Mesh mesh = M("a=2,b=2,c=2,d=2,e=2");
  const DistType from = test::T(mesh, "f32[1024{a,b,c},1024{d}]");
  const DistType to = test::T(mesh, "f32[1024{d,e},1024{a,b}]");
  SearchOptions options;
  options.max_local_bytes = std::max(LocalBytes(mesh, from), LocalBytes(mesh, to));
  const CostModel model;
  options.cost_model = &model;
  options.bytes_bound = true;
  SearchStats nominal, charged;
  absl::StatusOr<std::vector<Step>> a = SearchPlan(mesh, from, to, options, &nominal);
  options.walk_visit_work = 8;
  absl::StatusOr<std::vector<Step>> b = SearchPlan(mesh, from, to, options, &charged);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  EXPECT_GT(charged.work, nominal.work);
}

// Under a model whose slow axes the plan must cross with most of the data, the slice bound
// lets `optimal` prove its plan: suite case 43 (docs/benchmarks.md) gave up its work budget
// with the bound of the fastest bandwidth alone.
TEST(SliceBound, ProvesASwapAcrossSlowAxes) {
  const Mesh mesh = M("x=4,y=4,z=4");
  SynthesisOptions options;
  options.strategy = Strategy::kOptimal;
  options.cost_model = *ParseCostModel("x=1:300,y=5:100,z=20:25");
  absl::StatusOr<Plan> plan = Synthesize(mesh, test::T(mesh, "f32[512{z},512{y},512{x}]"),
                                         test::T(mesh, "f32[512{x},512{y},512{z}]"), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->optimality, Optimality::kProven);
  // The bound at the source is within 30 % of the optimum (271.7 against 355.5 µs); with the
  // fastest bandwidth alone it was 48.0 µs.
  EXPECT_GT(TimeLowerBoundUs(mesh, options.cost_model, test::T(mesh, "f32[512{z},512{y},512{x}]"),
                             test::T(mesh, "f32[512{x},512{y},512{z}]")),
            0.7 * plan->metrics.cost_us);
}

TEST(CrossingAlpha, CountsTheSlowestAxisEveryPlanCrosses) {
  const Mesh mesh = M("x=2,y=2,z=2");
  const CostModel model = *ParseCostModel("x=1:300,y=5:100,z=20:25");
  auto crossing = [&](const char* from, const char* to) {
    return internal::CrossingAlphaUs(mesh, model, test::T(mesh, from), test::T(mesh, to));
  };
  // y splits dimension 0, which the target keeps whole: every device needs rows of the other
  // y-slice. x moves between dimensions (crossed, but the fastest). z is replicated at first:
  // each z-slice holds everything.
  EXPECT_EQ(crossing("f32[96{y},3072{x}]", "f32[96,3072{z,x}]"), 5);
  // A pending sum over z needs the other z-slice's summand.
  EXPECT_EQ(crossing("f32[64,64] partial{z}", "f32[64{x},64]"), 20);
  EXPECT_EQ(crossing("f32[64,64] partial{z}", "f32[64,64] partial{z}"), 0);
  // Slicing crosses nothing; neither does keeping z in place while y leaves.
  EXPECT_EQ(crossing("f32[64,64]", "f32[64{z},64{y}]"), 0);
  EXPECT_EQ(crossing("f32[64{z,y},64]", "f32[64{z},64]"), 5);
  EXPECT_EQ(crossing("f32[64{z},64{y}]", "f32[64{z},64]"), 5);
  // z keeps its digit (the same stride in the same dimension) although x joins after it.
  EXPECT_EQ(crossing("f32[64{z},64]", "f32[64{z,x},64]"), 0);
  // ... but not when x joins before it.
  EXPECT_EQ(crossing("f32[64{z},64]", "f32[64{x,z},64]"), 20);
  // The time bound carries it: one alpha of z plus a transfer over z, of what z-slice 1
  // lacks (rows 16..31, for its x = 0 devices, only z-slice 0 holds) spread over its 4
  // devices, which exceeds the worst device's lacking bytes over the fastest axis (the
  // slice bound, search_bounds.h).
  EXPECT_GT(model.Axis("z").TransferUs(16 * 64 * 4 / 4),
            model.Fastest(mesh).TransferUs(16 * 64 * 4));
  EXPECT_DOUBLE_EQ(TimeLowerBoundUs(mesh, model, test::T(mesh, "f32[64{z},64]"),
                                    test::T(mesh, "f32[64{x,z},64]")),
                   20 + model.Axis("z").TransferUs(16 * 64 * 4 / 4));
}

// A permute's link read off its types (internal::ForcedPermuteLink, what StepUs prices
// unpaired permutes with under models whose axes differ) is exactly the price of
// MinimalPermute's pairs whenever it is given, on random permutes of random meshes under
// skewed models; and it is given often enough for the check to mean something.
TEST(ForcedPermuteLink, EqualsThePairedPrice) {
  std::mt19937 rng(23);
  const char* meshes[] = {"x=2,y=2,z=2",     "x=2,y=4,z=4", "x=4,y=2,z=8",
                          "a=2,b=2,c=2,d=2", "x=3,y=2,z=4", "a=4,b=2,c=2,d=4"};
  const char* models[] = {"x=1:300,y=5:100,z=20:25,a=1:300,b=5:100,c=20:25,d=20:25",
                          "x=20:25,y=1:300,z=5:100,a=5:100,b=20:25,c=1:300,d=1:300",
                          "x=1:300,y=20:300,z=5:25,a=1:25,b=20:300,c=5:100,d=1:300"};
  const int64_t sizes[] = {8, 16, 24, 48, 64};
  int given = 0, priced = 0;
  for (int iter = 0; iter < 3000 && priced < 600; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const CostModel model = ParseCostModel(models[rng() % std::size(models)])->OnAxesOf(mesh);
    const std::vector<int64_t> dims = RandomDims(rng, 3, sizes);
    std::optional<DistType> in = RandomType(rng, mesh, dims, rng() % 3 == 0, nullptr);
    if (!in) continue;
    // `in` with up to three swaps of equal-size axes, between two places it splits or with
    // an axis it leaves replicated: the same local shape and partial axes.
    DistType out = *in;
    for (int swap = 1 + static_cast<int>(rng() % 3); swap > 0; --swap) {
      std::vector<AxisName*> places;
      for (Dim& dim : out.dims) {
        for (AxisName& axis : dim.axes) places.push_back(&axis);
      }
      if (places.empty()) break;
      AxisName* a = places[rng() % places.size()];
      const MeshAxis& b = mesh.axes()[rng() % mesh.num_axes()];
      if (b.size != mesh.AxisSize(*a) || AxisUse(out, b.name) == kPartial) continue;
      const AxisName old = *a;
      for (AxisName* place : places) {
        if (*place == b.name) *place = old;
      }
      *a = b.name;
    }
    if (out == *in || !Validate(mesh, out).ok()) continue;
    ++priced;
    const double paired = model.StepCostUs(mesh, *in, MinimalPermute(mesh, *in, out, &model));
    if (std::optional<AxisCost> link = internal::ForcedPermuteLink(mesh, model, *in, out)) {
      ++given;
      EXPECT_EQ(link->alpha_us + link->TransferUs(static_cast<double>(LocalBytes(mesh, *in))),
                paired)
          << mesh.ToString() << " " << ToString(*in) << " -> " << ToString(out) << " under "
          << model.ToString();
    }
  }
  EXPECT_GE(priced, 300);
  EXPECT_GE(given, priced / 10);
  EXPECT_LT(given, priced);
}

// A* with the heuristic (whose latency part counts the slowest axis every plan crosses) finds
// plans exactly as cheap as Dijkstra without it, under models with slow axes, and the bound at
// the source never exceeds the optimum.
TEST(SearchBounds, HeuristicKeepsTheOptimumUnderSkewedModels) {
  std::mt19937 rng(29);
  const char* meshes[] = {"x=2,y=2", "x=4,y=2", "x=2,y=2,z=2", "x=2,y=3,z=2", "x=1,y=2,z=4",
                          "a=2,b=2,c=2"};
  const int64_t sizes[] = {8, 16, 24, 64};
  const CostModel models[] = {*ParseCostModel("x=1:300,y=5:100,z=20:25,a=1:300,b=20:25,c=5:100"),
                              *ParseCostModel("x=20:25,y=1:300,z=5:100,a=5:100,b=1:300,c=20:25")};
  int compared = 0, crossing = 0;
  for (int iter = 0; iter < 3000 && compared < 300; ++iter) {
    const Mesh mesh = M(meshes[rng() % std::size(meshes)]);
    const CostModel model = models[rng() % 2].OnAxesOf(mesh);
    const std::vector<int64_t> dims = RandomDims(rng, 3, sizes);
    std::optional<DistType> from = RandomType(rng, mesh, dims, rng() % 2 == 0, nullptr);
    if (!from) continue;
    std::optional<DistType> to = RandomType(rng, mesh, dims, false, nullptr);
    if (!to || from == to) continue;
    SearchOptions options;
    options.max_local_bytes = std::max(LocalBytes(mesh, *from), LocalBytes(mesh, *to));
    options.max_states = 20000;
    options.cost_model = &model;
    absl::StatusOr<std::vector<Step>> astar = SearchPlan(mesh, *from, *to, options);
    options.use_heuristic = false;
    absl::StatusOr<std::vector<Step>> dijkstra = SearchPlan(mesh, *from, *to, options);
    if (!astar.ok() || !dijkstra.ok()) continue;
    ++compared;
    const std::string where =
        absl::StrCat(mesh.ToString(), " ", ToString(*from), " -> ", ToString(*to));
    const double us = ComputeMetrics(mesh, *from, *astar, model).cost_us;
    EXPECT_EQ(us, ComputeMetrics(mesh, *from, *dijkstra, model).cost_us) << where;
    // cost_us is rounded to whole nanoseconds.
    EXPECT_LE(TimeLowerBoundUs(mesh, model, *from, *to), us + 5e-4) << where;
    if (internal::CrossingAlphaUs(mesh, model, *from, *to) > 0) ++crossing;
  }
  EXPECT_GE(compared, 200);
  EXPECT_GE(crossing, 100);
}

// g(m) of MiddleGrowthBound by hand (alpha 5 µs, B/bw 10 µs: f(k) = 5(k-1) + 10(k-1)/k), its
// recursion g(m) <= f(k) + g(ceil(m/k)) (what makes it consistent), and monotonicity.
TEST(MiddleGrowthBound, SmallestCostOfGrowingReach) {
  internal::MiddleGrowthBound g(5, 1e-3, 1e4);
  auto f = [](double k) { return 5 * (k - 1) + 10 * (k - 1) / k; };
  const double tol = 1e-9;
  EXPECT_EQ(g(1), 0);
  EXPECT_NEAR(g(2), f(2), tol);                       // 10
  EXPECT_NEAR(g(3), f(3), tol);                       // 16.67 < f(2) + f(2) = 20
  EXPECT_NEAR(g(4), 2 * f(2), tol);                   // 20 < f(4) = 22.5
  EXPECT_NEAR(g(16), 4 * f(2), tol);                  // four doublings
  double previous = 0;
  for (int64_t m = 1; m <= 300; ++m) {
    EXPECT_GE(g(m) + tol, previous) << m;
    previous = g(m);
    for (int64_t k = 2; k <= m; ++k) EXPECT_LE(g(m), f(k) + g((m + k - 1) / k) + tol) << m;
  }
  // Beyond the memo's range it answers g(kMaxPieces): still a lower bound.
  EXPECT_EQ(g(int64_t{1} << 40), g(internal::MiddleGrowthBound::kMaxPieces));
}

// g(m) is the recursion's minimum over every k, though it visits only the smallest k of each
// rest ceil(m / k): checked against the plain recursion, latency- and bandwidth-dominated.
TEST(MiddleGrowthBound, EqualsThePlainRecursion) {
  for (const std::pair<double, double>& costs :
       {std::pair{5.0, 10.0}, {0.0, 1000.0}, {100.0, 0.0}, {1.0, 3.0}}) {
    // (Not a structured binding: clang 14 cannot capture one in the lambda below.)
    const double alpha = costs.first, b = costs.second;
    internal::MiddleGrowthBound g(alpha, 1e-3, b * 1e3);
    auto f = [&](double k) { return (k - 1) * alpha + (k - 1) / k * b; };
    std::vector<double> plain(2001, 0.0);
    for (int64_t m = 2; m <= 2000; ++m) {
      plain[m] = f(m);
      for (int64_t k = 2; k < m; ++k) plain[m] = std::min(plain[m], f(k) + plain[(m + k - 1) / k]);
      EXPECT_NEAR(g(m), plain[m], 1e-9 * (1 + plain[m])) << "m=" << m << " alpha=" << alpha;
    }
  }
}

// LinkOrder against the link order spelled out: a link costs the Slower of its differing
// axes, ranked by alpha, then bandwidth (larger first), then the number of differing axes,
// and the first holder wins ties. Uniform models with small axes take the packed path, and
// the 2^13-sized axes of the last draws do not fit a word.
TEST(LinkOrder, PicksTheCheapestLinkAndTheFirstOfEquals) {
  std::mt19937 rng(7);
  const AxisCost costs[] = {{1, 300}, {5, 100}, {20, 25}, {5, 300}, {1, 100}};
  for (int draw = 0; draw < 600; ++draw) {
    const int k = 1 + static_cast<int>(rng() % 5);
    const bool uniform = draw % 2 == 0;
    const bool huge = draw >= 500;
    std::vector<int64_t> sizes(k);
    std::vector<AxisCost> axis_cost(k);
    for (int a = 0; a < k; ++a) {
      sizes[a] = huge ? int64_t{1} << 13 : int64_t{1} + rng() % 6;
      axis_cost[a] = uniform ? costs[0] : costs[rng() % 5];
    }
    internal::LinkOrder links(sizes, axis_cost.data());
    const int devices = 2 + static_cast<int>(rng() % 20);
    std::vector<std::vector<int64_t>> coords(devices, std::vector<int64_t>(k));
    for (std::vector<int64_t>& c : coords) {
      // Few distinct values per axis, so that equal links are common.
      for (int a = 0; a < k; ++a)
        c[a] = static_cast<int64_t>(rng() % std::min<int64_t>(sizes[a], 3));
      links.Add(c.data());
    }
    auto rank = [&](int64_t s, int64_t t) {
      std::optional<AxisCost> link;
      int differing = 0;
      for (int a = 0; a < k; ++a) {
        if (coords[s][a] == coords[t][a]) continue;
        link = link ? Slower(*link, axis_cost[a]) : axis_cost[a];
        ++differing;
      }
      return std::make_tuple(link->alpha_us, -link->gbps, differing);
    };
    const int64_t target = devices - 1;
    std::vector<int64_t> sources;
    for (int64_t d = 0; d < target; ++d) {
      if (coords[d] != coords[target] && rng() % 3 != 0) sources.push_back(d);
    }
    if (sources.empty()) continue;
    size_t expected = 0;
    for (size_t i = 1; i < sources.size(); ++i) {
      if (rank(sources[i], target) < rank(sources[expected], target)) expected = i;
    }
    EXPECT_EQ(links.CheapestSource(sources, target), expected) << "draw " << draw;
  }
}

// `normal`'s plan for a case given as mesh, from and to text, with the prime-factor refinement
// Synthesize hands its final check (CheckSynthesizedPlan's `finest`).
struct CheckedCase {
  Mesh mesh;
  Plan plan;
  std::optional<AxisRefinement> fine;
};
CheckedCase SynthesizeWithFinest(const char* mesh_text, const char* from_text,
                                 const char* to_text) {
  CheckedCase c{M(mesh_text), Plan{}, std::nullopt};
  const DistType from = test::T(c.mesh, from_text), to = test::T(c.mesh, to_text);
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, from, to, SynthesisOptions{});
  EXPECT_TRUE(plan.ok()) << from_text << ": " << plan.status();
  if (plan.ok()) c.plan = *std::move(plan);
  absl::StatusOr<AxisRefinement> fine =
      AxisRefinement::Create(c.mesh, SubAxisRefs(c.mesh, from, to), /*prime_factors=*/true);
  EXPECT_TRUE(fine.ok()) << fine.status();
  if (fine.ok()) c.fine = *std::move(fine);
  return c;
}

TEST(CheckSynthesizedPlan, AgreesWithCheckPlanOnMutatedPermutes) {
  std::mt19937 rng(11);
  const char* cases[][3] = {
      {"x=2,y=2,z=2", "f32[64{x},64{y},64{z}]", "f32[64{z},64{x},64{y}]"},
      {"x=4,y=4,z=4", "f32[512{z},512{y},512{x}]", "f32[512{x},512{y},512{z}]"},
      {"x=2,y=4,z=4", "f32[1024{x,y},1024{z}]", "f32[1024{z},1024{x,y}]"},
      {"x=2,y=4", "f32[32,32] partial{x,y}", "f32[32,32] partial{y,x}"},
      {"x=2,y=4", "f32[8{x},8] partial{y}", "f32[8,8{x}] partial{y}"},
      {"x=4,y=4", "f32[1024{x},1024] ", "f32[1024{y},1024]"},
  };
  int permutes = 0;
  for (const auto& c : cases) {
    const auto [mesh, plan, fine] = SynthesizeWithFinest(c[0], c[1], c[2]);
    ASSERT_TRUE(fine.has_value());
    EXPECT_TRUE(internal::CheckSynthesizedPlan(plan).ok());
    EXPECT_TRUE(internal::CheckSynthesizedPlan(plan, &*fine).ok());
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      if (plan.steps[s].op.kind != CollectiveKind::kCollectivePermute) continue;
      ++permutes;
      for (int trial = 0; trial < 50; ++trial) {
        Plan bad = plan;
        auto& pairs = bad.steps[s].op.source_target_pairs;
        const int64_t n = mesh.num_devices();
        switch (trial % 3) {
          case 0:  // Swap the targets of two pairs (still a valid permutation shape).
            if (pairs.size() >= 2) std::swap(pairs[rng() % pairs.size()].second,
                                             pairs[rng() % pairs.size()].second);
            break;
          case 1:  // Drop a pair.
            if (!pairs.empty()) pairs.erase(pairs.begin() + rng() % pairs.size());
            break;
          default:  // Redirect a source.
            if (!pairs.empty()) pairs[rng() % pairs.size()].first = static_cast<int64_t>(rng() % n);
            break;
        }
        bad.metrics = ComputeMetrics(mesh, bad.source, bad.steps, bad.cost_model);
        const bool full = CheckPlan(bad).ok();
        const absl::Status fast = internal::CheckSynthesizedPlan(bad);
        EXPECT_EQ(full, fast.ok()) << c[0] << " " << c[1] << " -> " << c[2] << ": " << fast;
        EXPECT_EQ(full, internal::CheckSynthesizedPlan(bad, &*fine).ok()) << c[0] << " " << c[1];
      }
    }
  }
  EXPECT_GE(permutes, 4);
}

// The check on the refinement Synthesize searched on (`finest`) gives the verdicts of the
// check on the plan's own refinement and of CheckPlan, on plans naming sub-axes whose steps'
// types are swapped for their neighbours' (ill-typed plans) or left alone.
TEST(CheckSynthesizedPlan, OnTheFinestRefinementAgreesOnSubAxisPlans) {
  const char* cases[][3] = {
      {"x=2,y=2,z=4", "f32[64{x},64{y},64{z}]", "f32[64{z},64{x},64{y}]"},
      {"x=4,y=4,z=4", "f32[4096{x,y},4096{z}]", "f32[4096,4096{x,y,z}]"},
      {"x=4,y=4,z=4", "f32[64,64] partial{x}", "f32[64,64]"},
      {"x=4,y=2,z=4", "f32[256{x,y},256{z}]", "f32[256{z:(1)2,y},256{x,z:(2)2}]"},
      {"x=12,y=2", "f32[48{x:(1)4},6] partial{y}", "f32[48{y},6{x:(4)3}]"},
  };
  int with_sub_axes = 0, mutated = 0;
  for (const auto& c : cases) {
    const auto [mesh, plan, fine] = SynthesizeWithFinest(c[0], c[1], c[2]);
    ASSERT_TRUE(fine.has_value());
    if (HasSubAxes(mesh, plan.source, plan.steps)) ++with_sub_axes;
    EXPECT_TRUE(internal::CheckSynthesizedPlan(plan, &*fine).ok()) << c[1];
    for (size_t s = 0; s + 1 < plan.steps.size(); ++s) {
      Plan bad = plan;
      std::swap(bad.steps[s].type, bad.steps[s + 1].type);
      bad.metrics = ComputeMetrics(mesh, bad.source, bad.steps, bad.cost_model);
      const bool full = CheckPlan(bad).ok();
      EXPECT_EQ(full, internal::CheckSynthesizedPlan(bad).ok()) << c[1] << " step " << s;
      EXPECT_EQ(full, internal::CheckSynthesizedPlan(bad, &*fine).ok()) << c[1] << " step " << s;
      if (!full) ++mutated;
    }
    // A refinement of another mesh is not used.
    const absl::StatusOr<AxisRefinement> other =
        AxisRefinement::Create(M("x=2,y=2"), {}, /*prime_factors=*/true);
    EXPECT_TRUE(internal::CheckSynthesizedPlan(plan, &*other).ok()) << c[1];
  }
  EXPECT_GE(with_sub_axes, 3);
  EXPECT_GE(mutated, 4);
}

// The check's last test, that the plan ends at its target: on the types as written when they
// are equal, else on the refinement, where a spelling of the same atoms passes and another
// type fails.
TEST(CheckSynthesizedPlan, EndsAtTheTargetUpToSpelling) {
  const auto [mesh, plan, fine] =
      SynthesizeWithFinest("x=2,y=4,z=4", "f32[1024{x,y},1024{z}]", "f32[1024{z},1024{x,y}]");
  ASSERT_TRUE(fine.has_value());
  ASSERT_FALSE(plan.steps.empty());
  Plan respelled = plan;
  respelled.target = test::T(mesh, "f32[1024{z},1024{x,y:(1)2,y:(2)2}]");
  EXPECT_TRUE(internal::CheckSynthesizedPlan(respelled).ok());
  EXPECT_TRUE(internal::CheckSynthesizedPlan(respelled, &*fine).ok());
  Plan elsewhere = plan;
  elsewhere.target = test::T(mesh, "f32[1024{z},1024{y,x}]");
  for (const AxisRefinement* finest : {static_cast<const AxisRefinement*>(nullptr), &*fine}) {
    const absl::Status s = internal::CheckSynthesizedPlan(elsewhere, finest);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("plan ends at"), std::string_view::npos) << s;
  }
}

}  // namespace
}  // namespace reshard
