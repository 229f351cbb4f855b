// tool_io.h — what reshard's command-line tools (reshard, reshard-mpi) share: exit codes,
// reading an input file, one-line error text, and checking a --plan file against the flags.
//
//   absl::StatusOr<std::string> text = ReadInputFile("--plan", "-");   // stdin
//   if (!text.ok()) return Fail(text.status().message(), kExitBadInput);
#ifndef RESHARD_TOOLS_TOOL_IO_H_
#define RESHARD_TOOLS_TOOL_IO_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "typesys/plan.h"

namespace reshard {

// Exit codes (README): success / proved; wrong data / refuted; bad input; internal error or
// solver unknown.
inline constexpr int kExitOk = 0;
inline constexpr int kExitWrongResult = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

// Plan and suite files are a few KB even for large meshes; the cap keeps `--plan /dev/zero`
// from exhausting memory.
inline constexpr size_t kMaxInputFileBytes = size_t{64} << 20;

// All of `path` (`-` is standard input). InvalidArgument naming `flag` and `path` when the file
// cannot be opened or read, or exceeds kMaxInputFileBytes.
absl::StatusOr<std::string> ReadInputFile(std::string_view flag, const std::string& path);

// `text` as one line: runs of newlines and tabs become one space, other control bytes are
// escaped (`\x1b`: input echoed in a message must not drive the terminal), trailing spaces go;
// cut after `max_bytes` (at a UTF-8 character boundary) with a note of how much was cut.
std::string OneLine(absl::string_view text, size_t max_bytes = absl::string_view::npos);

// Error lines are cut at this size: an error naming every pair of a permute on 2^20 devices
// was one 33 MB line.
inline constexpr size_t kMaxErrorBytes = 4096;

// With --plan FILE the file is the problem: --mesh, --from and --to, those given (non-empty),
// must name the plan's own (a cheap guard against the wrong file). InvalidArgument naming the
// flag that does not parse or differs.
absl::Status CheckPlanMatchesFlags(const Plan& plan, const std::string& mesh,
                                   const std::string& from, const std::string& to);

}  // namespace reshard

#endif  // RESHARD_TOOLS_TOOL_IO_H_
