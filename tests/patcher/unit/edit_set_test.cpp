// EditSet: sorted, non-overlapping byte-range edits applied in one pass.
#include <doctest/doctest.h>

#include "kvpatch/edit_set.h"

using namespace kvpatch;

TEST_SUITE("edit_set") {
  TEST_CASE("edits apply in offset order whatever order they were added in") {
    EditSet set;
    set.add({6, 11, "there", "r"});
    set.add({0, 5, "HELLO", "r"});
    set.add({11, 11, "!", "r"});
    CHECK(set.size() == 3);
    CHECK(set.apply("hello world") == "HELLO there!");
  }

  TEST_CASE("overlapping edits are rejected") {
    EditSet set;
    set.add({2, 6, "x", "a"});
    CHECK_THROWS_AS(set.add({5, 8, "y", "b"}), OverlappingEdit);
    CHECK_THROWS_AS(set.add({0, 3, "y", "b"}), OverlappingEdit);
    CHECK_THROWS_AS(set.add({3, 4, "y", "b"}), OverlappingEdit);
    CHECK_THROWS_AS(set.add({4, 4, "inside", "b"}), OverlappingEdit);
    CHECK_FALSE(set.fits({1, 7, "z", "c"}));
    CHECK(set.size() == 1);
  }

  TEST_CASE("two insertions at one offset are rejected: their order would be a guess") {
    EditSet set;
    set.add({4, 4, "a", "r"});
    CHECK_THROWS_AS(set.add({4, 4, "b", "r"}), OverlappingEdit);
  }

  TEST_CASE("edits that only touch are fine, an insertion at a replacement's start goes first") {
    EditSet set;
    set.add({2, 4, "XY", "r"});
    set.add({4, 6, "ZW", "r"});
    set.add({2, 2, "<", "r"});
    set.add({6, 6, ">", "r"});
    CHECK(set.apply("abcdefgh") == "ab<XYZW>gh");
  }

  TEST_CASE("an identical edit is kept once, so two rules asking the same thing agree") {
    EditSet set;
    set.add({1, 2, "x", "a"});
    set.add({1, 2, "x", "b"});
    CHECK(set.size() == 1);
    CHECK(set.apply("abc") == "axc");
  }

  TEST_CASE("an edit ending before it begins is rejected; an empty set changes nothing") {
    EditSet set;
    CHECK_THROWS_AS(set.add({5, 3, "", "r"}), OverlappingEdit);
    CHECK(set.apply("same") == "same");
    CHECK(set.empty());
  }
}
