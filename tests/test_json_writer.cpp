// io/json_writer.hpp: JSON written from the strict reader's value type. Expected texts are written
// by hand from RFC 8259 (and Python's json.dumps(separators=(",", ":"), ensure_ascii=False), which
// spells strings the same way); every text the writer produces must read back through the strict
// reader to the same text.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/json_writer.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_json_writer {

using muninn::io::json;
using muninn::io::json_object_builder;
using muninn::io::json_value;
using muninn::io::parse_json;
using muninn::io::to_json_text;

namespace {

// Text -> value -> text: the writer's spelling of a parsed document.
std::string rewrite(const std::string& text) { return to_json_text(parse_json(text, "test")); }

}  // namespace

TEST(JsonWriter, WritesParsedDocumentsCompactlyInMemberOrder) {
  EXPECT_EQ(rewrite(R"( { "b" : [1, 2 ,{"x": null}], "a": true, "c": false, "d": "s" } )"),
            R"({"b":[1,2,{"x":null}],"a":true,"c":false,"d":"s"})");
  EXPECT_EQ(rewrite("[]"), "[]");
  EXPECT_EQ(rewrite("{}"), "{}");
  EXPECT_EQ(rewrite(R"([[],{},[[]]])"), R"([[],{},[[]]])");
}

TEST(JsonWriter, NumbersAreExactIntegersOrShortestRoundTripDoubles) {
  EXPECT_EQ(rewrite("[0, -1, 9007199254740993, -9223372036854775808]"), "[0,-1,9007199254740993,-9223372036854775808]");
  EXPECT_EQ(rewrite("[0.1, 1.5, -2.5e-8, 1e300]"), "[0.1,1.5,-2.5e-08,1e+300]");
  EXPECT_EQ(to_json_text(json_value(0.1 + 0.2)), "0.30000000000000004");
  for (double d : {0.1, 1.0 / 3.0, 6.02214076e23, 5e-324, std::numeric_limits<double>::max()}) {
    const json back = parse_json(to_json_text(json_value(d)), "test");
    EXPECT_EQ(back.as_double(), d) << to_json_text(json_value(d));
  }
  EXPECT_EQ(to_json_text(json_value(std::int64_t(-42))), "-42");
  EXPECT_EQ(to_json_text(json_value(std::uint32_t(4000000000u))), "4000000000");
}

TEST(JsonWriter, NonFiniteNumbersAreAnErrorNotText) {
  for (double d : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})
    EXPECT_THROW((void)to_json_text(json_value(d)), muninn::error);
}

TEST(JsonWriter, StringsEscapeQuotesBackslashesAndControlsOnly) {
  EXPECT_EQ(to_json_text(json_value(std::string("a\"b\\c\n\t\r\b\f\x01\x1f/\xc3\xa9\xe4\xb8\xad"))),
            "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f/\xc3\xa9\xe4\xb8\xad\"");
  EXPECT_EQ(to_json_text(json_value(std::string("a\0b", 3))), "\"a\\u0000b\"");
  EXPECT_EQ(rewrite(R"(["\u00e9\ud83d\ude00"])"), "[\"\xc3\xa9\xf0\x9f\x98\x80\"]");
}

TEST(JsonWriter, BuilderKeepsOrderAndRefusesADuplicateKey) {
  json_object_builder b;
  EXPECT_TRUE(b.empty());
  b.add("z", 1).add("a", "x").add("m", json()).add("t", true).add("f", 0.5);
  EXPECT_EQ(to_json_text(b.build()), R"({"z":1,"a":"x","m":null,"t":true,"f":0.5})");
  json_object_builder d;
  d.add("k", 1);
  EXPECT_THROW(d.add("k", 2), muninn::error);
  EXPECT_EQ(to_json_text(muninn::io::json_array(std::vector<int>{3, 4})), "[3,4]");
}

TEST(JsonWriter, DeepValuesAreWrittenWithoutRecursion) {
  // Deeper than the reader accepts (256): the writer walks an explicit stack, so depth costs heap only.
  constexpr int depth = 5000;
  json v = json::make_array({});
  for (int i = 0; i < depth; ++i) {
    json::array_t a;
    a.push_back(std::move(v));
    v = json::make_array(std::move(a));
  }
  const std::string text = to_json_text(v);
  EXPECT_EQ(text.size(), 2u * (depth + 1u));
  EXPECT_EQ(text.substr(0, 3), "[[[");
  EXPECT_EQ(text.substr(text.size() - 3), "]]]");
}

}  // namespace test_json_writer
