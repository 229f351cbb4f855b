// Uses the installed reshard the way a compiler would: parse, synthesize, run, check.
// Prints OK and exits 0 when the plan moves the data correctly within the memory bound.
#include <algorithm>
#include <cstdint>
#include <iostream>

#include "interp/interpreter.h"
#include "synth/plan_cache.h"
#include "synth/synthesize.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

int main() {
  absl::StatusOr<reshard::Mesh> mesh = reshard::ParseMesh("x=4,y=2");
  if (!mesh.ok()) {
    std::cerr << mesh.status() << "\n";
    return 1;
  }
  absl::StatusOr<reshard::DistType> from = reshard::ParseValidType(*mesh, "f32[8{x},16,8{y}]");
  absl::StatusOr<reshard::DistType> to = reshard::ParseValidType(*mesh, "f32[8,16{x,y},8]");
  if (!from.ok() || !to.ok()) {
    std::cerr << from.status() << " " << to.status() << "\n";
    return 1;
  }
  absl::StatusOr<reshard::Plan> plan = reshard::Synthesize(*mesh, *from, *to);
  if (!plan.ok()) {
    std::cerr << plan.status() << "\n";
    return 1;
  }
  absl::StatusOr<reshard::RunReport> report = reshard::RunPlan(*plan);
  if (!report.ok() || !report->ok) {
    std::cerr << "run failed: " << (report.ok() ? report->message : report.status().ToString())
              << "\n";
    return 1;
  }
  int64_t bound = std::max(reshard::LocalBytes(*mesh, *from), reshard::LocalBytes(*mesh, *to));
  if (plan->metrics.peak_local_bytes > bound) {
    std::cerr << "peak " << plan->metrics.peak_local_bytes << " exceeds " << bound << "\n";
    return 1;
  }
  // A partitioner asking again gets the same plan from a cache.
  reshard::PlanCache cache;
  reshard::PlanCache::Result first = cache.Synthesize(*mesh, *from, *to);
  reshard::PlanCache::Result again = cache.Synthesize(*mesh, *from, *to);
  if (!first.ok() || !again.ok() || first->get() != again->get() ||
      reshard::PlanToJson(**first) != reshard::PlanToJson(*plan)) {
    std::cerr << "PlanCache did not return the synthesized plan\n";
    return 1;
  }
  std::cout << "OK " << plan->steps.size() << " steps: " << reshard::PlanToJson(*plan) << "\n";
  return 0;
}
