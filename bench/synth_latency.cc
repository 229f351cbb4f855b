// synth_latency — Google Benchmark of Synthesize latency for `normal` and `optimal`.
//
//   synth_latency [--benchmark_filter=...]
//
// BM_Case/<strategy>/<n>: one case of bench/cases.txt (n = its position), mean latency.
// BM_Percentiles/<strategy>/<axes>: every case whose mesh has `axes` axes (0 = all cases),
// each call timed individually; counters p50_us, p99_us and max_us over all calls.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmark/benchmark.h"
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
    std::ifstream in(RESHARD_BENCH_CASES);
    std::string line;
    while (std::getline(in, line)) {
      std::string body(absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
      if (body.empty()) continue;
      std::vector<std::string> parts = absl::StrSplit(body, ';');
      if (parts.size() != 3) continue;
      absl::StatusOr<Mesh> mesh = ParseMesh(std::string(absl::StripAsciiWhitespace(parts[0])));
      if (!mesh.ok()) continue;
      absl::StatusOr<DistType> from =
          ParseValidType(*mesh, std::string(absl::StripAsciiWhitespace(parts[1])));
      absl::StatusOr<DistType> to =
          ParseValidType(*mesh, std::string(absl::StripAsciiWhitespace(parts[2])));
      if (from.ok() && to.ok()) out->push_back(Case{*mesh, *from, *to});
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

void BM_Percentiles(benchmark::State& state) {
  SynthesisOptions options;
  options.strategy = static_cast<Strategy>(state.range(0));
  const int axes = static_cast<int>(state.range(1));
  std::vector<double> samples;
  for (auto _ : state) {
    for (const Case& c : Cases()) {
      if (axes != 0 && c.mesh.num_axes() != axes) continue;
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
      auto end = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(plan);
      samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
  }
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    return samples.empty() ? 0.0 : samples[static_cast<size_t>(q * (samples.size() - 1))];
  };
  state.counters["p50_us"] = at(0.5);
  state.counters["p99_us"] = at(0.99);
  state.counters["max_us"] = samples.empty() ? 0.0 : samples.back();
  state.counters["calls"] = static_cast<double>(samples.size());
}

// Representative cases: 1-D a2a, 2-D swap, 2-D partial, paper 3-D example, 3-D swap,
// 4-D reversal, 4-D 256-device move.
const int kRepresentative[] = {0, 12, 17, 46, 33, 48, 61};

void Register() {
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
    for (int axes : {0, 1, 2, 3, 4}) {
      benchmark::RegisterBenchmark(
          (std::string("BM_Percentiles/") + std::string(StrategyName(s)) + "/" +
           std::to_string(axes))
              .c_str(),
          BM_Percentiles)
          ->Args({static_cast<int>(s), axes})
          ->Unit(benchmark::kMillisecond)
          ->Iterations(s == Strategy::kNormal ? 200 : 3);
    }
  }
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  reshard::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
