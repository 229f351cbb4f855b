// synth_latency — Google Benchmark of Synthesize latency for `normal` and `optimal`.
//
//   synth_latency [--benchmark_filter=...]
//
// BM_Case/<strategy>/<n>: one case of bench/cases.txt (n = its position), mean latency.
// BM_PermutePricing/<n>: see below.
// BM_Common/<n>: see below.
// BM_SearchUnit/<search>/<n>: see below.
// BM_Production/<n>: see below.
// BM_Percentiles/<strategy>/<axes>: every case whose mesh has `axes` axes (0 = all cases),
// each call timed individually; counters p50_us, p99_us and max_us over all calls, and
// case_min_p50_us / case_min_max_us, the median and the largest of the cases' fastest calls;
// for `optimal`, proven: the cases whose plan it proved optimal (Plan::optimality).
// BM_PercentilesSkewed/<strategy>/<axes>: the same under a heterogeneous model (SkewedModel).
// BM_PercentilesNamed/normal/<axes>: the same with the meshes' axes named as partitioners name
// them (NamedCases).
// BM_PlanCacheHit/<axes>: see below.
// --default_malloc: measure under glibc's default allocator settings (see main).
#include <algorithm>
#include <chrono>
#include <cstdio>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string>
#include <string_view>
#include <vector>

#include "bench/case_file.h"
#include "benchmark/benchmark.h"
#include "synth/plan_cache.h"
#include "synth/search.h"
#include "synth/synthesize.h"

namespace reshard {
namespace {

struct Case {
  Mesh mesh;
  DistType from, to;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case>* cases = [] {
    auto* out = new std::vector<Case>;
    const absl::StatusOr<std::vector<bench::CaseLine>> lines =
        bench::ReadCaseLines(RESHARD_BENCH_CASES);
    if (!lines.ok()) {
      std::fprintf(stderr, "synth_latency: %s\n", std::string(lines.status().message()).c_str());
      return out;
    }
    for (const bench::CaseLine& line : *lines) {
      absl::StatusOr<Mesh> mesh = ParseMesh(line.mesh);
      if (!mesh.ok()) continue;
      absl::StatusOr<DistType> from = ParseValidType(*mesh, line.from);
      absl::StatusOr<DistType> to = ParseValidType(*mesh, line.to);
      if (from.ok() && to.ok()) out->push_back(Case{*mesh, *from, *to});
    }
    return out;
  }();
  return *cases;
}

// Cases() with each mesh's axes renamed by position to data, fsdp, tensor and pipe (and
// sub-axis references with them). The suite's one-letter names understate what lookups by
// name cost a partitioner: the prime-factor atoms of these names (`tensor:(1)2`) are 8 bytes
// or longer (docs/benchmarks.md, "Where the targets stand").
const std::vector<Case>& NamedCases() {
  static const std::vector<Case>* cases = [] {
    constexpr const char* kNames[] = {"data", "fsdp", "tensor", "pipe"};
    auto* out = new std::vector<Case>;
    for (const Case& c : Cases()) {
      if (c.mesh.num_axes() > static_cast<int>(std::size(kNames))) continue;
      std::vector<MeshAxis> axes = c.mesh.axes();
      for (size_t a = 0; a < axes.size(); ++a) axes[a].name = kNames[a];
      absl::StatusOr<Mesh> mesh = Mesh::Create(axes);
      if (!mesh.ok()) continue;
      auto rename = [&](AxisName& axis) {
        const std::string_view text = axis;
        const size_t colon = text.find(':');
        const int a = c.mesh.AxisIndex(text.substr(0, colon));
        axis = kNames[a] + std::string(colon == std::string_view::npos ? "" : text.substr(colon));
      };
      auto renamed = [&](DistType type) {
        for (Dim& dim : type.dims) std::for_each(dim.axes.begin(), dim.axes.end(), rename);
        std::for_each(type.partial.begin(), type.partial.end(), rename);
        return type;
      };
      out->push_back(Case{*mesh, renamed(c.from), renamed(c.to)});
    }
    return out;
  }();
  return *cases;
}

void BM_Case(benchmark::State& state) {
  const Case& c = Cases().at(state.range(1));
  SynthesisOptions options;
  options.strategy = static_cast<Strategy>(state.range(0));
  for (auto _ : state) {
    absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
    benchmark::DoNotOptimize(plan);
  }
}

// A fast, a medium and a slow axis, by position (the fourth as slow as the third): the model of
// gap-survey --axis-cost 'x=1:300,y=5:100,z=20:25' (docs/benchmarks.md), on any axis names.
CostModel SkewedModel(const Mesh& mesh) {
  const AxisCost costs[] = {{1, 300}, {5, 100}, {20, 25}};
  CostModel model;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    model.SetAxis(mesh.axes()[a].name, costs[std::min(a, 2)]);
  }
  return model;
}

void BM_Percentiles(benchmark::State& state) {
  SynthesisOptions options;
  options.strategy = static_cast<Strategy>(state.range(0));
  const int axes = static_cast<int>(state.range(1));
  const bool skewed = state.range(2) != 0;
  const std::vector<Case>& cases = state.range(3) != 0 ? NamedCases() : Cases();
  std::vector<double> samples;
  std::vector<double> fastest;  // Per case, its fastest call.
  int proven = 0;  // Plans of the last pass with Plan::optimality kProven.
  for (auto _ : state) {
    size_t k = 0;
    proven = 0;
    for (const Case& c : cases) {
      if (axes != 0 && c.mesh.num_axes() != axes) continue;
      if (skewed) options.cost_model = SkewedModel(c.mesh);
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
      auto end = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(plan);
      if (plan.ok() && plan->optimality == Optimality::kProven) ++proven;
      const double us = std::chrono::duration<double, std::micro>(end - start).count();
      samples.push_back(us);
      if (k == fastest.size()) fastest.push_back(us);
      fastest[k] = std::min(fastest[k], us);
      ++k;
    }
  }
  auto at = [](std::vector<double>& v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[static_cast<size_t>(q * (v.size() - 1))];
  };
  state.counters["p50_us"] = at(samples, 0.5);
  state.counters["p99_us"] = at(samples, 0.99);
  state.counters["max_us"] = samples.empty() ? 0.0 : samples.back();
  state.counters["calls"] = static_cast<double>(samples.size());
  // `optimal` only (other strategies claim nothing): how many of the cases it proved.
  if (options.strategy == Strategy::kOptimal) state.counters["proven"] = proven;
  // The same over each case's fastest call: what the code costs without the machine's noise
  // (preemption, other load), for comparing two builds.
  state.counters["case_min_p50_us"] = at(fastest, 0.5);
  state.counters["case_min_max_us"] = fastest.empty() ? 0.0 : fastest.back();
}

// BM_PlanCacheHit/<axes>: PlanCache::Synthesize on a cache already holding `normal`'s plans
// for every case whose mesh has `axes` axes (0 = all cases), one case per iteration in turn:
// the latency of a repeated resharding (synth/plan_cache.h), the key's encoding and lookup.
void BM_PlanCacheHit(benchmark::State& state) {
  const int axes = static_cast<int>(state.range(0));
  std::vector<const Case*> cases;
  for (const Case& c : Cases()) {
    if (axes == 0 || c.mesh.num_axes() == axes) cases.push_back(&c);
  }
  PlanCache cache;
  for (const Case* c : cases) benchmark::DoNotOptimize(cache.Synthesize(c->mesh, c->from, c->to));
  size_t k = 0;
  for (auto _ : state) {
    const Case& c = *cases[k];
    k = k + 1 == cases.size() ? 0 : k + 1;
    PlanCache::Result plan = cache.Synthesize(c.mesh, c.from, c.to);
    benchmark::DoNotOptimize(plan);
  }
  state.counters["misses"] = static_cast<double>(cache.stats().misses);
}

// BM_PermutePricing/<n>: one exact permute pricing as the searches do it under a non-uniform
// model (MinimalPermute + StepCostUs); counter ns_per_unit = time / PermutePricingWork, the
// work units the searches charge for it (docs/synthesis.md, "Bounded work on large meshes").
struct PricingCase {
  const char* mesh;
  const char* from;
  const char* to;
  int64_t holders;  // Devices holding each placement of `from` (its replicated axes).
};
const PricingCase kPricing[] = {
    {"a=2,b=2,c=2,d=2,e=2,f=2", "f32[64{a}]", "f32[64{b}]", 32},
    {"a=8,b=8,c=8", "f32[64{a}]", "f32[64{b}]", 64},
    {"x=2,x2=2,y=2,y2=2,z=3,w=2,w2=2", "f32[16{x,x2,y,y2},1] partial{z}",
     "f32[16{y,y2,x,x2},1] partial{z}", 4},
    {"a=4,b=4,c=4,d=4,e=4,f=4", "f32[64{a,b}]", "f32[64{b,c}]", 256},
    {"a=4,b=4,c=4,d=4,e=4,f=4", "f32[64{a},64{c,d}]", "f32[64{b},64{d,c}]", 64},
};

void BM_PermutePricing(benchmark::State& state) {
  const PricingCase& c = kPricing[state.range(0)];
  const Mesh mesh = *ParseMesh(c.mesh);
  const DistType from = *ParseValidType(mesh, c.from);
  const DistType to = *ParseValidType(mesh, c.to);
  // Distinct alphas and bandwidths per axis, so that the greedy pairing runs.
  CostModel model;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    model.SetAxis(mesh.axes()[a].name, AxisCost{1.0 + a, 400.0 / (1 + a)});
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.StepCostUs(mesh, from, MinimalPermute(mesh, from, to, &model)));
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() -
                                                             start).count();
  const double units = static_cast<double>(PermutePricingWork(mesh, c.holders));
  state.counters["units"] = units;
  state.counters["ns_per_unit"] = ns / (static_cast<double>(state.iterations()) * units);
}

// BM_Common/<n>: `normal` on a reshard partitioners issue most (a reduction, a gather, a
// dimension swap, the identity) on a 3-axis mesh whose axes split into atoms, so that Synthesize
// may run its pass on the prime-factor refinement: mean latency.
struct CommonCase {
  const char* from;
  const char* to;
};
const char kCommonMesh[] = "x=4,y=4,z=4";
const CommonCase kCommon[] = {
    {"f32[64,64] partial{x}", "f32[64,64]"},     // all_reduce
    {"f32[64,64] partial{x}", "f32[64{x},64]"},  // reduce_scatter
    {"f32[64{x},64]", "f32[64,64]"},             // all_gather
    {"f32[64{x},64{y}]", "f32[64{y},64{x}]"},    // swap
    {"f32[64{x},64{y}]", "f32[64{x},64{y}]"},    // identity (the shardings agree already)
};

void BM_Common(benchmark::State& state) {
  const CommonCase& c = kCommon[state.range(0)];
  const Mesh mesh = *ParseMesh(kCommonMesh);
  const DistType from = *ParseValidType(mesh, c.from);
  const DistType to = *ParseValidType(mesh, c.to);
  for (auto _ : state) {
    absl::StatusOr<Plan> plan = Synthesize(mesh, from, to, SynthesisOptions());
    benchmark::DoNotOptimize(plan);
  }
}

// BM_Production/<n>: `normal` on production-shaped reshards of large meshes (a 4-axis
// data/fsdp/tensor/pipe mesh of 4 096 devices, 1 024 and 32 768 devices on 3 axes), where the
// passes over devices and permute pairs weigh more than the searches: mean latency, and the
// plan's modeled cost as a counter (to tell a faster build from a different plan).
const struct {
  const char* mesh;
  const char* from;
  const char* to;
} kProduction[] = {
    {"data=8,fsdp=16,tensor=8,pipe=4", "bf16[16384{fsdp},8192{tensor}]",
     "bf16[16384{tensor},8192{fsdp}]"},
    {"data=8,fsdp=16,tensor=8,pipe=4", "bf16[32,4096{tensor},16384{fsdp}] partial{data}",
     "bf16[32{data},4096{fsdp},16384{tensor}]"},
    {"data=8,fsdp=16,tensor=8,pipe=4", "f32[8192{fsdp,tensor},8192]",
     "f32[8192{tensor},8192{fsdp}]"},
    {"x=16,y=16,z=4", "bf16[8192{x,y},8192]", "bf16[8192{y},8192{x,z}]"},
    {"x=32,y=32,z=32", "f32[32768{x,y},32768{z}]", "f32[32768{z},32768{x,y}]"},
};

void BM_Production(benchmark::State& state) {
  const auto& c = kProduction[state.range(0)];
  const Mesh mesh = *ParseMesh(c.mesh);
  const DistType from = *ParseValidType(mesh, c.from);
  const DistType to = *ParseValidType(mesh, c.to);
  double cost_us = 0;
  for (auto _ : state) {
    absl::StatusOr<Plan> plan = Synthesize(mesh, from, to, SynthesisOptions());
    if (plan.ok()) cost_us = plan->metrics.cost_us;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["cost_us"] = cost_us;
}

// BM_SearchUnit/<search>/<n>: one `optimal`-style search (time mode, byte bound) on a mesh of
// 14 axes of size 2, cut by a work budget of 2^24 units, on compact types (search 0, SearchPlan)
// or on DistTypes (1, internal::SearchPlanOnDistTypes, which SearchPlan runs where types do
// not fit the compact encoding); counter ns_per_unit = time / work. Their ratio is
// kDistTypeWorkFactor's (synth/search.cc).
const char kUnitMesh[] = "a=2,b=2,c=2,d=2,e=2,f=2,g=2,h=2,i=2,j=2,k=2,l=2,m=2,n=2";
const CommonCase kUnit[] = {
    {"bf16[262144{a,b,c,d},131072]", "bf16[262144{e,f},131072{a,b,c}]"},
    {"bf16[262144{a,b},131072{c,d,e}]", "bf16[262144{c,d,e,f},131072{a}]"},
};

void BM_SearchUnit(benchmark::State& state) {
  const CommonCase& c = kUnit[state.range(1)];
  const Mesh mesh = *ParseMesh(kUnitMesh);
  const DistType from = *ParseValidType(mesh, c.from);
  const DistType to = *ParseValidType(mesh, c.to);
  const CostModel model;
  SearchOptions options;
  options.max_local_bytes = std::max(LocalBytes(mesh, from), LocalBytes(mesh, to));
  options.cost_model = &model;
  options.bytes_bound = true;
  options.max_work = int64_t{1} << 24;
  int64_t work = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    SearchStats stats;
    absl::StatusOr<std::vector<Step>> steps =
        state.range(0) == 0 ? SearchPlan(mesh, from, to, options, &stats)
                            : internal::SearchPlanOnDistTypes(mesh, from, to, options, &stats);
    benchmark::DoNotOptimize(steps);
    work += stats.work;
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  state.counters["ns_per_unit"] = ns / static_cast<double>(work);
}

// Representative cases: 1-D a2a, 2-D swap, 2-D partial, paper 3-D example, 3-D swap,
// 4-D reversal, 4-D 256-device move.
const int kRepresentative[] = {0, 12, 17, 46, 33, 48, 61};

void Register() {
  for (int n = 0; n < static_cast<int>(std::size(kPricing)); ++n) {
    benchmark::RegisterBenchmark("BM_PermutePricing", BM_PermutePricing)
        ->Arg(n)
        ->Unit(benchmark::kMicrosecond);
  }
  for (int n = 0; n < static_cast<int>(std::size(kCommon)); ++n) {
    benchmark::RegisterBenchmark("BM_Common", BM_Common)->Arg(n)->Unit(benchmark::kMicrosecond);
  }
  for (int n = 0; n < static_cast<int>(std::size(kProduction)); ++n) {
    benchmark::RegisterBenchmark("BM_Production", BM_Production)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond);
  }
  for (int axes : {0, 3}) {
    benchmark::RegisterBenchmark("BM_PlanCacheHit", BM_PlanCacheHit)
        ->Arg(axes)
        ->Unit(benchmark::kMicrosecond);
  }
  for (int search = 0; search < 2; ++search) {
    for (int n = 0; n < static_cast<int>(std::size(kUnit)); ++n) {
      benchmark::RegisterBenchmark("BM_SearchUnit", BM_SearchUnit)
          ->Args({search, n})
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (Strategy s : {Strategy::kNormal, Strategy::kOptimal}) {
    for (int n : kRepresentative) {
      if (n >= static_cast<int>(Cases().size())) continue;
      benchmark::RegisterBenchmark(
          (std::string("BM_Case/") + std::string(StrategyName(s)) + "/" + std::to_string(n))
              .c_str(),
          BM_Case)
          ->Args({static_cast<int>(s), n})
          ->Unit(s == Strategy::kNormal ? benchmark::kMicrosecond : benchmark::kMillisecond);
    }
    for (bool skewed : {false, true}) {
      for (int axes : {0, 1, 2, 3, 4}) {
        benchmark::RegisterBenchmark(
            (std::string(skewed ? "BM_PercentilesSkewed/" : "BM_Percentiles/") +
             std::string(StrategyName(s)) + "/" + std::to_string(axes))
                .c_str(),
            BM_Percentiles)
            ->Args({static_cast<int>(s), axes, skewed, /*named=*/false})
            ->Unit(benchmark::kMillisecond)
            ->Iterations(s == Strategy::kNormal ? (skewed ? 20 : 200) : (skewed ? 1 : 3));
      }
    }
  }
  for (int axes : {0, 3}) {
    benchmark::RegisterBenchmark(("BM_PercentilesNamed/normal/" + std::to_string(axes)).c_str(),
                                 BM_Percentiles)
        ->Args({static_cast<int>(Strategy::kNormal), axes, /*skewed=*/false, /*named=*/true})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(200);
  }
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) {
  // --default_malloc: leave glibc's allocator as it is (below).
  bool default_malloc = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--default_malloc") continue;
    default_malloc = true;
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    break;
  }
#ifdef __GLIBC__
  // A compiler calls the synthesizer from a long-lived process whose heap is warm. In this
  // small one, glibc would hand the top of the heap back to the kernel after a call on a
  // large mesh (its temporaries dominate the heap) and the next call would fault it back in,
  // page by page: which depends on whether some earlier block crossed glibc's adaptive mmap
  // threshold, not on the code measured (docs/benchmarks.md, "Allocator").
  if (!default_malloc) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }
#endif
  benchmark::Initialize(&argc, argv);
  reshard::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
