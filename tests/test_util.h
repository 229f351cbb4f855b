// test_util.h — terse constructors for gtest unit tests.
//
//   Mesh mesh = M("x=2,y=4");
//   DistType t = T(mesh, "f32[16{x,y},8]");
//
// Both record a gtest failure (naming the text and the error) when the text does not parse or
// validate, so a typo in a test shows up as that, not as a confusing later failure.
#ifndef RESHARD_TESTS_TEST_UTIL_H_
#define RESHARD_TESTS_TEST_UTIL_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard::test {

inline Mesh M(std::string_view text) {
  absl::StatusOr<Mesh> mesh = ParseMesh(text);
  EXPECT_TRUE(mesh.ok()) << text << ": " << mesh.status();
  return mesh.ok() ? *mesh : Mesh();
}

inline DistType T(const Mesh& mesh, std::string_view text) {
  absl::StatusOr<DistType> type = ParseValidType(mesh, text);
  EXPECT_TRUE(type.ok()) << text << ": " << type.status();
  return type.ok() ? *type : DistType();
}

}  // namespace reshard::test

#endif  // RESHARD_TESTS_TEST_UTIL_H_
