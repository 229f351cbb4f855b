// case_file.h — the `mesh ; from ; to` case files of bench/ (bench/cases.txt), read as text.
//
//   absl::StatusOr<std::vector<reshard::bench::CaseLine>> lines =
//       reshard::bench::ReadCaseLines("bench/cases.txt");
//   for (const auto& c : *lines) ParseMesh(c.mesh); ...
//
// One case per line, its three fields separated by ';' and stripped of surrounding
// whitespace; '#' starts a comment, and blank or comment-only lines are skipped. The tools
// parse the fields themselves (reshard-bench reports an invalid type by line number,
// synth_latency skips it, gap-survey counts it as skipped).
#ifndef RESHARD_BENCH_CASE_FILE_H_
#define RESHARD_BENCH_CASE_FILE_H_

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace reshard::bench {

struct CaseLine {
  int line = 0;  // 1-based, in the file.
  std::string mesh, from, to;
};

// The cases of `path`. NotFound when it cannot be opened; InvalidArgument naming `path:line`
// for a line without exactly three fields.
inline absl::StatusOr<std::vector<CaseLine>> ReadCaseLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<CaseLine> cases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string body(absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
    if (body.empty()) continue;
    const std::vector<std::string> parts = absl::StrSplit(body, ';');
    if (parts.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": expected `mesh ; from ; to`"));
    }
    auto strip = [](const std::string& part) {
      return std::string(absl::StripAsciiWhitespace(part));
    };
    cases.push_back(CaseLine{number, strip(parts[0]), strip(parts[1]), strip(parts[2])});
  }
  return cases;
}

}  // namespace reshard::bench

#endif  // RESHARD_BENCH_CASE_FILE_H_
