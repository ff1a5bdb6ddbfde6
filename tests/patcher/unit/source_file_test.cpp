// Source loading: encoding checks, BOM, line endings, positions, and the errors for bad inputs.
#include <doctest/doctest.h>

#include "kvpatch/input_error.h"
#include "kvpatch/python_syntax.h"
#include "kvpatch/source_file.h"
#include "test_support.h"

using namespace kvpatch;

TEST_SUITE("source_file") {
  TEST_CASE("one_line: code over several lines reads as one, continuations included, so texts compare as Python reads them") {
    CHECK(one_line("k.to(\n    q.dtype\n)") == "k.to(q.dtype)");
    CHECK(one_line("self \\\n        .data_type") == "self.data_type");
    CHECK(one_line("self.\\\r\n    data_type") == "self.data_type");
    CHECK(one_line("a = \\\n    b") == "a = b");
    CHECK(one_line("a  +\n b") == "a + b");
    CHECK(one_line("x\\y") == "x\\y");  // a backslash that ends no line is kept
  }

  TEST_CASE("positions are 1-based lines and byte columns, after any BOM") {
    const SourceFile f("x.py", "x.py", "\xEF\xBB\xBF" "ab\r\ncd\n\tef");
    CHECK(f.bom() == "\xEF\xBB\xBF");
    CHECK(f.text() == "ab\r\ncd\n\tef");
    CHECK(f.line_ending() == "\r\n");
    CHECK(f.line_count() == 3);
    CHECK(f.position(0).line == 1);
    CHECK(f.position(4).line == 2);
    CHECK(f.position(4).column == 1);
    CHECK(f.position(8).column == 2);
    CHECK(f.line_text(1) == "ab");
    CHECK(f.line_text(3) == "\tef");
    CHECK(f.line_content_end(1) == 2);
    CHECK(f.line_end(1) == 4);
    CHECK(f.indentation_of_line(3) == "\t");
    CHECK(f.content() == "\xEF\xBB\xBF" "ab\r\ncd\n\tef");
  }

  TEST_CASE("a file without line breaks uses LF for insertions") {
    CHECK(SourceFile("x.py", "x.py", "x = 1").line_ending() == "\n");
  }

  TEST_CASE("UTF-8 validation finds the first bad byte") {
    CHECK(first_invalid_utf8("plain ascii") == std::string_view::npos);
    CHECK(first_invalid_utf8("注意：模型 Grüße") == std::string_view::npos);
    CHECK(first_invalid_utf8("ab\xFF") == 2);
    CHECK(first_invalid_utf8("a\xC3") == 1);             // truncated sequence
    CHECK(first_invalid_utf8("\xC0\xAF") == 0);          // overlong form
    CHECK(first_invalid_utf8("\xED\xA0\x80") == 0);      // UTF-16 surrogate
  }

  TEST_CASE("bad inputs are refused with the file, the line and a remedy") {
    test::ScratchDir dir;
    auto error_of = [&](const std::filesystem::path& p, std::size_t limit = kMaxSourceBytes) {
      try {
        load_source_file(p, p.filename().string(), limit);
      } catch (const InputError& e) {
        return e;
      }
      FAIL("no error for " << p);
      return InputError("", 0, "", "");
    };
    const InputError missing = error_of(dir.path() / "missing.py");
    CHECK(std::string(missing.what()) == "no such file");
    const InputError binary = error_of(dir.write("bin.py", std::string("x = 1\ny = 2\0\n", 13)));
    CHECK(binary.line() == 2);
    CHECK(std::string(binary.what()).find("binary") != std::string::npos);
    const InputError latin1 = error_of(dir.write("latin1.py", "# ok\n# caf\xE9\n"));
    CHECK(latin1.line() == 2);
    CHECK(latin1.formatted() == "latin1.py:2: not valid UTF-8; re-encode the file as UTF-8 (Python 3's default source encoding)");
    const InputError big = error_of(dir.write("big.py", std::string(100, 'x')), 64);
    CHECK(std::string(big.what()).find("over the limit") != std::string::npos);
    const InputError directory = error_of(dir.path());
    CHECK(std::string(directory.what()) == "not a regular file");
  }

  TEST_CASE("a loaded file records what apply compares before writing") {
    test::ScratchDir dir;
    const auto p = dir.write("ok.py", "x = 1\n");
    const SourceFile f = load_source_file(p, "ok.py");
    CHECK(f.text() == "x = 1\n");
    CHECK(f.modified_time == std::filesystem::last_write_time(p));
    CHECK(f.permissions == std::filesystem::status(p).permissions());
  }

  TEST_CASE("a syntax error refuses the file at the first error's line") {
    try {
      parse_source_file(SourceFile("bad.py", "bad.py", "x = 1\ndef f(:\n    pass\n"));
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.line() == 2);
      CHECK(e.file() == "bad.py");
    }
    try {
      parse_source_file(SourceFile("bad.py", "bad.py", "x = (1,\ny = 2\n"));
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.line() >= 1);
    }
  }
}
