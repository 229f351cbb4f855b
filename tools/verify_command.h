// verify_command.h — `reshard verify`: prove a plan correct with Z3 (proofs/).
//
//   reshard verify --mesh x=4,y=2 --from 'f32[8{x},16,8{y}]' --to 'f32[8,16{x,y},8]'
//   reshard plan ... --json > p.json && reshard verify --plan p.json --json
//   reshard verify --suite proofs/suite.txt --report build/verification
//
// Exit codes: 0 proved; 1 refuted (the counterexample is printed); 2 bad input (including a
// plan that cannot execute, and a --suite case that cannot be read or synthesized); 3 unknown
// (a Z3 timeout: never reported as proved). With --suite the worst outcome decides, in that
// order: refuted, bad input, unknown. Errors are one line, `reshard: error: <message>`.
#ifndef RESHARD_TOOLS_VERIFY_COMMAND_H_
#define RESHARD_TOOLS_VERIFY_COMMAND_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"

namespace reshard {

struct VerifyFlags {
  std::string mesh;
  std::string from;
  std::string to;
  std::string strategy = "normal";
  std::string objective = "time";  // SynthesisOptions::objective (ParseObjective).
  bool no_sub_axes = false;  // SynthesisOptions::sub_axes = false.
  std::string plan_file;
  int64_t timeout_ms = 10000;
  bool json = false;
  std::string suite;
  std::string report;
  // With --suite: verify every case once per strategy in this comma-separated list ("all" =
  // every strategy of synth), overriding the cases' own strategies.
  std::string strategies;
};

// Registers the `verify` subcommand (its options bind to `flags`) and returns it.
CLI::App* AddVerifyCommand(CLI::App& app, VerifyFlags& flags);

// Runs `reshard verify` after parsing; returns the exit code (see the file comment).
int RunVerifyCommand(const VerifyFlags& flags);

}  // namespace reshard

#endif  // RESHARD_TOOLS_VERIFY_COMMAND_H_
