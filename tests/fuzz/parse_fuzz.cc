// parse_fuzz.cc — libFuzzer target for the text and JSON parsers (DESIGN §6: fuzz targets for
// parsers). Built only with clang (tests/CMakeLists.txt); the RapidCheck property
// Parsing.*NeverCrashes covers the same ground in every build.
//
//   parse_fuzz -max_total_time=60 corpus/
//
// The input is split at the first newline: the first part is parsed as a mesh, the rest as a
// type (and the whole input as a plan's JSON). Whatever parses is validated and queried, so
// overflows that Validate lets through show up under the sanitizers. Errors must carry a
// message; a violated expectation aborts so libFuzzer records the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace {

void Expect(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "parse_fuzz: expectation failed: %s\n", what);
    std::abort();
  }
}

void ExpectError(const absl::Status& status) {
  Expect(status.code() == absl::StatusCode::kInvalidArgument, "errors are InvalidArgument");
  Expect(!status.message().empty(), "errors have a message");
}

void Query(const reshard::Mesh& mesh, const reshard::DistType& type) {
  Expect(reshard::LocalElements(mesh, type) <= reshard::GlobalElements(type), "local <= global");
  reshard::LocalBytes(mesh, type);
  reshard::LocalShape(mesh, type);
  for (int64_t device : {int64_t{0}, mesh.num_devices() - 1}) {
    reshard::BlockOffset(mesh, type, device);
    Expect(reshard::SummandIndex(mesh, type, device) < reshard::NumSummands(mesh, type),
           "summand index in range");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view mesh_text = input.substr(0, newline);
  const std::string_view type_text =
      newline == std::string_view::npos ? input : input.substr(newline + 1);

  absl::StatusOr<reshard::Mesh> mesh = reshard::ParseMesh(mesh_text);
  if (!mesh.ok()) {
    ExpectError(mesh.status());
  } else {
    absl::StatusOr<reshard::Mesh> again = reshard::ParseMesh(mesh->ToString());
    Expect(again.ok() && *again == *mesh, "mesh round trip");
  }

  absl::StatusOr<reshard::DistType> type = reshard::ParseType(type_text);
  if (!type.ok()) {
    ExpectError(type.status());
  } else {
    absl::StatusOr<reshard::DistType> again = reshard::ParseType(reshard::ToString(*type));
    Expect(again.ok() && *again == *type, "type round trip");
    if (mesh.ok()) {
      const absl::Status valid = reshard::Validate(*mesh, *type);
      if (valid.ok()) {
        Query(*mesh, *type);
      } else {
        ExpectError(valid);
      }
    }
  }

  absl::StatusOr<reshard::Plan> plan = reshard::PlanFromJson(input);
  if (!plan.ok()) {
    ExpectError(plan.status());
  } else {
    Expect(reshard::CheckSteps(plan->mesh, plan->source, plan->steps).ok(), "parsed plan checks");
  }
  return 0;
}
