// reshard-bench — the quality suite: every case of bench/cases.txt under every strategy.
//
//   reshard-bench [--cases bench/cases.txt] [--axis-cost x=1.5:300,...] [--svg out.svg]
//                 [--long]
//
// Prints (markdown) per case and strategy: modeled cost (µs, docs/synthesis.md cost model),
// bytes received (max per device, total), peak-memory ratio peak / max(source, target local
// bytes), total bytes / lower bound; then geometric-mean speedups (modeled time) of normal
// and optimal over gspmd, greedy and naive, and of normal vs optimal in bytes and cost. With
// --svg it writes a bar chart of per-case speedups of normal and optimal over gspmd.
// Then the sub-axis section (issue #7), all under Objective::kBytes: per case total bytes of
// normal, optimal, whole-axis optimal (SynthesisOptions::sub_axes = false), the optimum of the
// search on the prime-factor refinement, the Shardy-style pass (internal::ShardySteps) and
// the lower bound, with summary lines against the targets.
// Exit code 2 on bad input (a malformed case line names its line number).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/case_file.h"
#include "synth/baselines.h"
#include "synth/synthesize.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

struct Case {
  int line = 0;
  Mesh mesh;
  DistType from, to;
  std::string text;
};

absl::StatusOr<std::vector<Case>> ReadCases(const std::string& path) {
  absl::StatusOr<std::vector<bench::CaseLine>> lines = bench::ReadCaseLines(path);
  if (!lines.ok()) return lines.status();
  std::vector<Case> cases;
  for (const bench::CaseLine& line : *lines) {
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line.line, ": ", why));
    };
    Case c;
    c.line = line.line;
    absl::StatusOr<Mesh> mesh = ParseMesh(line.mesh);
    if (!mesh.ok()) return bad(mesh.status().message());
    c.mesh = *mesh;
    absl::StatusOr<DistType> from = ParseValidType(c.mesh, line.from);
    if (!from.ok()) return bad(from.status().message());
    absl::StatusOr<DistType> to = ParseValidType(c.mesh, line.to);
    if (!to.ok()) return bad(to.status().message());
    c.from = *from;
    c.to = *to;
    c.text = absl::StrCat(c.mesh.ToString(), " ", ToString(c.from), " → ", ToString(c.to));
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string Bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(b, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

// Geometric mean of baseline/strategy cost ratios. Cases where both cost 0 count as 1; cases
// where only the strategy costs 0 (pure local slicing) have no finite ratio and are counted
// in `skipped`.
struct GeoMean {
  double log_sum = 0;
  int count = 0;
  int skipped = 0;
  void Add(double baseline, double strategy) {
    if (strategy <= 0 && baseline <= 0) {
      ++count;
    } else if (strategy <= 0) {
      ++skipped;
    } else {
      log_sum += std::log(baseline / strategy);
      ++count;
    }
  }
  double Value() const { return count == 0 ? 1.0 : std::exp(log_sum / count); }
};

void WriteSvg(const std::string& path, const std::vector<std::string>& labels,
              const std::vector<std::vector<double>>& series,
              const std::vector<std::string>& names) {
  const double width = 60 + 14.0 * labels.size() * 1.0 + 40, height = 360;
  const double top = 30, bottom = 300, left = 60;
  double max_log = 1, min_log = -0.5;
  for (const auto& s : series) {
    for (double v : s) {
      if (v > 0) {
        max_log = std::max(max_log, std::log10(v));
        min_log = std::min(min_log, std::log10(v));
      }
    }
  }
  max_log = std::ceil(max_log);
  min_log = std::floor(min_log);
  auto y = [&](double v) {
    double l = std::log10(std::max(v, std::pow(10.0, min_log)));
    return bottom - (l - min_log) / (max_log - min_log) * (bottom - top);
  };
  std::ofstream out(path);
  out << absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n",
      width, height);
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << absl::StrFormat(
      "<text x=\"%.0f\" y=\"16\" font-size=\"12\">Modeled speedup per case, one bar per "
      "pair in the legend (log scale; default cost model)</text>\n",
      left);
  for (double l = min_log; l <= max_log; l += 1) {
    double v = std::pow(10.0, l);
    out << absl::StrFormat(
        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
        "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
        left, width - 30, y(v), y(v), l == 0 ? "black" : "#ddd", left - 4, y(v) + 3, v);
  }
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c"};
  const double slot = 14.0, bar = slot / (series.size() + 1);
  for (size_t i = 0; i < labels.size(); ++i) {
    double x0 = left + 4 + i * slot;
    for (size_t s = 0; s < series.size(); ++s) {
      double v = series[s][i];
      if (v <= 0) continue;
      double y1 = y(v), y0 = y(1.0);
      out << absl::StrFormat(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: "
          "%s %.2fx</title></rect>\n",
          x0 + s * bar, std::min(y0, y1), bar, std::abs(y0 - y1), colors[s % 3], labels[i],
          names[s], v);
    }
    if (i % 5 == 0) {
      out << absl::StrFormat("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n",
                             x0 + slot / 2, bottom + 14, i + 1);
    }
  }
  out << absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\">case number (bench/cases.txt order)</text>\n",
                         left, bottom + 30);
  for (size_t s = 0; s < names.size(); ++s) {
    out << absl::StrFormat(
        "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
        "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
        left + 200 * s, bottom + 40, colors[s % 3], left + 200 * s + 14, bottom + 49, names[s]);
  }
  out << "</svg>\n";
}

// One row of the sub-axis section: total bytes under Objective::kBytes, or the error.
struct SubAxisRow {
  int index = 0;
  std::string text;
  absl::StatusOr<int64_t> normal, optimal, whole, atoms, shardy;
  int64_t lower_bound = 0;
  bool shardy_fell_back = false;
};

absl::StatusOr<int64_t> BytesOf(const absl::StatusOr<Plan>& plan) {
  if (!plan.ok()) return plan.status();
  return plan->metrics.bytes_received_total;
}

SubAxisRow MeasureSubAxes(const Case& c, int index, const CostModel& model) {
  SubAxisRow row;
  row.index = index;
  row.text = c.text;
  auto run = [&](Strategy strategy, bool sub_axes) {
    SynthesisOptions options;
    options.strategy = strategy;
    options.objective = Objective::kBytes;
    options.sub_axes = sub_axes;
    options.cost_model = model;
    return Synthesize(c.mesh, c.from, c.to, options);
  };
  row.normal = BytesOf(run(Strategy::kNormal, true));
  row.optimal = BytesOf(run(Strategy::kOptimal, true));
  row.whole = BytesOf(run(Strategy::kOptimal, false));
  // The sub-axis optimum, independently of Synthesize's choice between refinements: the
  // optimal search on the prime-factor refinement itself, whose axes are every sub-axis.
  AxisList refs = SubAxisRefs(c.mesh, c.from);
  AxisList to_refs = SubAxisRefs(c.mesh, c.to);
  refs.insert(refs.end(), to_refs.begin(), to_refs.end());
  absl::StatusOr<AxisRefinement> atoms = AxisRefinement::Create(c.mesh, refs, true);
  if (atoms.ok()) {
    SynthesisOptions options;
    options.strategy = Strategy::kOptimal;
    options.objective = Objective::kBytes;
    options.sub_axes = false;
    options.cost_model = model;
    row.atoms = BytesOf(Synthesize(atoms->refined(), atoms->Refine(c.from), atoms->Refine(c.to),
                                   options));
  } else {
    row.atoms = atoms.status();
  }
  absl::StatusOr<std::vector<Step>> shardy =
      internal::ShardySteps(c.mesh, c.from, c.to, &row.shardy_fell_back);
  if (shardy.ok()) {
    if (absl::Status s = CheckSteps(c.mesh, c.from, *shardy); !s.ok()) {
      row.shardy = s;
    } else {
      row.shardy = ComputeMetrics(c.mesh, c.from, *shardy, model).bytes_received_total;
    }
  } else {
    row.shardy = shardy.status();
  }
  row.lower_bound = LowerBoundBytesTotal(c.mesh, c.from, c.to);
  return row;
}

std::string BytesCell(const absl::StatusOr<int64_t>& b) {
  if (!b.ok()) return std::string(absl::StatusCodeToString(b.status().code()));
  return Bytes(*b);
}

void PrintSubAxisSection(const std::vector<SubAxisRow>& rows) {
  std::cout << "\n## Sub-axes (objective: bytes)\n\n"
               "| # | case | normal | optimal | whole-axis optimal | sub-axis optimum | "
               "shardy-style | lower bound | sub-axes save |\n"
               "|---|---|---|---|---|---|---|---|---|\n";
  int opt_equal = 0, opt_unknown = 0, saved = 0, normal_ok = 0, compared = 0, fell_back = 0;
  std::vector<std::string> opt_differs, violations, fallbacks, saved_cases;
  GeoMean normal_vs_optimal, whole_vs_optimal, shardy_vs_normal, normal_vs_optimal_saved;
  for (const SubAxisRow& r : rows) {
    std::string save = "-";
    if (r.whole.ok() && r.optimal.ok()) {
      save = *r.optimal < *r.whole ? absl::StrFormat("%.2fx", static_cast<double>(*r.whole) /
                                                                   std::max<int64_t>(*r.optimal, 1))
                                   : "no";
    }
    std::cout << "| " << r.index << " | `" << r.text << "` | " << BytesCell(r.normal) << " | "
              << BytesCell(r.optimal) << " | " << BytesCell(r.whole) << " | "
              << BytesCell(r.atoms) << " | " << BytesCell(r.shardy)
              << (r.shardy_fell_back ? " (fallback)" : "") << " | " << Bytes(r.lower_bound)
              << " | " << save << " |\n";
    if (r.optimal.ok() && r.atoms.ok()) {
      if (*r.optimal == *r.atoms) {
        ++opt_equal;
      } else {
        opt_differs.push_back(absl::StrCat(r.index));
      }
    } else {
      ++opt_unknown;
    }
    const bool saves = r.optimal.ok() && r.whole.ok() && *r.optimal < *r.whole;
    if (saves) {
      ++saved;
      saved_cases.push_back(absl::StrCat(r.index));
    }
    if (r.optimal.ok() && r.whole.ok()) {
      whole_vs_optimal.Add(static_cast<double>(*r.whole), static_cast<double>(*r.optimal));
    }
    if (r.normal.ok() && r.optimal.ok()) {
      normal_vs_optimal.Add(static_cast<double>(*r.normal), static_cast<double>(*r.optimal));
      if (saves) {
        normal_vs_optimal_saved.Add(static_cast<double>(*r.normal),
                                    static_cast<double>(*r.optimal));
      }
    }
    if (r.normal.ok() && r.shardy.ok()) {
      ++compared;
      shardy_vs_normal.Add(static_cast<double>(*r.shardy), static_cast<double>(*r.normal));
      if (*r.normal <= *r.shardy) {
        ++normal_ok;
      } else {
        violations.push_back(absl::StrCat(r.index, " (", *r.normal, " B > ", *r.shardy, " B)"));
      }
    }
    if (r.shardy_fell_back) {
      ++fell_back;
      fallbacks.push_back(absl::StrCat(r.index));
    }
  }
  auto list = [](const std::vector<std::string>& v) {
    return v.empty() ? std::string("none") : absl::StrJoin(v, ", ");
  };
  const int n = static_cast<int>(rows.size());
  std::cout << "\n| sub-axis summary (bytes) | value |\n|---|---|\n";
  std::cout << absl::StrFormat(
      "| optimal = sub-axis optimum (search on the prime-factor refinement) | %d of %d "
      "(differs: %s; unknown: %d) |\n",
      opt_equal, n, list(opt_differs), opt_unknown);
  std::cout << absl::StrFormat(
      "| sub-axes lower optimal's bytes | %d of %d cases (%s); geometric mean whole-axis / "
      "optimal %.4fx over %d cases |\n",
      saved, n, list(saved_cases), whole_vs_optimal.Value(), whole_vs_optimal.count);
  std::cout << absl::StrFormat(
      "| normal <= shardy-style | %d of %d (violations: %s); geometric mean shardy-style / "
      "normal %.4fx |\n",
      normal_ok, compared, list(violations), shardy_vs_normal.Value());
  std::cout << absl::StrFormat(
      "| geometric mean normal / optimal | %.4fx over %d cases (%d skipped); %.4fx over the %d "
      "cases where sub-axes save |\n",
      normal_vs_optimal.Value(), normal_vs_optimal.count, normal_vs_optimal.skipped,
      normal_vs_optimal_saved.Value(), normal_vs_optimal_saved.count);
  std::cout << absl::StrFormat("| shardy-style fell back to gather + slice | %d of %d (%s) |\n",
                               fell_back, n, list(fallbacks));
}

int Main(int argc, char** argv) {
  std::string cases_path = "bench/cases.txt", svg_path, axis_cost;
  bool long_table = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--cases") {
      ok = value(cases_path);
    } else if (arg == "--svg") {
      ok = value(svg_path);
    } else if (arg == "--axis-cost") {
      ok = value(axis_cost);
    } else if (arg == "--long") {
      long_table = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: reshard-bench [--cases FILE] [--axis-cost x=alpha_us:GBps,...] "
                   "[--svg FILE] [--long]\n";
      return 0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "reshard-bench: error: bad argument '" << arg << "' (see --help)\n";
      return 2;
    }
  }
  absl::StatusOr<CostModel> model = ParseCostModel(axis_cost);
  if (!model.ok()) {
    std::cerr << "reshard-bench: error: " << model.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<Case>> cases = ReadCases(cases_path);
  if (!cases.ok()) {
    std::cerr << "reshard-bench: error: " << cases.status().message() << "\n";
    return 2;
  }
  const std::vector<Strategy> strategies = {Strategy::kNormal, Strategy::kOptimal,
                                            Strategy::kGspmd,  Strategy::kGreedy,
                                            Strategy::kNaive,  Strategy::kDirect};
  std::map<std::string, GeoMean> speedups;
  GeoMean normal_vs_optimal_cost, normal_vs_optimal_bytes;
  int normal_at_optimal = 0, compared = 0;
  int optimal_plans = 0;
  std::vector<int> unproven;  // Cases whose `optimal` plan is optimal among whole axes only.
  std::vector<std::string> labels;
  std::vector<std::vector<double>> series(3);

  if (long_table) {
    std::cout << "| # | case | strategy | cost µs | recv max | recv total | peak ratio | "
                 "total / LB |\n|---|---|---|---|---|---|---|---|\n";
  } else {
    std::cout << "| # | case | normal µs | optimal µs | gspmd µs | greedy µs | naive µs | "
                 "direct µs | normal peak ratio (gspmd, greedy) | normal total / LB |\n"
                 "|---|---|---|---|---|---|---|---|---|---|\n";
  }
  int index = 0;
  std::vector<SubAxisRow> sub_axis_rows;
  for (const Case& c : *cases) {
    ++index;
    sub_axis_rows.push_back(MeasureSubAxes(c, index, *model));
    const double bound =
        static_cast<double>(std::max(LocalBytes(c.mesh, c.from), LocalBytes(c.mesh, c.to)));
    std::map<Strategy, absl::StatusOr<Plan>> plans;
    for (Strategy s : strategies) {
      SynthesisOptions options;
      options.strategy = s;
      options.cost_model = *model;
      plans.emplace(s, Synthesize(c.mesh, c.from, c.to, options));
    }
    auto cost = [&](Strategy s) -> std::string {
      const absl::StatusOr<Plan>& p = plans.at(s);
      if (!p.ok()) return std::string(absl::StatusCodeToString(p.status().code()));
      return absl::StrFormat("%.1f", p->metrics.cost_us);
    };
    auto peak = [&](Strategy s) -> std::string {
      const absl::StatusOr<Plan>& p = plans.at(s);
      return p.ok() ? absl::StrFormat("%.2f", p->metrics.peak_local_bytes / bound) : "-";
    };
    auto lb = [&](Strategy s) -> std::string {
      const absl::StatusOr<Plan>& p = plans.at(s);
      if (!p.ok()) return "-";
      if (p->metrics.lower_bound_bytes_total == 0) {
        return p->metrics.bytes_received_total == 0 ? "1 (0 B)" : "∞ (LB 0)";
      }
      return absl::StrFormat("%.2f", static_cast<double>(p->metrics.bytes_received_total) /
                                         p->metrics.lower_bound_bytes_total);
    };
    if (long_table) {
      for (Strategy s : strategies) {
        const absl::StatusOr<Plan>& p = plans.at(s);
        std::cout << "| " << index << " | `" << c.text << "` | " << StrategyName(s) << " | "
                  << cost(s) << " | " << (p.ok() ? Bytes(p->metrics.bytes_received_max) : "-")
                  << " | " << (p.ok() ? Bytes(p->metrics.bytes_received_total) : "-") << " | "
                  << peak(s) << " | " << lb(s) << " |\n";
      }
    } else {
      std::cout << "| " << index << " | `" << c.text << "` | " << cost(Strategy::kNormal) << " | "
                << cost(Strategy::kOptimal) << " | " << cost(Strategy::kGspmd) << " | "
                << cost(Strategy::kGreedy) << " | " << cost(Strategy::kNaive) << " | "
                << cost(Strategy::kDirect) << " | " << peak(Strategy::kNormal) << " ("
                << peak(Strategy::kGspmd) << ", " << peak(Strategy::kGreedy) << ") | "
                << lb(Strategy::kNormal) << " |\n";
    }
    const absl::StatusOr<Plan>& normal = plans.at(Strategy::kNormal);
    const absl::StatusOr<Plan>& optimal = plans.at(Strategy::kOptimal);
    labels.push_back(absl::StrCat(index, ": ", c.text));
    for (int k = 0; k < 3; ++k) series[k].push_back(0);
    for (Strategy base : {Strategy::kGspmd, Strategy::kGreedy, Strategy::kNaive}) {
      const absl::StatusOr<Plan>& b = plans.at(base);
      if (!b.ok()) continue;
      for (const auto& [name, p] : {std::pair{"normal", &normal}, std::pair{"optimal", &optimal}}) {
        if (!p->ok()) continue;
        speedups[absl::StrCat(name, " over ", std::string(StrategyName(base)))].Add(
            b->metrics.cost_us, (*p)->metrics.cost_us);
      }
    }
    const absl::StatusOr<Plan>& gspmd = plans.at(Strategy::kGspmd);
    auto ratio = [](double base, double v) {
      return v > 0 ? base / v : (base > 0 ? 0.0 : 1.0);
    };
    if (normal.ok() && gspmd.ok()) {
      series[0].back() = ratio(gspmd->metrics.cost_us, normal->metrics.cost_us);
    }
    if (optimal.ok() && gspmd.ok()) {
      series[1].back() = ratio(gspmd->metrics.cost_us, optimal->metrics.cost_us);
    }
    const absl::StatusOr<Plan>& greedy = plans.at(Strategy::kGreedy);
    if (normal.ok() && greedy.ok()) {
      series[2].back() = ratio(greedy->metrics.cost_us, normal->metrics.cost_us);
    }
    if (optimal.ok()) {
      ++optimal_plans;
      if (optimal->optimality != Optimality::kProven) unproven.push_back(index);
    }
    if (normal.ok() && optimal.ok()) {
      ++compared;
      normal_vs_optimal_cost.Add(normal->metrics.cost_us, optimal->metrics.cost_us);
      normal_vs_optimal_bytes.Add(static_cast<double>(normal->metrics.bytes_received_total),
                                  static_cast<double>(optimal->metrics.bytes_received_total));
      if (RoundCostUs(normal->metrics.cost_us) <= RoundCostUs(optimal->metrics.cost_us)) {
        ++normal_at_optimal;
      }
    }
  }
  std::cout << "\n| geometric-mean modeled speedup | value | cases (skipped: strategy 0 µs) |\n"
               "|---|---|---|\n";
  for (const auto& [name, g] : speedups) {
    std::cout << absl::StrFormat("| %s | %.3fx | %d (%d) |\n", name, g.Value(), g.count,
                                 g.skipped);
  }
  std::cout << absl::StrFormat(
      "| normal / optimal, cost | %.4fx | %d (%d) |\n| normal / optimal, total bytes | %.4fx | "
      "%d (%d) |\n",
      normal_vs_optimal_cost.Value(), normal_vs_optimal_cost.count,
      normal_vs_optimal_cost.skipped, normal_vs_optimal_bytes.Value(),
      normal_vs_optimal_bytes.count, normal_vs_optimal_bytes.skipped);
  std::cout << "\nnormal reaches optimal's cost on " << normal_at_optimal << " of " << compared
            << " cases.\n";
  std::cout << "optimal proven optimal (Plan::optimality) on " << optimal_plans - unproven.size()
            << " of " << optimal_plans << " plans; among whole axes only on "
            << (unproven.empty() ? "none" : absl::StrJoin(unproven, ", ")) << ".\n";
  PrintSubAxisSection(sub_axis_rows);
  if (!svg_path.empty()) {
    WriteSvg(svg_path, labels, series,
             {"normal over gspmd", "optimal over gspmd", "normal over greedy"});
  }
  return 0;
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) { return reshard::Main(argc, argv); }
