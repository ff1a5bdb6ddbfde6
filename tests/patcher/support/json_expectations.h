// What a CI report format must say, read from `kvpatch check --format json` (patcher/REPORT-JSON.md): the
// findings, the ignored findings and the ignore comments that suppress nothing. The format tests hold each
// format's report to these.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "support/fixture.h"

namespace kvpatch_test {

// (line, column, rule, status) of one finding; other entries reuse the shape (see each function).
using Finding = std::tuple<int, int, std::string, std::string>;

// What makes check exit 1. A threaded or gated site its FlashInfer cannot build is listed with status "unbuildable".
std::multiset<Finding> json_findings(const nlohmann::json& report);
// The findings listed as ignored, as (line, column, rule, reason).
std::multiset<Finding> json_ignored(const nlohmann::json& report);
// ignore_comments (warnings, not findings, unless --unused-ignores error), as (line, column, level, problem).
std::multiset<Finding> ignore_comments(const nlohmann::json& report);
// Those entries as the other level would give them.
std::multiset<Finding> at_level(const std::multiset<Finding>& comments, const std::string& level);
// How many entries (plan sites, fields, casts, run() inputs and run() calls) the report lists, findings or not.
std::size_t json_entry_count(const nlohmann::json& report);
// The statuses CI formats give warning severity: what kvpatch cannot judge.
bool is_warning(const std::string& status);

// Stages the fixture in `top`/pkg and makes `top` a git repository, as a checkout holds a backend below its top.
// Returns the package directory.
std::filesystem::path stage_in_repository(const Fixture& fixture, const std::filesystem::path& top);
// The same, with a comment line added above the backend's first import: every finding one line lower, for the
// reports whose identities must not follow lines.
std::filesystem::path stage_moved_in_repository(const Fixture& fixture, const std::filesystem::path& top);

}  // namespace kvpatch_test
