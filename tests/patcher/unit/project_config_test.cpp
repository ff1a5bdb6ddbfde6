// Project settings: which file is found for a directory, what it sets, and errors that name the file and line.
#include <doctest/doctest.h>

#include "kvpatch/input_error.h"
#include "kvpatch/project_config.h"
#include "test_support.h"

using namespace kvpatch;
namespace fs = std::filesystem;

namespace {
// "<file>:<line>: <message>; <remedy>" of reading `file`, or "" when it reads.
std::string read_error(const fs::path& file) {
  try {
    read_project_config(file);
  } catch (const InputError& e) {
    return e.formatted();
  }
  return "";
}
}  // namespace

TEST_SUITE("project_config") {
  TEST_CASE("the nearest directory with a configuration wins; in one directory .kvpatch.toml, kvpatch.toml, pyproject") {
    test::ScratchDir dir;
    const fs::path deep = dir.path() / "a" / "b" / "c";
    fs::create_directories(deep);
    CHECK_FALSE(find_project_config(deep));  // (unless the system's temp directory has one above it)
    const fs::path top = dir.write("pyproject.toml", "[tool.kvpatch]\nkv-dtype-form = \"sm90\"\n");
    CHECK(find_project_config(deep) == top);
    const fs::path plain = dir.write("a/kvpatch.toml", "");
    CHECK(find_project_config(deep) == plain);
    const fs::path hidden = dir.write("a/.kvpatch.toml", "");
    CHECK(find_project_config(deep) == hidden);
    dir.write("a/pyproject.toml", "[tool.kvpatch]\n");
    CHECK(find_project_config(dir.path() / "a") == hidden);
    CHECK(find_project_config(dir.path()) == top);
  }

  TEST_CASE("a pyproject.toml without [tool.kvpatch] is passed over, even one that does not parse") {
    test::ScratchDir dir;
    const fs::path top = dir.write(".kvpatch.toml", "");
    dir.write("sglang/python/pyproject.toml", "[project]\nname = \"sglang\"\n[tool.ruff]\nline-length = 120\n");
    CHECK(find_project_config(dir.path() / "sglang" / "python") == top);
    dir.write("sglang/python/pyproject.toml", "[project\nname = \n");
    CHECK(find_project_config(dir.path() / "sglang" / "python") == top);
    // One that names kvpatch but does not parse is found, so that reading it says where it is broken.
    const fs::path broken = dir.write("sglang/pyproject.toml", "[tool.kvpatch\n");
    CHECK(find_project_config(dir.path() / "sglang" / "python") == broken);
    CHECK(read_error(broken).rfind(broken.string() + ":1: malformed TOML: ", 0) == 0);
  }

  TEST_CASE("the settings become rule parameters that remember their line; rules resolve against the file") {
    test::ScratchDir dir;
    fs::create_directories(dir.path() / "conf" / "my-rules");
    const fs::path file = dir.write("conf/pyproject.toml",
                                    "[project]\nname = \"x\"\n\n[tool.kvpatch]\nkv-dtype-form = \"upstream\"\n"
                                    "flashinfer-version = \"0.7.2\"\nrules = \"my-rules\"\n\n"
                                    "[tool.kvpatch.parameters]\nkv_field = \"self.kv_dtype\"\n");
    const ProjectConfig config = read_project_config(file);
    CHECK(config.file == file);
    CHECK(config.rules_dir == dir.path() / "conf" / "my-rules");
    REQUIRE(config.parameters.size() == 3);
    CHECK(config.parameters.at("kv_dtype_form").value == "upstream");
    CHECK(config.parameters.at("kv_dtype_form").line == 5);
    CHECK(config.parameters.at("kv_dtype_form").origin == file.string());
    CHECK(config.parameters.at("flashinfer_version").value == "0.7.2");
    CHECK(config.parameters.at("flashinfer_version").line == 6);
    CHECK(config.parameters.at("kv_field").value == "self.kv_dtype");
    CHECK(config.parameters.at("kv_field").line == 10);
    const ProjectConfig bare = read_project_config(dir.write("kvpatch.toml", "[parameters]\nkv_field = \"self.k\"\n"));
    CHECK(bare.rules_dir.empty());
    CHECK(bare.parameters.at("kv_field").line == 2);
    CHECK(bare.unused_ignores.empty());
    const ProjectConfig strict = read_project_config(dir.write("kvpatch.toml", "\nunused-ignores = \"error\"\n"));
    CHECK(strict.unused_ignores == "error");
    CHECK(strict.unused_ignores_line == 2);
    CHECK(strict.parameters.empty());
    CHECK(bare.output_format.empty());
    CHECK(!bare.show_fixes.has_value());
    // ruff's report keys; concise is ruff's name for text.
    const ProjectConfig reports =
        read_project_config(dir.write("kvpatch.toml", "output-format = \"concise\"\n\nshow-fixes = false\n"));
    CHECK(reports.output_format == "text");
    CHECK(reports.output_format_line == 1);
    CHECK(reports.show_fixes == false);
    CHECK(reports.show_fixes_line == 3);
    CHECK(read_project_config(dir.write("kvpatch.toml", "output-format = \"sarif\"\nshow-fixes = true\n")).show_fixes ==
          true);
  }

  TEST_CASE("bad settings: the file, the line and what to write instead") {
    test::ScratchDir dir;
    const fs::path f = dir.path() / ".kvpatch.toml";
    dir.write(".kvpatch.toml", "\nkv_dtype_form = \"sm90\"\n");
    CHECK(read_error(f) == f.string() + ":2: unknown kvpatch setting 'kv_dtype_form'; write it kv-dtype-form, as the "
                                        "command-line option is spelled");
    dir.write(".kvpatch.toml", "format = \"json\"\n");
    CHECK(read_error(f) == f.string() + ":1: unknown kvpatch setting 'format'; write it output-format, as ruff spells "
                                        "its own");
    dir.write(".kvpatch.toml", "fix = true\n");
    CHECK(read_error(f) == f.string() + ":1: unknown kvpatch setting 'fix'; the settings are kv-dtype-form, "
                                        "flashinfer-version, rules, exclude, unused-ignores, output-format, show-fixes, "
                                        "parameters, per-file-ignores, select, ignore (other rule parameters go in the parameters "
                                        "table)");
    dir.write(".kvpatch.toml", "\noutput-format = \"grouped\"\n");
    CHECK(read_error(f) == f.string() + ":2: 'output-format' is 'grouped', which kvpatch does not print; write one of "
                                        "text, full, json, github, gitlab, junit, rdjson, sarif (or concise, ruff's name "
                                        "for text)");
    dir.write(".kvpatch.toml", "output-format = [\"json\"]\n");
    CHECK(read_error(f) == f.string() + ":1: 'output-format' must be a string; quote the value, e.g. output-format = "
                                        "\"...\"");
    dir.write(".kvpatch.toml", "show-fixes = \"true\"\n");
    CHECK(read_error(f) == f.string() + ":1: 'show-fixes' must be true or false; write show-fixes = true (unquoted), as "
                                        "ruff's key of that name");
    dir.write(".kvpatch.toml", "show_fixes = true\n");
    CHECK(read_error(f) == f.string() + ":1: unknown kvpatch setting 'show_fixes'; write it show-fixes, as ruff spells "
                                        "its own");
    dir.write(".kvpatch.toml", "unused_ignores = \"error\"\n");
    CHECK(read_error(f) == f.string() + ":1: unknown kvpatch setting 'unused_ignores'; write it unused-ignores, as the "
                                        "command-line option is spelled");
    dir.write(".kvpatch.toml", "\nunused-ignores = \"fail\"\n");
    CHECK(read_error(f) == f.string() + ":2: 'unused-ignores' is 'fail'; write unused-ignores = \"warn\" (the default) "
                                        "or \"error\" (each ignore comment that suppresses nothing is a finding)");
    dir.write(".kvpatch.toml", "unused-ignores = true\n");
    CHECK(read_error(f) == f.string() + ":1: 'unused-ignores' must be a string; quote the value, e.g. unused-ignores = \"...\"");
    dir.write(".kvpatch.toml", "kv-dtype-form = 3\n");
    CHECK(read_error(f) == f.string() + ":1: 'kv-dtype-form' must be a string; quote the value, e.g. kv-dtype-form = \"...\"");
    dir.write(".kvpatch.toml", "parameters = \"kv_field=x\"\n");
    CHECK(read_error(f) == f.string() + ":1: 'parameters' must be a table of rule parameters; write [parameters] and "
                                        "NAME = \"VALUE\" lines under it");
    dir.write(".kvpatch.toml", "kv-dtype-form = \"sm90\"\n[parameters]\nkv_dtype_form = \"original\"\n");
    CHECK(read_error(f) == f.string() + ":3: 'parameters.kv_dtype_form' sets rule parameter kv_dtype_form, already set "
                                        "at line 1; keep one of the two");
    dir.write(".kvpatch.toml", "rules = \"nowhere\"\n");
    CHECK(read_error(f) == f.string() + ":1: rules directory " + (dir.path() / "nowhere").string() +
                               " not found; give a directory of kvpatch rule files, relative to this file");
    dir.write(".kvpatch.toml", "kv-dtype-form = \"sm90\n");
    CHECK(read_error(f).rfind(f.string() + ":1: malformed TOML: ", 0) == 0);
    const fs::path py = dir.write("pyproject.toml", "[tool.ruff]\nline-length = 100\n");
    CHECK(read_error(py) == py.string() + ": no [tool.kvpatch] table; add one, or name another configuration file");
    dir.write("pyproject.toml", "[tool]\nkvpatch = \"sm90\"\n");
    CHECK(read_error(py) == py.string() + ":2: tool.kvpatch must be a table; write the settings under [tool.kvpatch]");
    CHECK(read_error(dir.path() / "missing.toml") ==
          (dir.path() / "missing.toml").string() + ": no such configuration file; check the path given to --config");
  }

  TEST_CASE("exclude: a pattern per path segment, a directory excludes what is under it, nothing outside the file's directory") {
    test::ScratchDir dir;
    const fs::path file = dir.write("proj/.kvpatch.toml", "exclude = [\"test\", \"benchmark/*.py\", \"3rdparty/\"]\n");
    const ProjectConfig config = read_project_config(file);
    CHECK(config.exclude == std::vector<std::string>{"test", "benchmark/*.py", "3rdparty"});
    const fs::path proj = dir.path() / "proj";
    CHECK(excluded(config_exclude_patterns(config), proj / "test" / "srt" / "test_mla.py"));
    CHECK(excluded(config_exclude_patterns(config), proj / "benchmark" / "bench_mla.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "benchmark" / "kernels" / "bench_mla.py"));  // `*` stops at `/`
    CHECK(excluded(config_exclude_patterns(config), proj / "3rdparty" / "flashinfer" / "x.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "python" / "sglang" / "test" / "flashinfer_mla_backend.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "tests" / "a.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), dir.path() / "test" / "a.py"));  // outside proj/
    CHECK_FALSE(excluded(config_exclude_patterns(read_project_config(dir.write("other/kvpatch.toml", ""))), proj / "test" / "a.py"));
  }

  TEST_CASE("exclude patterns as given: ./ and a trailing / dropped; empty, . and absolute refused; by the first set") {
    CHECK(exclude_pattern("./test/") == "test");
    CHECK(exclude_pattern("././a/b//") == "a/b");
    CHECK(exclude_pattern("**") == "**");
    CHECK_FALSE(exclude_pattern(""));
    CHECK_FALSE(exclude_pattern("./"));
    CHECK_FALSE(exclude_pattern("."));
    CHECK_FALSE(exclude_pattern("/abs"));
    test::ScratchDir dir;
    const std::vector<ExcludePatterns> sets{{dir.path() / "proj", {"test"}, "settings"},
                                            {dir.path(), {"proj/bench", "test"}, "--extend-exclude"}};
    CHECK(excluded_by(sets, dir.path() / "proj" / "test" / "a.py")->origin == "settings");
    CHECK(excluded_by(sets, dir.path() / "proj" / "bench" / "a.py")->origin == "--extend-exclude");
    CHECK(excluded_by(sets, dir.path() / "test" / "a.py")->origin == "--extend-exclude");  // outside proj/
    CHECK(excluded_by(sets, dir.path() / "proj" / "python" / "a.py") == nullptr);
  }

  TEST_CASE("exclude: ** matches any number of whole directories, none included") {
    test::ScratchDir dir;
    const fs::path file = dir.write("proj/.kvpatch.toml",
                                    "exclude = [\"**/test_*.py\", \"bench/**/gen\", \"docs/**\", \"a**b.py\"]\n");
    const ProjectConfig config = read_project_config(file);
    const fs::path proj = file.parent_path();
    CHECK(excluded(config_exclude_patterns(config), proj / "test_top.py"));                      // ** matching no directory
    CHECK(excluded(config_exclude_patterns(config), proj / "python" / "sglang" / "test_mla.py"));  // ... and two
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "python" / "sglang" / "mla_test.py"));
    CHECK(excluded(config_exclude_patterns(config), proj / "bench" / "gen" / "x.py"));
    CHECK(excluded(config_exclude_patterns(config), proj / "bench" / "a" / "b" / "gen" / "x.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "bench" / "a" / "gen.py"));
    CHECK(excluded(config_exclude_patterns(config), proj / "docs" / "conf.py"));
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "docsite" / "conf.py"));
    CHECK(excluded(config_exclude_patterns(config), proj / "axxb.py"));  // ** inside a segment is fnmatch's *: it stops at /
    CHECK_FALSE(excluded(config_exclude_patterns(config), proj / "ax" / "xb.py"));
  }

  TEST_CASE("exclude errors: not a list, not a string, empty or absolute") {
    test::ScratchDir dir;
    const fs::path f = dir.path() / "kvpatch.toml";
    dir.write("kvpatch.toml", "exclude = \"test\"\n");
    CHECK(read_error(f) == f.string() + ":1: 'exclude' must be a list of path patterns; write exclude = [\"test\", "
                                        "\"benchmark/*.py\"]");
    dir.write("kvpatch.toml", "exclude = [\n  \"test\",\n  3,\n]\n");
    CHECK(read_error(f) == f.string() + ":3: 'exclude' must be a string; quote the value, e.g. exclude = \"...\"");
    dir.write("kvpatch.toml", "exclude = [\"/abs\"]\n");
    CHECK(read_error(f) == f.string() + ":1: exclude pattern '/abs' is empty or absolute; write it relative to this "
                                        "file's directory, e.g. \"test\"");
  }

  TEST_CASE("per-file-ignores: pattern = [rule ids], matched as exclude matches, each id ignored by the first entry") {
    test::ScratchDir dir;
    const fs::path file = dir.write("proj/pyproject.toml",
                                    "[tool.kvpatch.per-file-ignores]\n\"test/**\" = [\"plan-a\", \"cast-b\"]\n"
                                    "\"./bench/mla.py\" = [\"plan-a\"]\n\"**/test_*.py\" = [\"field-c\", \"plan-a\"]\n");
    const ProjectConfig config = read_project_config(file);
    REQUIRE(config.per_file_ignores.size() == 3);
    const std::vector<PerFileIgnores> entries = config_per_file_ignores(config);
    const fs::path proj = file.parent_path();
    // TOML keeps a table sorted by key: "**/test_*.py", "bench/mla.py", "test/**".
    CHECK(entries[0].paths.patterns == std::vector<std::string>{"**/test_*.py"});
    CHECK(entries[1].paths.patterns == std::vector<std::string>{"bench/mla.py"});
    CHECK(entries[1].origin() == file.string() + ":3");
    CHECK(entries[2].ids == std::vector<std::string>{"plan-a", "cast-b"});
    CHECK(entries[2].paths.base == proj);
    using Ignored = std::vector<std::pair<std::string, std::string>>;
    const std::string at = "per-file-ignores at " + file.string();
    CHECK(ignored_in_file(entries, proj / "test" / "srt" / "mla.py") == Ignored{{"plan-a", at + ":2"}, {"cast-b", at + ":2"}});
    CHECK(ignored_in_file(entries, proj / "test" / "test_mla.py") ==
          Ignored{{"field-c", at + ":4"}, {"plan-a", at + ":4"}, {"cast-b", at + ":2"}});
    CHECK(ignored_in_file(entries, proj / "bench" / "mla.py") == Ignored{{"plan-a", at + ":3"}});
    CHECK(ignored_in_file(entries, proj / "python" / "mla.py").empty());
    CHECK(ignored_in_file(entries, dir.path() / "test" / "mla.py").empty());  // outside the file's directory
  }

  TEST_CASE("select and ignore: lists of rule ids with their lines; an empty select is kept, selecting nothing") {
    test::ScratchDir dir;
    const fs::path f = dir.write("proj/pyproject.toml", "[tool.kvpatch]\nignore = [\"cast-b\"]\n\nselect = []\n");
    const ProjectConfig config = read_project_config(f);
    CHECK(config.ignore == std::vector<std::string>{"cast-b"});
    CHECK(config.ignore_line == 2);
    REQUIRE(config.select.has_value());
    CHECK(config.select->empty());
    CHECK(config.select_line == 4);
    CHECK_FALSE(read_project_config(dir.write(".kvpatch.toml", "ignore = []\n")).select.has_value());
    const fs::path g = dir.path() / ".kvpatch.toml";
    dir.write(".kvpatch.toml", "\nselect = \"plan-a\"\n");
    CHECK(read_error(g) == g.string() + ":2: 'select' must be a list of rule ids; write select = "
                                        "[\"flashinfer-mla-run-kv-scales\"] (`kvpatch rule` lists the ids)");
    dir.write(".kvpatch.toml", "ignore = [\n  1,\n]\n");
    CHECK(read_error(g) == g.string() + ":2: 'ignore' must be a string; quote the value, e.g. ignore = \"...\"");
  }

  TEST_CASE("per-file-ignores errors: not a table, a bad pattern, no ids, an id that is not a string") {
    test::ScratchDir dir;
    const fs::path f = dir.path() / ".kvpatch.toml";
    dir.write(".kvpatch.toml", "per-file-ignores = [\"test\"]\n");
    CHECK(read_error(f) == f.string() + ":1: 'per-file-ignores' must be a table of path patterns; write "
                                        "[per-file-ignores] and \"PATTERN\" = [\"RULE-ID\"] lines under it");
    dir.write(".kvpatch.toml", "[per-file-ignores]\n\"/abs/*.py\" = [\"x\"]\n");
    CHECK(read_error(f) == f.string() + ":2: per-file-ignores pattern '/abs/*.py' is empty or absolute; write it "
                                        "relative to this file's directory, e.g. \"test/**\"");
    dir.write(".kvpatch.toml", "[per-file-ignores]\n\n\"test\" = []\n");
    CHECK(read_error(f) == f.string() + ":3: per-file-ignores \"test\" must list rule ids; write \"test\" = "
                                        "[\"RULE-ID\"] (`kvpatch rule` lists the ids)");
    dir.write(".kvpatch.toml", "[per-file-ignores]\n\"test\" = \"x\"\n");
    CHECK(read_error(f) == f.string() + ":2: per-file-ignores \"test\" must list rule ids; write \"test\" = "
                                        "[\"RULE-ID\"] (`kvpatch rule` lists the ids)");
    dir.write(".kvpatch.toml", "[per-file-ignores]\n\"test\" = [\n  1,\n]\n");
    CHECK(read_error(f) == f.string() + ":3: 'per-file-ignores' must be a string; quote the value, e.g. "
                                        "per-file-ignores = \"...\"");
    dir.write(".kvpatch.toml", "per_file_ignores = {}\n");
    CHECK(read_error(f) == f.string() + ":1: unknown kvpatch setting 'per_file_ignores'; write it per-file-ignores, as "
                                        "ruff spells its own");
    const fs::path py = dir.write("pyproject.toml", "[tool.kvpatch]\nper-file-ignores = 3\n");
    CHECK(read_error(py) == py.string() + ":2: 'per-file-ignores' must be a table of path patterns; write "
                                          "[tool.kvpatch.per-file-ignores] and \"PATTERN\" = [\"RULE-ID\"] lines under it");
  }
}
