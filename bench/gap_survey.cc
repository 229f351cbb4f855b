// gap-survey — how far `normal` is from `optimal` on seeded random cases, or how long `normal`
// takes on them.
//
//   gap-survey [--cases N] [--seed S] [--show K] [--axis-cost C] [--axes A] [--sums K]
//              [--devices D] [--latency 1] [--dump 1] [--suite FILE] [--sub-axes 0]
//              [--strategy S] [--objective O]
//
// Draws N cases (seeds S .. S+N-1; meshes of 1-3 axes x, y, z of sizes 1, 2, 3, 4, 8 and at
// most 64 devices, ranks 1-3, dimensions 48-3072, random shardings and partial axes),
// synthesizes each with `normal` and `optimal` under the default model, or under C (the
// `reshard plan --axis-cost` syntax; entries for axes a case's mesh lacks are left out for
// that case), and prints the geometric mean
// of cost(normal) / cost(optimal), a histogram of the ratios and the K worst cases. Cases
// that are invalid, unsynthesizable or of zero cost are skipped (counted). Deterministic:
// the same arguments print the same report. docs/benchmarks.md, "Gap to optimal on random
// cases".
//
// --axes A (1-8) draws other cases instead: meshes of exactly A axes x, y, z, w, u, v, s, t
// of sizes 2, 3, 4, 8 and at most 256 devices (--devices D: at most D), ranks 1-4,
// dimensions 48-4096. --sums K (1-4) draws
// sources that sum over at least K axes (each axis of the source summed over, split or
// unused with equal odds, drawn again until K are summed; meshes of fewer axes are skipped),
// the shape of a gradient's reduction, which the other draws seldom make.
// --latency 1 times `normal`
// (or strategy S) instead of comparing it (each case twice, the faster call counts; cases it
// rejects as invalid are skipped) and prints the latency percentiles, the geometric mean of
// its modeled cost (to compare two builds' plans), for `optimal` how many plans are proven,
// and the K slowest cases: docs/benchmarks.md, "Latency cliffs". Timings are this machine's,
// not a test.
// --dump 1 prints, for every case drawn that parses, the case and then the plan of `normal`
// (or strategy S) as PlanToJson, or its error status, one line each: the same arguments print
// the same lines, so `diff` of two builds' dumps shows every plan a change altered
// (docs/benchmarks.md, "Checking that plans did not change").
// --suite FILE takes the cases of FILE (bench/cases.txt's `mesh ; from ; to` lines) instead of
// random draws, those with exactly A axes under --axes A; --cases, --seed, --sums and
// --devices do not apply. With --dump 1 under callgrind it counts the instructions of
// `Synthesize` on the suite (bench/count_instructions.sh).
// --objective O (`time`, the default, or `bytes`) sets SynthesisOptions::objective for every
// call, as `reshard plan --objective` does.
// --sub-axes 0 synthesizes every case without splitting mesh axes (SynthesisOptions::sub_axes,
// `reshard plan --no-sub-axes`), for both strategies.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/case_file.h"
#include "synth/synthesize.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

struct RandomCase {
  std::string mesh, from, to;
};

// What to draw. `axes` 0: 1-3 axes of sizes 1-8, at most 64 devices, ranks 1-3 (the gap
// survey's draw); otherwise exactly `axes` axes of sizes 2-8, at most `max_devices` (0: 256)
// devices, ranks 1-4. `sums` > 0: the source sums over at least that many axes.
// `suite`: the cases to take instead of drawing (--suite), filtered by `axes` when it is > 0.
struct DrawSpec {
  int axes = 0;
  int sums = 0;
  int64_t max_devices = 0;
  const std::vector<RandomCase>* suite = nullptr;
};


// One random case from `seed`; empty mesh text when it has more devices than the draw allows
// or fewer axes than `spec.sums`.
RandomCase Draw(int64_t seed, const DrawSpec& spec) {
  int axes = spec.axes;
  const int sums = spec.sums;
  const bool fixed = axes > 0;
  std::mt19937 rng(static_cast<uint32_t>(fixed ? seed * 7919 + 11 : seed * 104729 + 3));
  const std::vector<int> sizes =
      fixed ? std::vector<int>{2, 2, 3, 4, 4, 8} : std::vector<int>{1, 2, 2, 3, 4, 4, 8};
  const std::vector<int64_t> extents = fixed ? std::vector<int64_t>{48, 96, 192, 768, 3072, 4096}
                                             : std::vector<int64_t>{48, 96, 192, 768, 3072};
  const char* names[] = {"x", "y", "z", "w", "u", "v", "s", "t"};
  if (!fixed) axes = 1 + static_cast<int>(rng() % 3);
  std::vector<std::string> mesh;
  int64_t devices = 1;
  for (int a = 0; a < axes; ++a) {
    const int size = sizes[rng() % sizes.size()];
    devices *= size;
    mesh.push_back(absl::StrCat(names[a], "=", size));
  }
  const int rank = 1 + static_cast<int>(rng() % (fixed ? 4 : 3));
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(extents[rng() % extents.size()]);
  // `min_sums` > 0: each axis summed, split or unused with equal odds, until that many sum.
  auto type = [&](bool allow_partial, int min_sums = 0) {
    std::vector<std::vector<std::string>> dim_axes(rank);
    std::vector<std::string> partial;
    std::vector<int> order(axes);
    for (int a = 0; a < axes; ++a) order[a] = a;
    // Draw r of `kinds`: `unused` leaves the axis out, 1 sums over it, the others split.
    const int kinds = min_sums > 0 ? 3 : 4;
    const int unused = min_sums > 0 ? 2 : 0;
    do {
      for (std::vector<std::string>& list : dim_axes) list.clear();
      partial.clear();
      std::shuffle(order.begin(), order.end(), rng);
      for (int a : order) {
        const int r = static_cast<int>(rng() % kinds);
        if (r == unused) continue;
        if (r == 1 && allow_partial) {
          partial.push_back(names[a]);
        } else {
          dim_axes[rng() % rank].push_back(names[a]);
        }
      }
    } while (static_cast<int>(partial.size()) < min_sums);
    std::vector<std::string> parts;
    for (int i = 0; i < rank; ++i) {
      parts.push_back(dim_axes[i].empty()
                          ? absl::StrCat(dims[i])
                          : absl::StrCat(dims[i], "{", absl::StrJoin(dim_axes[i], ","), "}"));
    }
    std::string text = absl::StrCat("f32[", absl::StrJoin(parts, ","), "]");
    if (!partial.empty()) absl::StrAppend(&text, " partial{", absl::StrJoin(partial, ","), "}");
    return text;
  };
  RandomCase c;
  if (sums > axes) return c;
  c.from = type(true, sums);
  c.to = type(rng() % 3 == 0);
  if (devices <= (!fixed ? 64 : spec.max_devices > 0 ? spec.max_devices : 256)) {
    c.mesh = absl::StrJoin(mesh, ",");
  }
  return c;
}

struct Parsed {
  Mesh mesh;
  DistType from, to;
};

// The case parsed, or nullopt (too many devices, or a type invalid on its mesh).
std::optional<Parsed> Parse(const RandomCase& c) {
  if (c.mesh.empty()) return std::nullopt;
  absl::StatusOr<Mesh> mesh = ParseMesh(c.mesh);
  if (!mesh.ok()) return std::nullopt;
  absl::StatusOr<DistType> from = ParseValidType(*mesh, c.from);
  absl::StatusOr<DistType> to = ParseValidType(*mesh, c.to);
  if (!from.ok() || !to.ok()) return std::nullopt;
  return Parsed{*std::move(mesh), *std::move(from), *std::move(to)};
}

std::string CaseText(const RandomCase& c) {
  return absl::StrCat(c.mesh, " ; ", c.from, " ; ", c.to);
}

// Calls visit(case, parsed case, `base` with its model on the mesh's axes) for each of the
// cases drawn from seeds seed .. seed+cases-1 that parse; counts the others in `skipped`.
template <typename Visit>
void ForEachCase(int64_t cases, int64_t seed, const DrawSpec& spec, const SynthesisOptions& base,
                 int64_t& skipped, Visit visit) {
  const bool from_suite = spec.suite != nullptr;
  const int64_t first = from_suite ? 0 : seed;
  const int64_t end = from_suite ? static_cast<int64_t>(spec.suite->size()) : seed + cases;
  for (int64_t s = first; s < end; ++s) {
    const RandomCase c = from_suite ? (*spec.suite)[s] : Draw(s, spec);
    std::optional<Parsed> p = Parse(c);
    if (p && from_suite && spec.axes > 0 && p->mesh.num_axes() != spec.axes) continue;
    if (!p) {
      ++skipped;
      continue;
    }
    SynthesisOptions options = base;
    options.cost_model = base.cost_model.OnAxesOf(p->mesh);
    visit(c, *p, options);
  }
}

int RunLatency(int64_t cases, int64_t seed, const DrawSpec& spec, int show,
               const SynthesisOptions& base, Strategy strategy) {
  std::vector<std::pair<double, std::string>> timed;  // µs, case.
  int64_t skipped = 0, no_plan = 0, proven = 0;
  double log_cost = 0;
  int64_t costed = 0;
  ForEachCase(cases, seed, spec, base, skipped,
              [&](const RandomCase& c, const Parsed& p, SynthesisOptions options) {
                options.strategy = strategy;
                double best_us = std::numeric_limits<double>::infinity();
                absl::StatusOr<Plan> plan;
                for (int call = 0; call < 2; ++call) {
                  const auto start = std::chrono::steady_clock::now();
                  plan = Synthesize(p.mesh, p.from, p.to, options);
                  const auto end = std::chrono::steady_clock::now();
                  best_us = std::min(
                      best_us, std::chrono::duration<double, std::micro>(end - start).count());
                }
                if (absl::IsInvalidArgument(plan.status())) {
                  ++skipped;
                  return;
                }
                if (!plan.ok()) {
                  ++no_plan;
                } else {
                  if (plan->optimality == Optimality::kProven) ++proven;
                  if (plan->metrics.cost_us > 0) {
                    log_cost += std::log(plan->metrics.cost_us);
                    ++costed;
                  }
                }
                timed.emplace_back(best_us, CaseText(c));
              });
  if (timed.empty()) {
    std::printf("no case timed (%lld skipped)\n", static_cast<long long>(skipped));
    return 0;
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  auto at = [&](double q) {  // Quantile q of the (descending) timings.
    return timed[static_cast<size_t>((1 - q) * static_cast<double>(timed.size() - 1))].first;
  };
  std::printf("cases timed: %zu (no plan: %lld; skipped: %lld)\n", timed.size(),
              static_cast<long long>(no_plan), static_cast<long long>(skipped));
  const std::string name(StrategyName(strategy));
  std::printf("%s latency, faster of 2 calls: p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
              name.c_str(), at(0.5), at(0.9), at(0.99), timed.front().first);
  if (costed > 0) {
    std::printf("geometric mean cost_us of %s's plans: %.4f (%lld plans)\n", name.c_str(),
                std::exp(log_cost / static_cast<double>(costed)), static_cast<long long>(costed));
  }
  if (strategy == Strategy::kOptimal) {
    std::printf("proven optimal: %lld of %zu plans\n", static_cast<long long>(proven),
                timed.size() - static_cast<size_t>(no_plan));
  }
  for (int i = 0; i < show && i < static_cast<int>(timed.size()); ++i) {
    std::printf("%10.1f us  %s\n", timed[i].first, timed[i].second.c_str());
  }
  return 0;
}

int RunDump(int64_t cases, int64_t seed, const DrawSpec& spec, const SynthesisOptions& base,
            Strategy strategy) {
  int64_t skipped = 0;
  ForEachCase(cases, seed, spec, base, skipped,
              [&](const RandomCase& c, const Parsed& p, SynthesisOptions options) {
                options.strategy = strategy;
                const absl::StatusOr<Plan> plan = Synthesize(p.mesh, p.from, p.to, options);
                std::printf(
                    "%s\n%s\n", CaseText(c).c_str(),
                    plan.ok() ? PlanToJson(*plan).c_str() : plan.status().ToString().c_str());
              });
  std::printf("skipped: %lld\n", static_cast<long long>(skipped));
  return 0;
}

int Run(int64_t cases, int64_t seed, const DrawSpec& spec, int show, const SynthesisOptions& base) {
  std::vector<std::pair<double, std::string>> ratios;
  int64_t skipped = 0;
  ForEachCase(cases, seed, spec, base, skipped,
              [&](const RandomCase& c, const Parsed& p, SynthesisOptions options) {
                absl::StatusOr<Plan> normal = Synthesize(p.mesh, p.from, p.to, options);
                options.strategy = Strategy::kOptimal;
                options.max_states = 200000;
                absl::StatusOr<Plan> optimal = Synthesize(p.mesh, p.from, p.to, options);
                if (!normal.ok() || !optimal.ok() || optimal->metrics.cost_us <= 0) {
                  ++skipped;
                  return;
                }
                const double ratio = normal->metrics.cost_us / optimal->metrics.cost_us;
                ratios.emplace_back(
                    ratio, absl::StrCat(CaseText(c), "  (normal ", normal->metrics.cost_us,
                                        " us, optimal ", optimal->metrics.cost_us, " us)"));
              });
  if (ratios.empty()) {
    std::printf("no case to compare (%lld skipped)\n", static_cast<long long>(skipped));
    return 0;
  }
  double log_sum = 0;
  int histogram[6] = {};
  const double edges[] = {1 + 1e-9, 1.05, 1.2, 1.5, 2};
  for (const auto& [ratio, text] : ratios) {
    log_sum += std::log(ratio);
    int bin = 0;
    while (bin < 5 && ratio >= edges[bin]) ++bin;
    ++histogram[bin];
  }
  std::printf("cases compared: %zu (skipped: %lld)\n", ratios.size(),
              static_cast<long long>(skipped));
  std::printf("geometric mean cost normal / optimal: %.4fx\n",
              std::exp(log_sum / static_cast<double>(ratios.size())));
  std::printf("ratio = 1: %d; < 1.05: %d; < 1.2: %d; < 1.5: %d; < 2: %d; >= 2: %d\n",
              histogram[0], histogram[1], histogram[2], histogram[3], histogram[4],
              histogram[5]);
  std::stable_sort(ratios.begin(), ratios.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; i < show && i < static_cast<int>(ratios.size()); ++i) {
    std::printf("%.3fx  %s\n", ratios[i].first, ratios[i].second.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) {
  int64_t cases = 5000, seed = 0;
  int show = 10;
  reshard::DrawSpec spec;
  bool latency = false, dump = false;
  reshard::SynthesisOptions base;  // The options every case starts from (model, sub-axes).
  reshard::Strategy strategy = reshard::Strategy::kNormal;
  std::vector<reshard::RandomCase> suite;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--suite") {
      const absl::StatusOr<std::vector<reshard::bench::CaseLine>> lines =
          reshard::bench::ReadCaseLines(argv[i + 1]);
      if (!lines.ok()) {
        std::fprintf(stderr, "gap-survey: --suite: %s\n",
                     std::string(lines.status().message()).c_str());
        return 2;
      }
      for (const reshard::bench::CaseLine& c : *lines) suite.push_back({c.mesh, c.from, c.to});
      spec.suite = &suite;
      continue;
    }
    // The value parsed by `parse` (returning StatusOr) into `out`; false, said, when invalid.
    auto parse_into = [&](auto parse, auto& out) {
      auto parsed = parse(argv[i + 1]);
      if (!parsed.ok()) {
        std::fprintf(stderr, "gap-survey: %s: %s\n", argv[i],
                     std::string(parsed.status().message()).c_str());
        return false;
      }
      out = *std::move(parsed);
      return true;
    };
    if (flag == "--strategy" || flag == "--objective" || flag == "--axis-cost") {
      const bool ok = flag == "--strategy" ? parse_into(reshard::ParseStrategy, strategy)
                      : flag == "--objective"
                          ? parse_into(reshard::ParseObjective, base.objective)
                          : parse_into(reshard::ParseCostModel, base.cost_model);
      if (!ok) return 2;
      continue;
    }
    int64_t value = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &value) || value < 0) {
      std::fprintf(stderr, "gap-survey: %s needs a non-negative integer\n", argv[i]);
      return 2;
    }
    if (flag == "--cases") {
      cases = value;
    } else if (flag == "--seed") {
      seed = value;
    } else if (flag == "--show") {
      show = static_cast<int>(std::min<int64_t>(value, 1000));
    } else if (flag == "--axes" && value <= 8) {
      spec.axes = static_cast<int>(value);
    } else if (flag == "--sums" && value >= 1 && value <= 4) {
      spec.sums = static_cast<int>(value);
    } else if (flag == "--devices" && value >= 1) {
      spec.max_devices = value;
    } else if (flag == "--latency" && value <= 1) {
      latency = value == 1;
    } else if (flag == "--dump" && value <= 1) {
      dump = value == 1;
    } else if (flag == "--sub-axes" && value <= 1) {
      base.sub_axes = value == 1;
    } else {
      std::fprintf(stderr,
                   "gap-survey: unknown flag or value %s %s (--cases, --seed, --show, "
                   "--axis-cost, --axes 0-8, --sums 1-4, --devices D, --latency 0|1, "
                   "--dump 0|1, --suite FILE, --sub-axes 0|1, --strategy, --objective)\n",
                   argv[i], argv[i + 1]);
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr,
                 "usage: gap-survey [--cases N] [--seed S] [--show K] [--axis-cost C] "
                 "[--axes A] [--sums K] [--devices D] [--latency 1] [--dump 1] "
                 "[--suite FILE] [--sub-axes 0] [--strategy S] [--objective O]\n");
    return 2;
  }
  if (latency && dump) {
    std::fprintf(stderr, "gap-survey: --latency 1 and --dump 1 exclude each other\n");
    return 2;
  }
  if (!latency && !dump && strategy != reshard::Strategy::kNormal) {
    std::fprintf(stderr,
                 "gap-survey: --strategy needs --latency 1 or --dump 1 (the survey compares "
                 "normal with optimal)\n");
    return 2;
  }
  if (spec.suite != nullptr && (spec.sums > 0 || spec.max_devices > 0)) {
    std::fprintf(stderr, "gap-survey: --suite takes its cases as listed (no --sums, --devices)\n");
    return 2;
  }
  if (spec.max_devices > 0 && spec.axes == 0) {
    std::fprintf(stderr, "gap-survey: --devices needs --axes (the default draw keeps 64)\n");
    return 2;
  }
  if (latency) return reshard::RunLatency(cases, seed, spec, show, base, strategy);
  if (dump) return reshard::RunDump(cases, seed, spec, base, strategy);
  return reshard::Run(cases, seed, spec, show, base);
}
