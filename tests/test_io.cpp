// Tests for muninn/io: JSON, .npy, safetensors (single and sharded), config.json and the Huginn name map.
// Oracles: hand-written bytes and values, the header numpy 2.x writes, and shapes from the Huginn reference.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/names.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/mapped_file.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/io/safetensors.hpp"
#include "test_io_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_io {

namespace fs = std::filesystem;
using muninn::dtype;
using muninn::io::checkpoint;
using muninn::io::json;
using muninn::io::tensor_to_write;
using muninn::io::write_safetensors;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

using muninn_test::error_of;
using muninn_test::write_bytes;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file assembled by hand, independent of write_safetensors.
std::string raw_safetensors(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string float_bytes(const std::vector<float>& v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

// Each test gets its own directory under the system temp dir, removed afterwards.
class io_test : public muninn_test::temp_dir_test {
 protected:
  io_test() : temp_dir_test("muninn_test_io_") {}
};

// ------------------------------------------------------------------------------------------- JSON

TEST(json_parse, values_and_key_order) {
  const json j = muninn::io::parse_json(
      R"( {"b": 1, "a": [true, false, null, -0.5, 1e3, "x", {}], "c": {"z": [], "y": 2.25}} )", "t.json");
  ASSERT_TRUE(j.is_object());
  const auto& o = j.as_object();
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].first, "b");
  EXPECT_EQ(o[1].first, "a");
  EXPECT_EQ(o[2].first, "c");
  EXPECT_EQ(j.at("b").as_int(), 1);
  const json& a = j.at("a");
  ASSERT_EQ(a.size(), 7u);
  EXPECT_TRUE(a[0].as_bool());
  EXPECT_FALSE(a[1].as_bool());
  EXPECT_TRUE(a[2].is_null());
  EXPECT_EQ(a[3].as_double(), -0.5);
  EXPECT_FALSE(a[3].is_int());
  EXPECT_TRUE(a[4].is_int());
  EXPECT_EQ(a[4].as_int(), 1000);
  EXPECT_EQ(a[5].as_string(), "x");
  EXPECT_TRUE(a[6].is_object());
  EXPECT_EQ(j.at("c").at("y").as_double(), 2.25);
  EXPECT_EQ(j.at("c").as_object()[0].first, "z");
  EXPECT_EQ(j.find("nope"), nullptr);
  EXPECT_NE(j.find("c"), nullptr);
}

TEST(json_parse, integers_are_exact_beyond_double) {
  const json j = muninn::io::parse_json("[9007199254740993, -9223372036854775808, 9223372036854775807, 0, -0]", "t");
  EXPECT_EQ(j[0].as_int(), 9007199254740993LL);  // 2^53 + 1: not representable as double
  EXPECT_EQ(j[1].as_int(), INT64_MIN);
  EXPECT_EQ(j[2].as_int(), INT64_MAX);
  EXPECT_EQ(j[3].as_int(), 0);
  EXPECT_EQ(j[4].as_int(), 0);
  const json big = muninn::io::parse_json("18446744073709551616", "t");  // 2^64: a number, not an int64
  EXPECT_TRUE(big.is_number());
  EXPECT_EQ(big.as_double(), 18446744073709551616.0);
  EXPECT_THAT(error_of([] { muninn::io::parse_json("1.5", "t").as_int(); }), HasSubstr("integer"));
  EXPECT_THAT(error_of([] { muninn::io::parse_json("\"s\"", "t").as_int(); }), HasSubstr("found string"));
  EXPECT_THAT(error_of([] { muninn::io::parse_json("{}", "t").at("k"); }), HasSubstr("'k'"));
}

TEST(json_parse, string_escapes_and_utf8) {
  const json j = muninn::io::parse_json(
      R"(["\"\\\/\b\f\n\r\t", "\u00e9\u20AC", "\ud83d\ude00", "caf\u00C9", "ü✓"])", "t");
  EXPECT_EQ(j[0].as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(j[1].as_string(), "\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(j[2].as_string(), "\xF0\x9F\x98\x80");  // U+1F600 from a surrogate pair
  EXPECT_EQ(j[3].as_string(), "caf\xC3\x89");
  EXPECT_EQ(j[4].as_string(), "\xC3\xBC\xE2\x9C\x93");  // raw UTF-8 passes through
}

TEST(json_parse, escaping_round_trip) {
  std::string out;
  muninn::io::append_json_string(out, std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(muninn::io::parse_json(out, "t").as_string(), std::string("a\"b\\c\n\x01", 7));
}

TEST(json_parse, errors_name_source_line_and_column) {
  const auto err = [](const std::string& text) {
    return error_of([&] { muninn::io::parse_json(text, "conf.json"); });
  };
  EXPECT_THAT(err("{\n  \"a\": 1,\n  \"b\": tru\n}"), HasSubstr("conf.json:3:8:"));
  EXPECT_THAT(err("[1, 2,]"), AllOf(HasSubstr("conf.json:1:7:"), HasSubstr("']'")));
  EXPECT_THAT(err("{\"a\": 1,\n \"a\": 2}"), AllOf(HasSubstr("conf.json:2:2:"), HasSubstr("duplicate key \"a\"")));
  EXPECT_THAT(err("\"\\ud800\""), AllOf(HasSubstr("conf.json:1:2:"), HasSubstr("surrogate")));
  EXPECT_THAT(err("\"\\udc00\""), HasSubstr("surrogate"));
  EXPECT_THAT(err("\"\\ud800\\u0041\""), HasSubstr("surrogate"));
  EXPECT_THAT(err("\"\\x\""), AllOf(HasSubstr("conf.json:1:2:"), HasSubstr("invalid escape")));
  EXPECT_THAT(err("\"\\u12g4\""), AllOf(HasSubstr("conf.json:1:6:"), HasSubstr("hex")));
  EXPECT_THAT(err("\"a\tb\""), AllOf(HasSubstr("conf.json:1:3:"), HasSubstr("control character")));
  EXPECT_THAT(err("\"\xC3\x28\""), HasSubstr("UTF-8"));
  EXPECT_THAT(err("\"\xED\xA0\x80\""), HasSubstr("UTF-8"));  // encoded surrogate
  EXPECT_THAT(err("01"), AllOf(HasSubstr("conf.json:1:2:"), HasSubstr("leading zero")));
  EXPECT_THAT(err("1."), HasSubstr("decimal point"));
  EXPECT_THAT(err("-"), HasSubstr("digit"));
  EXPECT_THAT(err("1e400"), HasSubstr("range"));
  EXPECT_THAT(err("-0.01e311"), HasSubstr("range"));
  EXPECT_THAT(err("\"abc"), HasSubstr("unterminated string"));
  EXPECT_THAT(err("1 2"), AllOf(HasSubstr("conf.json:1:3:"), HasSubstr("trailing")));
  EXPECT_THAT(err(""), HasSubstr("empty"));
  EXPECT_THAT(err("  \n "), AllOf(HasSubstr("conf.json:2:2:"), HasSubstr("empty")));
  EXPECT_THAT(err("{\"a\" 1}"), HasSubstr("':'"));
  EXPECT_THAT(err("{1: 2}"), HasSubstr("string key"));
  EXPECT_THAT(err("[1 2]"), HasSubstr("',' or ']'"));
  EXPECT_THAT(err("nul"), HasSubstr("conf.json:1:1:"));
  EXPECT_THAT(err("NaN"), HasSubstr("unexpected character"));
  EXPECT_THAT(err(std::string(300, '[') + std::string(300, ']')), HasSubstr("nesting"));
}

// Values own their children: copies are deep, moves leave null behind (run under ASan by the
// debug preset's unit tests).
TEST(json, copies_are_deep_and_moves_leave_null) {
  json a = muninn::io::parse_json(R"({"s": "a string longer than fifteen bytes", "e": "", "n": [1, [2.5, {"k": true}]]})", "t");
  json b = a;
  EXPECT_EQ(b.at("s").as_string(), "a string longer than fifteen bytes");
  EXPECT_EQ(b.at("e").as_string(), "");
  EXPECT_EQ(b.at("n")[1][1].at("k").as_bool(), true);
  EXPECT_NE(&a.at("n")[1], &b.at("n")[1]);
  json c = std::move(a);
  EXPECT_TRUE(a.is_null());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(c.at("n")[1][0].as_double(), 2.5);
  c = b;
  b = json::make_array({json::make_string("x"), json::make_number(3, true, 3)});
  EXPECT_EQ(c.at("n")[0].as_int(), 1);
  EXPECT_EQ(b[1].as_int(), 3);
  const json& self = c;
  c = self;
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.as_object()[0].first, "s");
}

// Numbers below the smallest double are valid JSON: they parse to (signed) zero, as in Python's
// json, and are not integers; denormals keep their value.
TEST(json, underflow_parses_to_zero) {
  const json j = muninn::io::parse_json("[1e-400, -1e-400, 0.0001e-321, 123e-500, 1e-310, 4.9e-324, 0e-99999]", "t");
  for (std::size_t i : {0u, 1u, 2u, 3u}) {
    EXPECT_EQ(j[i].as_double(), 0.0) << i;
    EXPECT_FALSE(j[i].is_int()) << i;
  }
  EXPECT_TRUE(std::signbit(j[1].as_double()));
  EXPECT_EQ(j[4].as_double(), 1e-310);
  EXPECT_GT(j[5].as_double(), 0.0);
  EXPECT_EQ(j[6].as_double(), 0.0);
}

TEST_F(io_test, read_json_file_and_missing_file) {
  write_bytes(path("a.json"), "{\"x\": [1, 2]}");
  EXPECT_EQ(muninn::io::read_json_file(path("a.json")).at("x")[1].as_int(), 2);
  EXPECT_THAT(error_of([&] { muninn::io::read_json_file(path("none.json")); }),
              AllOf(HasSubstr(path("none.json")), HasSubstr("No such file")));
  write_bytes(path("bad.json"), "{\"x\": [1, 2}");
  EXPECT_THAT(error_of([&] { muninn::io::read_json_file(path("bad.json")); }), HasSubstr(path("bad.json") + ":1:12:"));
}

// ------------------------------------------------------------------------------------ mapped_file

TEST_F(io_test, mapped_file_maps_moves_and_reports_errors) {
  write_bytes(path("m.bin"), "hello");
  muninn::io::mapped_file a(path("m.bin"));
  EXPECT_EQ(a.view(), "hello");
  const auto* p = a.data();
  muninn::io::mapped_file b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  write_bytes(path("empty.bin"), "");
  EXPECT_EQ(muninn::io::mapped_file(path("empty.bin")).size(), 0u);
  EXPECT_THAT(error_of([&] { muninn::io::mapped_file m(path("nope.bin")); }),
              AllOf(HasSubstr(path("nope.bin")), HasSubstr("No such file")));
  EXPECT_THAT(error_of([&] { muninn::io::mapped_file m(dir_.string()); }), HasSubstr("not a regular file"));
}

// -------------------------------------------------------------------------------------------- npy

// The headers numpy 2.x np.save writes (checked byte for byte against numpy when the test was written).
std::string numpy_header(const std::string& dict) {
  std::string h = dict;
  h.resize(117, ' ');  // 10-byte prefix + 117 + '\n' = 128
  return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + h + "\n";
}

TEST_F(io_test, npy_header_matches_numpy) {
  const std::vector<float> v(6, 1.0f);
  muninn::io::write_npy(path("a.npy"), v.data(), {2, 3});
  const std::string bytes = read_bytes(path("a.npy"));
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 128), numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_EQ(bytes.substr(128), float_bytes({1, 1, 1, 1, 1, 1}));

  const float s = 2.5f;
  muninn::io::write_npy(path("s.npy"), &s, {});
  EXPECT_EQ(read_bytes(path("s.npy")).substr(0, 128),
            numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }"));
  const std::int32_t ints[7] = {0, 1, -2, 3, 4, 5, 2147483647};
  muninn::io::write_npy(path("i.npy"), ints, {7});
  EXPECT_EQ(read_bytes(path("i.npy")).substr(0, 128),
            numpy_header("{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }"));

  // numpy leaves 21 - len("12345") spare spaces after the dict; here they push the header from
  // 128 to 192 bytes, which a writer without them gets wrong.
  const std::vector<std::int64_t> shape = {12345, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  muninn::io::write_npy(path("l.npy"), static_cast<const float*>(nullptr), shape);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (12345, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0), }";
  dict.resize(181, ' ');
  EXPECT_EQ(read_bytes(path("l.npy")), std::string("\x93NUMPY\x01\x00\xb6\x00", 10) + dict + "\n");
}

TEST_F(io_test, npy_round_trip_any_rank) {
  std::vector<float> v(2 * 3 * 4);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.25f - 3.0f;
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{24}, {2, 3, 4}, {1, 2, 3, 1, 4}}) {
    muninn::io::write_npy(path("r.npy"), v.data(), shape);
    const auto r = muninn::io::read_npy_f32(path("r.npy"));
    EXPECT_EQ(r.shape, shape);
    EXPECT_EQ(r.data, v);
    EXPECT_EQ(read_bytes(path("r.npy")).size() % 4, 0u);
    EXPECT_EQ((read_bytes(path("r.npy")).size() - v.size() * 4) % 64, 0u);  // data starts 64-byte aligned
  }
  const float s = -7.5f;
  muninn::io::write_npy(path("s.npy"), &s, {});
  const auto rs = muninn::io::read_npy_f32(path("s.npy"));
  EXPECT_TRUE(rs.shape.empty());
  ASSERT_EQ(rs.data.size(), 1u);
  EXPECT_EQ(rs.data[0], -7.5f);

  const std::int32_t ids[4] = {65504, -1, 0, 7};
  muninn::io::write_npy(path("ids.npy"), ids, {2, 2});
  const auto ri = muninn::io::read_npy_i64(path("ids.npy"));
  EXPECT_EQ(ri.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ri.data, (std::vector<std::int64_t>{65504, -1, 0, 7}));
}

TEST_F(io_test, npy_reads_handwritten_int64_and_v2_files) {
  // A '<i8' file written by hand with a minimal (unpadded) header: readers must not assume numpy's padding.
  const std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,)}\n";
  std::string f = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict;
  const std::int64_t vals[2] = {-5, 1LL << 40};
  f.append(reinterpret_cast<const char*>(vals), 16);
  write_bytes(path("i8.npy"), f);
  EXPECT_EQ(muninn::io::read_npy_i64(path("i8.npy")).data, (std::vector<std::int64_t>{-5, 1LL << 40}));

  const std::string dict2 = "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1, 2), }\n";
  std::string g = std::string("\x93NUMPY\x02\x00", 8) + char(dict2.size()) + std::string(3, '\0') + dict2 +
                  float_bytes({0.5f, -1.0f});
  write_bytes(path("v2.npy"), g);
  const auto r = muninn::io::read_npy_f32(path("v2.npy"));
  EXPECT_EQ(r.shape, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(r.data, (std::vector<float>{0.5f, -1.0f}));
}

TEST_F(io_test, npy_errors_name_the_file) {
  const std::string header_f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n";
  const auto npy = [](const std::string& dict, const std::string& data) {
    return std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict + data;
  };
  write_bytes(path("f8.npy"), npy(header_f8, std::string(8, '\0')));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("f8.npy")); }),
              AllOf(HasSubstr(path("f8.npy")), HasSubstr("'<f8'")));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_i64(path("f8.npy")); }),
              AllOf(HasSubstr(path("f8.npy")), HasSubstr("'<f8'")));
  write_bytes(path("fo.npy"), npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", std::string(4, '\0')));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("fo.npy")); }),
              AllOf(HasSubstr(path("fo.npy")), HasSubstr("Fortran")));
  write_bytes(path("short.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", std::string(8, '\0')));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("short.npy")); }),
              AllOf(HasSubstr(path("short.npy")), HasSubstr("8 bytes")));
  write_bytes(path("magic.npy"), "NUMPY nope");
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("magic.npy")); }),
              AllOf(HasSubstr(path("magic.npy")), HasSubstr("magic")));
  write_bytes(path("dict.npy"), npy("{'descr': '<f4', 'shape': (3,), }\n", std::string(12, '\0')));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("dict.npy")); }),
              AllOf(HasSubstr(path("dict.npy")), HasSubstr("fortran_order")));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("none.npy")); }), HasSubstr(path("none.npy")));
}

// ------------------------------------------------------------------------------------ safetensors

TEST_F(io_test, safetensors_reads_a_handwritten_file) {
  // Header length 141 is odd, so the data is unaligned; metadata and trailing spaces are allowed.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]},)"
      R"("a":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}})";
  ASSERT_LE(header.size(), 141u);
  header += std::string(141 - header.size(), ' ');
  std::string data = std::string("\x80\x3f", 2) + float_bytes({1.5f, -2.0f});  // tensors tile the data, as required
  write_bytes(path("h.safetensors"), raw_safetensors(header, data));

  const checkpoint c = checkpoint::open(path("h.safetensors"));
  EXPECT_EQ(c.names(), (std::vector<std::string>{"b", "a"}));  // header order
  const auto& b = c.get("b");
  EXPECT_EQ(b.type, dtype::f32);
  EXPECT_EQ(b.shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(b.nbytes, 8u);
  EXPECT_EQ(b.file, path("h.safetensors"));
  EXPECT_EQ(c.read_f32("b"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(c.get("a").type, dtype::bf16);
  EXPECT_TRUE(c.get("a").shape.empty());
  EXPECT_EQ(c.read_f32("a"), (std::vector<float>{1.0f}));  // bf16 0x3f80 == 1.0
}

TEST_F(io_test, safetensors_write_read_round_trip_all_dtypes) {
  // Values exactly representable in bf16 and f16, so every conversion must be exact.
  const std::vector<float> exact = {0.0f, -0.0f, 1.0f, -2.25f, 0.5f, 3.0f, -1024.0f, 0.125f, 6.0f, -0.75f, 96.0f, 2.0f};
  write_safetensors(path("model.safetensors"),
                    {{"w.f32", tensor_to_write{{3, 4}, exact, dtype::f32}},
                     {"w.bf16", tensor_to_write{{2, 6}, exact, dtype::bf16}},
                     {"w.f16", tensor_to_write{{12}, exact, dtype::f16}},
                     {"big.f16", tensor_to_write{{2}, {65504.0f, 5.9604644775390625e-8f}, dtype::f16}},
                     {"big.bf16", tensor_to_write{{1}, {3.3895313892515355e38f}, dtype::bf16}}},
                    {{"format", "pt"}});
  // The writer keeps the data section 8-byte aligned.
  const std::string bytes = read_bytes(path("model.safetensors"));
  std::uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + hlen) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + hlen + 12 * 4 + 12 * 2 + 12 * 2 + 2 * 2 + 2);
  const json header = muninn::io::parse_json(bytes.substr(8, hlen), "hdr");
  EXPECT_EQ(header.at("__metadata__").at("format").as_string(), "pt");
  EXPECT_EQ(header.at("w.bf16").at("dtype").as_string(), "BF16");
  EXPECT_EQ(header.at("w.bf16").at("data_offsets")[0].as_int(), 48);
  EXPECT_EQ(header.at("w.bf16").at("data_offsets")[1].as_int(), 72);
  // bf16 bits of 1.0 are 0x3f80, f16 bits 0x3c00: check the raw bytes, not only the round trip.
  EXPECT_EQ(bytes.substr(8 + hlen + 48 + 4, 2), std::string("\x80\x3f", 2));
  EXPECT_EQ(bytes.substr(8 + hlen + 72 + 4, 2), std::string("\x00\x3c", 2));

  const checkpoint c = checkpoint::open(dir_.string());  // falls back to model.safetensors
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.read_f32("w.f32"), exact);
  EXPECT_EQ(c.read_f32("w.bf16"), exact);
  EXPECT_EQ(c.read_f32("w.f16"), exact);
  EXPECT_EQ(c.read_f32("big.f16"), (std::vector<float>{65504.0f, 5.9604644775390625e-8f}));
  EXPECT_EQ(c.read_f32("big.bf16"), (std::vector<float>{3.3895313892515355e38f}));
  EXPECT_EQ(c.get("w.bf16").shape, (std::vector<std::int64_t>{2, 6}));
  EXPECT_EQ(c.get("w.f16").nbytes, 24u);

  std::vector<muninn::bf16> as_bf16(12);
  c.read_into("w.f32", as_bf16.data(), as_bf16.size());
  EXPECT_EQ(as_bf16[2].bits, 0x3f80);
  EXPECT_EQ(as_bf16[3].bits, 0xc010);  // -2.25
  std::vector<muninn::f16> as_f16(12);
  c.read_into("w.bf16", as_f16.data(), as_f16.size());
  EXPECT_EQ(as_f16[2].bits, 0x3c00);
  EXPECT_EQ(as_f16[6].bits, 0xe400);  // -1024

  // A non-representable value rounds to nearest even on write: 1 + 2^-9 in bf16 rounds to 1.0.
  write_safetensors(path("r.safetensors"), {{"x", tensor_to_write{{2}, {1.001953125f, 1.005859375f}, dtype::bf16}}});
  EXPECT_EQ(checkpoint::open(path("r.safetensors")).read_f32("x"), (std::vector<float>{1.0f, 1.0078125f}));
}

TEST_F(io_test, safetensors_lookup_and_read_errors) {
  write_safetensors(path("model.safetensors"), {{"a", tensor_to_write{{2, 2}, {1, 2, 3, 4}}}});
  const checkpoint c = checkpoint::open(dir_.string());
  EXPECT_TRUE(c.has("a"));
  EXPECT_FALSE(c.has("b"));
  EXPECT_EQ(c.find("b"), nullptr);
  EXPECT_THAT(error_of([&] { c.get("b"); }), AllOf(HasSubstr("tensor 'b' not found in"), HasSubstr(dir_.string())));
  std::vector<float> dst(3);
  EXPECT_THAT(error_of([&] { c.read_into("a", dst.data(), dst.size()); }),
              AllOf(HasSubstr(path("model.safetensors")), HasSubstr("'a'"), HasSubstr("4 elements"), HasSubstr("holds 3")));
  EXPECT_THAT(error_of([&] { write_safetensors(path("x.safetensors"), {{"a", tensor_to_write{{3}, {1, 2}}}}); }),
              AllOf(HasSubstr(path("x.safetensors")), HasSubstr("'a'")));
  EXPECT_THAT(error_of([&] {
                write_safetensors(path("x.safetensors"), {{"a", tensor_to_write{{1}, {1}}}, {"a", tensor_to_write{{1}, {2}}}});
              }),
              AllOf(HasSubstr(path("x.safetensors")), HasSubstr("'a' given twice")));
}

TEST_F(io_test, safetensors_malformed_files) {
  const auto open_err = [&](const std::string& name, const std::string& bytes) {
    write_bytes(path(name), bytes);
    return error_of([&] { checkpoint::open(path(name)); });
  };
  const std::string tensor_a = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string good = raw_safetensors(tensor_a, float_bytes({1, 2}));

  EXPECT_THAT(open_err("trunc.safetensors", good.substr(0, 5)),
              AllOf(HasSubstr(path("trunc.safetensors")), HasSubstr("too short")));
  EXPECT_THAT(open_err("hlen.safetensors", le64(1000) + tensor_a),
              AllOf(HasSubstr(path("hlen.safetensors")), HasSubstr("header length 1000 exceeds")));
  EXPECT_THAT(open_err("hlen2.safetensors", le64(~0ull) + tensor_a), HasSubstr(path("hlen2.safetensors")));
  EXPECT_THAT(open_err("json.safetensors", raw_safetensors(R"({"a": {"dtype": "F32",)", "")),
              AllOf(HasSubstr(path("json.safetensors")), HasSubstr("safetensors header"), HasSubstr(":1:")));
  EXPECT_THAT(open_err("arr.safetensors", raw_safetensors("[1, 2]", "")),
              AllOf(HasSubstr(path("arr.safetensors")), HasSubstr("JSON object")));
  // The data section holds 8 bytes; the header claims 12.
  EXPECT_THAT(open_err("range.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("range.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("past the end")));
  // Truncating a good file cuts into the data section.
  EXPECT_THAT(open_err("cut.safetensors", good.substr(0, good.size() - 1)),
              AllOf(HasSubstr(path("cut.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("past the end")));
  EXPECT_THAT(open_err("rev.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("rev.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("end before")));
  EXPECT_THAT(open_err("size.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("size.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("span 8 bytes"),
                    HasSubstr("needs 12")));
  EXPECT_THAT(open_err("bf.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("bf.safetensors")), HasSubstr("needs 4")));
  for (const char* dt : {"I64", "F64", "U8", "BOOL", "F8_E4M3", "f32"}) {
    const std::string header = std::string(R"({"ids":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,8]}})";
    EXPECT_THAT(open_err("dt.safetensors", raw_safetensors(header, std::string(8, '\0'))),
                AllOf(HasSubstr(path("dt.safetensors")), HasSubstr("tensor 'ids'"), HasSubstr(std::string("dtype ") + dt),
                      HasSubstr("F32, BF16, F16")));
  }
  EXPECT_THAT(open_err("neg.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("neg.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("shape")));
  EXPECT_THAT(open_err("off3.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("off3.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("data_offsets")));
  EXPECT_THAT(open_err("miss.safetensors", raw_safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", float_bytes({1, 2}))),
              AllOf(HasSubstr(path("miss.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("data_offsets")));
  EXPECT_THAT(open_err("ovf.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                                       float_bytes({1, 2}))),
              AllOf(HasSubstr(path("ovf.safetensors")), HasSubstr("tensor 'a'"), HasSubstr("overflow")));
  // 3 * 2^62 elements: fits uint64 but not int64, where numel() and every caller count.
  EXPECT_THAT(open_err("ovf63.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F16","shape":[4611686018427387904,3],"data_offsets":[0,8]}})",
                                       float_bytes({1, 2}))),
              AllOf(HasSubstr(path("ovf63.safetensors")), HasSubstr("tensor 'a'"),
                    HasSubstr("shape [4611686018427387904, 3] overflows 64 bits")));
  EXPECT_THAT(open_err("hbig.safetensors", le64(100000001) + tensor_a),
              AllOf(HasSubstr(path("hbig.safetensors")), HasSubstr("header length 100000001 exceeds the format's limit")));
  EXPECT_THAT(open_err("dup.safetensors",
                       raw_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                       float_bytes({1, 2}))),
              AllOf(HasSubstr(path("dup.safetensors")), HasSubstr("duplicate key \"a\"")));
}

// The format requires the tensors to tile the data section exactly.
TEST_F(io_test, safetensors_byte_ranges_tile_the_data_section) {
  const auto open_err = [&](const std::string& name, const std::string& header, std::size_t n_floats) {
    write_bytes(path(name), raw_safetensors(header, float_bytes(std::vector<float>(n_floats, 1.0f))));
    return error_of([&] { checkpoint::open(path(name)); });
  };
  EXPECT_THAT(open_err("overlap.safetensors",
                       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 3),
              AllOf(HasSubstr(path("overlap.safetensors")), HasSubstr("tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)")));
  EXPECT_THAT(open_err("same.safetensors",
                       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 2),
              HasSubstr("overlaps"));
  EXPECT_THAT(open_err("gap.safetensors",
                       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 3),
              AllOf(HasSubstr(path("gap.safetensors")),
                    HasSubstr("tensor 'b' [8, 12) leaves bytes [4, 8) of the data section unused after tensor 'a'")));
  EXPECT_THAT(open_err("lead.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 2),
              HasSubstr("leaves bytes [0, 4)"));
  EXPECT_THAT(open_err("tail.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 2),
              AllOf(HasSubstr(path("tail.safetensors")), HasSubstr("data section holds 8 bytes but the tensors cover only 4")));
  // Tensors in any header order, empty ones included, are fine when they tile.
  write_bytes(path("ok.safetensors"),
              raw_safetensors(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                              R"("e":{"dtype":"F32","shape":[4611686018427387904,4,0],"data_offsets":[4,4]},)"
                              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                              float_bytes({1, 2})));
  const checkpoint c = checkpoint::open(path("ok.safetensors"));
  EXPECT_EQ(c.read_f32("b"), (std::vector<float>{2}));
  EXPECT_EQ(c.get("e").numel(), 0);
  EXPECT_EQ(c.read_f32("e"), (std::vector<float>{}));
}

// Extents whose product overflows int64 are an error; a zero extent after huge ones is an empty array.
TEST_F(io_test, npy_shape_products_are_checked) {
  const auto npy = [](const std::string& dict, const std::string& data) {
    return std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict + data;
  };
  write_bytes(path("ovf.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 3), }\n", ""));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_f32(path("ovf.npy")); }),
              AllOf(HasSubstr(path("ovf.npy")), HasSubstr("shape (4611686018427387904, 3) overflows 64 bits")));
  write_bytes(path("ovf2.npy"), npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1152921504606846976, 8), }\n", ""));
  EXPECT_THAT(error_of([&] { muninn::io::read_npy_i64(path("ovf2.npy")); }), HasSubstr("overflows 64 bits"));
  write_bytes(path("zero.npy"),
              npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4, 0), }\n", ""));
  const auto z = muninn::io::read_npy_f32(path("zero.npy"));
  EXPECT_EQ(z.numel(), 0);
  EXPECT_TRUE(z.data.empty());
}

TEST_F(io_test, checkpoint_open_missing_paths) {
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr(dir_.string()), HasSubstr("model.safetensors.index.json"), HasSubstr("model.safetensors")));
  EXPECT_THAT(error_of([&] { checkpoint::open(path("nowhere")); }),
              AllOf(HasSubstr(path("nowhere")), HasSubstr("does not exist")));
}

// Resident KiB of this process's mappings of `file` (the "Rss:" lines of /proc/self/smaps), or -1
// where the kernel does not report them.
long mapping_rss_kib(const fs::path& file) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  const std::string name = fs::canonical(file).string();
  long total = 0;
  bool in_file = false;
  for (std::string line; std::getline(smaps, line);) {
    const bool is_header = !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ');
    if (is_header) {
      in_file = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      total += std::stol(line.substr(4));
    }
  }
  return total;
}

// Loading copies every tensor out of the mapped file; the pages it read must not stay resident
// beside the copies, or a model peaks at twice its size while it loads.
TEST_F(io_test, reading_a_tensor_leaves_its_pages_of_the_mapped_file_unresident) {
  constexpr int tensors = 16, floats = 1 << 18;  // 16 tensors of 1 MiB
  std::vector<std::pair<std::string, tensor_to_write>> content;
  for (int t = 0; t < tensors; ++t) {
    std::vector<float> v(floats);
    for (int i = 0; i < floats; ++i) v[std::size_t(i)] = float(t * floats + i);
    content.emplace_back("t" + std::to_string(t), tensor_to_write{{floats}, std::move(v)});
  }
  write_safetensors(path("big.safetensors"), content);
  const checkpoint c = checkpoint::open(path("big.safetensors"));
  for (int t = 0; t < tensors; ++t) {
    const std::vector<float> v = c.read_f32("t" + std::to_string(t));
    ASSERT_EQ(v[0], float(t * floats));
    ASSERT_EQ(v.back(), float(t * floats + floats - 1));
  }
  const long rss = mapping_rss_kib(path("big.safetensors"));
  if (rss < 0) GTEST_SKIP() << "/proc/self/smaps is not readable here";
  // At most the header's page and the two edge pages each tensor shares with a neighbour.
  const long page_kib = long(sysconf(_SC_PAGESIZE) / 1024);
  EXPECT_LE(rss, (2 * tensors + 1) * page_kib) << "KiB of the 16 MiB file still resident after reading it";
  // Released pages are read again from the file: the values are unchanged.
  const std::vector<float> again = c.read_f32("t5");
  EXPECT_EQ(again[12345], float(5 * floats + 12345));
}

// Two shards plus an index, as Hugging Face writes them.
class sharded_test : public io_test {
 protected:
  void write_shards() {
    write_safetensors(path("model-00001-of-00002.safetensors"),
                      {{"x", tensor_to_write{{2}, {1, 2}}}, {"y", tensor_to_write{{1}, {3}, dtype::bf16}}});
    write_safetensors(path("model-00002-of-00002.safetensors"), {{"z", tensor_to_write{{2, 1}, {4, 5}, dtype::f16}}});
  }
  void write_index(const std::string& weight_map) {
    write_bytes(path("model.safetensors.index.json"),
                "{\"metadata\": {\"total_size\": 14},\n \"weight_map\": {" + weight_map + "}}");
  }
  static constexpr const char* good_map =
      R"("x": "model-00001-of-00002.safetensors", "z": "model-00002-of-00002.safetensors",)"
      R"( "y": "model-00001-of-00002.safetensors")";
};

TEST_F(sharded_test, opens_every_shard_once) {
  write_shards();
  write_index(good_map);
  write_safetensors(path("model.safetensors"), {{"other", tensor_to_write{{1}, {0}}}});  // the index wins
  const checkpoint c = checkpoint::open(dir_.string());
  EXPECT_EQ(c.files().size(), 2u);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(c.get("z").file, path("model-00002-of-00002.safetensors"));
  EXPECT_EQ(c.get("x").file, path("model-00001-of-00002.safetensors"));
  EXPECT_EQ(c.read_f32("x"), (std::vector<float>{1, 2}));
  EXPECT_EQ(c.read_f32("y"), (std::vector<float>{3}));
  EXPECT_EQ(c.read_f32("z"), (std::vector<float>{4, 5}));
  EXPECT_FALSE(c.has("other"));
  // The index file can be named directly; a moved checkpoint keeps its mappings.
  checkpoint d = checkpoint::open(path("model.safetensors.index.json"));
  const checkpoint e = std::move(d);
  EXPECT_EQ(e.read_f32("z"), (std::vector<float>{4, 5}));
}

TEST_F(sharded_test, missing_shard) {
  write_shards();
  fs::remove(path("model-00002-of-00002.safetensors"));
  write_index(good_map);
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr("model.safetensors.index.json"), HasSubstr("model-00002-of-00002.safetensors"),
                    HasSubstr("'z'"), HasSubstr("No such file")));
}

TEST_F(sharded_test, index_names_a_tensor_missing_from_its_shard) {
  write_shards();
  write_index(std::string(good_map) + R"(, "w": "model-00002-of-00002.safetensors")");
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr("model.safetensors.index.json"), HasSubstr("tensor 'w'"),
                    HasSubstr(path("model-00002-of-00002.safetensors")), HasSubstr("no such tensor")));
}

TEST_F(sharded_test, shard_holds_a_tensor_the_index_does_not_list) {
  write_shards();
  write_index(R"("x": "model-00001-of-00002.safetensors", "z": "model-00002-of-00002.safetensors")");
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr(path("model-00001-of-00002.safetensors")), HasSubstr("tensor 'y'"),
                    HasSubstr("does not list")));
}

TEST_F(sharded_test, duplicate_tensor_across_shards) {
  write_shards();
  write_safetensors(path("model-00002-of-00002.safetensors"),
                    {{"z", tensor_to_write{{2, 1}, {4, 5}}}, {"x", tensor_to_write{{2}, {9, 9}}}});
  write_index(good_map);
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr(path("model-00002-of-00002.safetensors")), HasSubstr("tensor 'x'"),
                    HasSubstr("model-00001-of-00002.safetensors")));
}

TEST_F(sharded_test, malformed_index) {
  write_shards();
  write_bytes(path("model.safetensors.index.json"), R"({"metadata": {}})");
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr("model.safetensors.index.json"), HasSubstr("weight_map")));
  write_index(R"("x": 3)");
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }),
              AllOf(HasSubstr("model.safetensors.index.json"), HasSubstr("'x'")));
  write_bytes(path("model.safetensors.index.json"), "{\"weight_map\": {\n\"x\": }}");
  EXPECT_THAT(error_of([&] { checkpoint::open(dir_.string()); }), HasSubstr("model.safetensors.index.json:2:6:"));
}

// A stranger's index must not make us open files outside the checkpoint directory.
TEST_F(sharded_test, shards_stay_inside_the_checkpoint) {
  write_shards();
  fs::create_directories(path("ckpt/sub"));
  fs::copy_file(path("model-00002-of-00002.safetensors"), path("ckpt/sub/z.safetensors"));
  fs::copy_file(path("model-00001-of-00002.safetensors"), path("ckpt/model-00001-of-00002.safetensors"));
  const auto index_err = [&](const std::string& z_shard) {
    write_bytes(path("ckpt/model.safetensors.index.json"),
                R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00001-of-00002.safetensors", )"
                R"("z": ")" + z_shard + "\"}}");
    return error_of([&] { checkpoint::open(path("ckpt")); });
  };
  const std::vector<std::string> outside = {"../model-00002-of-00002.safetensors",
                                            "sub/../../model-00002-of-00002.safetensors",
                                            path("model-00002-of-00002.safetensors")};
  for (const std::string& bad : outside)
    EXPECT_THAT(index_err(bad), AllOf(HasSubstr(path("ckpt/model.safetensors.index.json")), HasSubstr("tensor 'z'"),
                                      HasSubstr("names shard '" + bad + "'"), HasSubstr("outside the checkpoint directory")))
        << bad;
  // A symlink inside the directory that points out of it is followed only to be refused.
  fs::create_symlink(path("model-00002-of-00002.safetensors"), path("ckpt/link.safetensors"));
  EXPECT_THAT(index_err("link.safetensors"),
              AllOf(HasSubstr("tensor 'z'"), HasSubstr("names shard 'link.safetensors', which resolves to '" +
                                                       path("model-00002-of-00002.safetensors") + "'"),
                    HasSubstr("outside the checkpoint directory")));
  // Subdirectories are fine.
  write_bytes(path("ckpt/model.safetensors.index.json"),
              R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00001-of-00002.safetensors", )"
              R"("z": "sub/z.safetensors"}})");
  EXPECT_EQ(checkpoint::open(path("ckpt")).read_f32("z"), (std::vector<float>{4, 5}));
}

// The Hugging Face cache layout: snapshot files are symlinks into a sibling blobs/ directory.
TEST_F(sharded_test, hugging_face_cache_symlinks_are_followed) {
  write_shards();
  write_index(good_map);
  fs::create_directories(path("snap"));
  for (const char* f : {"model.safetensors.index.json", "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors"})
    fs::create_symlink(path(f), path(std::string("snap/") + f));
  const checkpoint c = checkpoint::open(path("snap"));
  EXPECT_EQ(c.read_f32("z"), (std::vector<float>{4, 5}));
}

TEST_F(io_test, strip_prefix_renames_and_detects_collisions) {
  write_safetensors(path("a.safetensors"),
                    {{"_orig_mod._original_module.w", tensor_to_write{{1}, {1}}}, {"v", tensor_to_write{{1}, {2}}}});
  checkpoint c = checkpoint::open(path("a.safetensors"));
  EXPECT_EQ(c.strip_prefix("_orig_mod._original_module."), 1u);
  EXPECT_TRUE(c.has("w"));
  EXPECT_FALSE(c.has("_orig_mod._original_module.w"));
  EXPECT_EQ(c.get("w").name, "w");
  EXPECT_EQ(c.read_f32("w"), (std::vector<float>{1}));
  write_safetensors(path("b.safetensors"), {{"p.w", tensor_to_write{{1}, {1}}}, {"w", tensor_to_write{{1}, {2}}}});
  checkpoint d = checkpoint::open(path("b.safetensors"));
  EXPECT_THAT(error_of([&] { d.strip_prefix("p."); }), AllOf(HasSubstr(path("b.safetensors")), HasSubstr("'p.w'")));
}

// ---------------------------------------------------------------------------------- config.json

// A config.json as RavenConfig.save_pretrained writes it for huginn-0125 (the released model's values).
const char* const huginn_0125_config = R"({
  "activation_checkpoint_impl": "per-iteration",
  "architecture_class_name": "RecurrentGPT",
  "architectures": [
    "RavenForCausalLM"
  ],
  "auto_map": {
    "AutoConfig": "raven_config_minimal.RavenConfig",
    "AutoModelForCausalLM": "raven_modeling_minimal.RavenForCausalLM"
  },
  "bias": false,
  "block_class_name": "SandwichBlock",
  "block_size": 4096,
  "bos_token_id": 65504,
  "effective_expected_depth": 132,
  "eos_token_id": 65505,
  "head_dim": 96,
  "init_orthogonal": false,
  "init_strategy": "takase",
  "init_values": {
    "embed_scale": 72.6636084983398,
    "embedding": 0.008703882797784892,
    "out_proj": 0.0005356869554443541,
    "std": 0.008703882797784892
  },
  "injection_type": "linear",
  "intermediate_size": 17920,
  "mean_backprop_depth": 8,
  "mean_recurrence": 32,
  "mlp_class_name": "GatedMLP",
  "model_type": "huginn_raven",
  "n_embd": 5280,
  "n_heads": 55,
  "n_layers": 8,
  "n_layers_in_coda": 2,
  "n_layers_in_prelude": 2,
  "n_layers_in_recurrent_block": 4,
  "nonlin_name": "SiLU",
  "norm_class_name": "RMSNorm_llama",
  "norm_eps": 1e-06,
  "num_key_value_heads": 55,
  "pad_token_id": 65509,
  "padded_vocab_size": 65536,
  "padding_multiple": 4096,
  "qk_bias": true,
  "rope_base": 50000,
  "sampling_scheme": "poisson-lognormal-filling",
  "state_init": "like-init",
  "test_time_noise": 0,
  "test_time_noise_type": "fixed",
  "tie_embeddings": true,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.47.1",
  "vocab_size": 65536
}
)";

TEST_F(io_test, reads_the_released_huginn_config) {
  write_bytes(path("config.json"), huginn_0125_config);
  const muninn::huginn_config c = muninn::io::read_model_config(dir_.string());
  EXPECT_EQ(c.source, path("config.json"));
  EXPECT_EQ(c.model_type, "huginn_raven");
  EXPECT_EQ(c.n_embd, 5280);
  EXPECT_EQ(c.n_heads, 55);
  EXPECT_EQ(c.n_kv_heads, 55);
  EXPECT_EQ(c.head_dim, 96);
  EXPECT_EQ(c.intermediate_size, 17920);
  EXPECT_EQ(c.vocab_size, 65536);
  EXPECT_EQ(c.n_layers_in_prelude, 2);
  EXPECT_EQ(c.n_layers_in_recurrent_block, 4);
  EXPECT_EQ(c.n_layers_in_coda, 2);
  EXPECT_EQ(c.n_unique_layers(), 8);
  EXPECT_EQ(c.mean_recurrence, 32);
  EXPECT_EQ(c.block_size, 4096);
  EXPECT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_base, 50000.0f);
  EXPECT_TRUE(c.qk_bias);
  EXPECT_FALSE(c.bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.injection_type, "linear");
  EXPECT_EQ(c.init_scale, 1.0f);
  EXPECT_EQ(c.init_std, 0.008703882797784892f);
}

TEST_F(io_test, reads_the_training_style_config_with_defaults) {
  // The repository's raven_config_minimal.json spelling: num_attention_heads, no head_dim,
  // padded_vocab_size or rope_base, plus a nested object Muninn does not use.
  write_bytes(path("raw.json"), R"({"name": "nebel-raven-3.5b", "hf_config": {"org": "tomg-group-umd"},
    "model_type": "huginn_raven", "block_size": 4096, "vocab_size": 65536, "padding_multiple": 4096,
    "tie_embeddings": true, "num_attention_heads": 55, "num_key_value_heads": 55, "n_embd": 5280,
    "intermediate_size": 17920, "bias": false, "norm_eps": 0.000001, "state_init": "like-init",
    "injection_type": "linear", "n_layers_in_recurrent_block": 4, "mean_recurrence": 32,
    "n_layers_in_prelude": 2, "n_layers_in_coda": 2, "qk_bias": true})");
  const muninn::huginn_config c = muninn::io::read_model_config(path("raw.json"));
  EXPECT_EQ(c.n_heads, 55);
  EXPECT_EQ(c.head_dim, 96);
  EXPECT_EQ(c.vocab_size, 65536);
  EXPECT_EQ(c.rope_base, 50000.0f);
  EXPECT_EQ(c.init_std, 0.0f);

  // Llama-style aliases.
  write_bytes(path("alias.json"), R"({"hidden_size": 64, "n_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "vocab_size": 100, "padded_vocab_size": 128, "n_layers_in_prelude": 1,
    "n_layers_in_recurrent_block": 2, "n_layers_in_coda": 0, "mean_recurrence": 4, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 256,
    "injection_type": "add", "init_scale": 0.0, "num_hidden_layers": 3})");
  const muninn::huginn_config a = muninn::io::read_model_config(path("alias.json"));
  EXPECT_EQ(a.n_embd, 64);
  EXPECT_EQ(a.n_kv_heads, 2);
  EXPECT_EQ(a.head_dim, 16);
  EXPECT_EQ(a.vocab_size, 128);
  EXPECT_EQ(a.norm_eps, 1e-5f);
  EXPECT_EQ(a.rope_base, 10000.0f);
  EXPECT_FALSE(a.tie_embeddings);
  EXPECT_EQ(a.block_size, 256);
  EXPECT_EQ(a.injection_type, "add");
  EXPECT_EQ(a.init_scale, 0.0f);
}

TEST_F(io_test, config_errors_name_file_and_field) {
  // Start from the released config and break one field at a time.
  const std::string base = huginn_0125_config;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    write_bytes(path("config.json"), s);
    return error_of([&] { muninn::io::read_model_config(path("config.json")); });
  };
  const std::string file = path("config.json");
  EXPECT_THAT(with("\"n_embd\": 5280,", ""), AllOf(HasSubstr(file), HasSubstr("missing required field 'n_embd'"),
                                                   HasSubstr("hidden_size")));
  EXPECT_THAT(with("\"n_embd\": 5280", "\"n_embd\": 0"), AllOf(HasSubstr(file), HasSubstr("'n_embd'"), HasSubstr("found 0")));
  EXPECT_THAT(with("\"n_embd\": 5280", "\"n_embd\": \"5280\""), AllOf(HasSubstr(file), HasSubstr("'n_embd'"), HasSubstr("string")));
  EXPECT_THAT(with("\"n_embd\": 5280", "\"n_embd\": 5280.5"), AllOf(HasSubstr(file), HasSubstr("'n_embd'"), HasSubstr("integer")));
  {
    std::string s = base;
    s.replace(s.find("\"head_dim\": 96,"), 15, "");
    s.replace(s.find("\"n_embd\": 5280"), 14, "\"n_embd\": 5281");
    write_bytes(path("config.json"), s);
    EXPECT_THAT(error_of([&] { muninn::io::read_model_config(file); }),
                AllOf(HasSubstr(file), HasSubstr("n_embd = 5281"), HasSubstr("num_attention_heads = 55")));
  }
  EXPECT_THAT(with("\"num_key_value_heads\": 55", "\"num_key_value_heads\": 2"),
              AllOf(HasSubstr(file), HasSubstr("num_key_value_heads = 2")));
  EXPECT_THAT(with("\"intermediate_size\": 17920,", ""), AllOf(HasSubstr(file), HasSubstr("'intermediate_size'")));
  EXPECT_THAT(with("\"n_layers_in_recurrent_block\": 4", "\"n_layers_in_recurrent_block\": 0"),
              AllOf(HasSubstr(file), HasSubstr("'n_layers_in_recurrent_block'")));
  EXPECT_THAT(with("\"n_layers_in_coda\": 2", "\"n_layers_in_coda\": -1"),
              AllOf(HasSubstr(file), HasSubstr("'n_layers_in_coda'")));
  EXPECT_THAT(with("\"n_layers\": 8", "\"n_layers\": 9"), AllOf(HasSubstr(file), HasSubstr("n_layers = 9")));
  EXPECT_THAT(with("\"block_size\": 4096,", ""), AllOf(HasSubstr(file), HasSubstr("'block_size'")));
  EXPECT_THAT(with("\"padded_vocab_size\": 65536", "\"padded_vocab_size\": 65000"),
              AllOf(HasSubstr(file), HasSubstr("padded_vocab_size = 65000")));
  EXPECT_THAT(with("\"norm_eps\": 1e-06", "\"norm_eps\": 0"), AllOf(HasSubstr(file), HasSubstr("'norm_eps'")));
  EXPECT_THAT(with("\"rope_base\": 50000", "\"rope_base\": -1"), AllOf(HasSubstr(file), HasSubstr("'rope_base'")));
  EXPECT_THAT(with("\"qk_bias\": true", "\"qk_bias\": 1"), AllOf(HasSubstr(file), HasSubstr("'qk_bias'")));
  EXPECT_THAT(with("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"),
              AllOf(HasSubstr(file), HasSubstr("'tie_embeddings'"), HasSubstr("'tie_word_embeddings'")));
  EXPECT_THAT(with("\"injection_type\": \"linear\"", "\"injection_type\": \"gate\""),
              AllOf(HasSubstr(file), HasSubstr("injection_type"), HasSubstr("gate")));
  EXPECT_THAT(with("\"std\": 0.008703882797784892", "\"std\": \"x\""), AllOf(HasSubstr(file), HasSubstr("init_values.std")));
  EXPECT_THAT(with("\"n_heads\": 55", "\"n_heads\": 55, \"num_attention_heads\": 11"),
              AllOf(HasSubstr(file), HasSubstr("disagree")));
  EXPECT_THAT(with("{", "["), HasSubstr(file + ":2:31:"));
  EXPECT_THAT(error_of([&] { muninn::io::read_model_config(path("nothing")); }), HasSubstr(path("nothing")));
}

// Sizes from a stranger's config.json: bounded by load_limits, so no sum or product of them can
// overflow and a tiny file cannot make the name map millions of entries long; float fields are
// checked after narrowing to the float model_config stores.
TEST_F(io_test, model_config_rejects_hostile_values) {
  const std::string base = huginn_0125_config;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    write_bytes(path("config.json"), s);
    return error_of([&] { muninn::io::read_model_config(path("config.json")); });
  };
  const std::string file = path("config.json");
  const std::string big = "9223372036854775807";  // INT64_MAX: prelude + core + coda would overflow
  EXPECT_THAT(with("\"n_layers_in_prelude\": 2", "\"n_layers_in_prelude\": " + big),
              AllOf(HasSubstr(file), HasSubstr("'n_layers_in_prelude' = " + big + " exceeds Muninn's limit of 4096")));
  EXPECT_THAT(with("\"n_layers_in_recurrent_block\": 4", "\"n_layers_in_recurrent_block\": 1000000"),
              AllOf(HasSubstr(file), HasSubstr("'n_layers_in_recurrent_block' = 1000000 exceeds")));
  EXPECT_THAT(with("\"n_layers_in_coda\": 2", "\"n_layers_in_coda\": 4095"),
              AllOf(HasSubstr(file), HasSubstr("= 4101 exceeds Muninn's limit of 4096 layers")));
  EXPECT_THAT(with("\"n_heads\": 55", "\"n_heads\": 4611686018427387904"),
              AllOf(HasSubstr(file), HasSubstr("'n_heads' = 4611686018427387904 exceeds")));
  EXPECT_THAT(with("\"vocab_size\": 65536", "\"vocab_size\": 1099511627776"),
              AllOf(HasSubstr(file), HasSubstr("'vocab_size' = 1099511627776 exceeds")));
  EXPECT_THAT(with("\"block_size\": 4096", "\"block_size\": 4194304"),
              AllOf(HasSubstr(file), HasSubstr("block_size (max_position_embeddings) = 4194304 x head_dim = 96"),
                    HasSubstr("RoPE table")));
  EXPECT_THAT(with("\"norm_eps\": 1e-06", "\"norm_eps\": 1e-50"),
              AllOf(HasSubstr(file), HasSubstr("'norm_eps' must be positive"), HasSubstr("(0 as a float)")));
  EXPECT_THAT(with("\"rope_base\": 50000", "\"rope_base\": 1e39"),
              AllOf(HasSubstr(file), HasSubstr("'rope_base' = 1e+39 does not fit a float")));
  EXPECT_THAT(with("\"std\": 0.008703882797784892", "\"std\": 1e300"),
              AllOf(HasSubstr(file), HasSubstr("init_values.std")));
  // A valid JSON number that underflows a double parses (to 0, as Python's json does); the field's
  // own range check then rejects it.
  EXPECT_THAT(with("\"norm_eps\": 1e-06", "\"norm_eps\": 1e-400"),
              AllOf(HasSubstr(file), HasSubstr("'norm_eps' must be positive, found 0")));
}

// --------------------------------------------------------------------------------- Huginn names

muninn::huginn_config released_config() {
  return muninn::io::model_config_from_json(muninn::io::parse_json(huginn_0125_config, "config.json"), "config.json");
}

TEST(huginn_names, released_model_shapes) {
  const auto specs = muninn::io::huginn_tensor_specs(released_config());
  // 8 blocks × 9 tensors + wte, adapter, ln_f, lm_head, freqs_cis.
  ASSERT_EQ(specs.size(), 8u * 9u + 5u);
  std::map<std::string, std::vector<std::int64_t>> by_name;
  for (const auto& s : specs) by_name[s.name] = s.shape;
  ASSERT_EQ(by_name.size(), specs.size());
  using v = std::vector<std::int64_t>;
  // Shapes of the released checkpoint.
  EXPECT_EQ(by_name["transformer.wte.weight"], (v{65536, 5280}));
  EXPECT_EQ(by_name["transformer.adapter.weight"], (v{5280, 10560}));
  EXPECT_EQ(by_name["transformer.ln_f.weight"], (v{5280}));
  EXPECT_EQ(by_name["lm_head.weight"], (v{65536, 5280}));
  EXPECT_EQ(by_name["freqs_cis"], (v{1, 4096, 1, 48, 2}));
  for (const std::string p : {"transformer.prelude.0", "transformer.prelude.1", "transformer.core_block.0",
                              "transformer.core_block.3", "transformer.coda.0", "transformer.coda.1"}) {
    EXPECT_EQ(by_name[p + ".norm_1.weight"], (v{5280})) << p;
    EXPECT_EQ(by_name[p + ".norm_4.weight"], (v{5280})) << p;
    EXPECT_EQ(by_name[p + ".attn.Wqkv.weight"], (v{15840, 5280})) << p;
    EXPECT_EQ(by_name[p + ".attn.qk_bias"], (v{2, 1, 55, 96})) << p;
    EXPECT_EQ(by_name[p + ".attn.proj.weight"], (v{5280, 5280})) << p;
    EXPECT_EQ(by_name[p + ".mlp.fc.weight"], (v{35840, 5280})) << p;
    EXPECT_EQ(by_name[p + ".mlp.proj.weight"], (v{5280, 17920})) << p;
  }
  EXPECT_EQ(by_name.count("transformer.core_block.4.norm_1.weight"), 0u);
  EXPECT_EQ(by_name.count("transformer.prelude.2.norm_1.weight"), 0u);
  // Parameter count of the release without the duplicate head and the RoPE buffer: 3.5B.
  std::int64_t params = 0;
  for (const auto& s : specs) {
    if (s.name == "lm_head.weight" || s.name == "freqs_cis") continue;
    std::int64_t n = 1;
    for (auto d : s.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(params + 65536LL * 5280, 3911006880LL);  // the count on the hub, duplicate head included
}

TEST(huginn_names, unsupported_configs) {
  muninn::huginn_config c = released_config();
  c.bias = true;
  EXPECT_THAT(error_of([&] { muninn::io::huginn_tensor_specs(c); }), AllOf(HasSubstr("config.json"), HasSubstr("bias")));
  c = released_config();
  c.head_dim = 95;
  EXPECT_THAT(error_of([&] { muninn::io::huginn_tensor_specs(c); }), HasSubstr("head_dim = 95"));
}

// A tiny Huginn: h=8, 2 heads of 4, I=12, V=16, 1 prelude + 2 core + 1 coda, block_size 6.
const char* const tiny_config = R"({"model_type": "huginn_raven", "n_embd": 8, "n_heads": 2, "intermediate_size": 12,
  "vocab_size": 16, "n_layers_in_prelude": 1, "n_layers_in_recurrent_block": 2, "n_layers_in_coda": 1,
  "mean_recurrence": 3, "block_size": 6, "qk_bias": true, "tie_embeddings": true})";

// Names and shapes written out by hand (not from huginn_tensor_specs) so that the test checks the map.
std::vector<std::pair<std::string, tensor_to_write>> tiny_tensors() {
  std::vector<std::pair<std::string, tensor_to_write>> t;
  const auto add = [&](const std::string& n, std::vector<std::int64_t> shape) {
    std::size_t numel = 1;
    for (auto d : shape) numel *= std::size_t(d);
    t.emplace_back(n, tensor_to_write{shape, std::vector<float>(numel, 0.5f), dtype::f32});
  };
  add("transformer.wte.weight", {16, 8});
  add("transformer.adapter.weight", {8, 16});
  add("transformer.ln_f.weight", {8});
  for (const std::string p : {"transformer.prelude.0", "transformer.core_block.0", "transformer.core_block.1",
                              "transformer.coda.0"}) {
    for (const char* n : {".norm_1.weight", ".norm_2.weight", ".norm_3.weight", ".norm_4.weight"}) add(p + n, {8});
    add(p + ".attn.Wqkv.weight", {24, 8});
    add(p + ".attn.qk_bias", {2, 1, 2, 4});
    add(p + ".attn.proj.weight", {8, 8});
    add(p + ".mlp.fc.weight", {24, 8});
    add(p + ".mlp.proj.weight", {8, 12});
  }
  return t;
}

class huginn_ckpt : public io_test {
 protected:
  void SetUp() override {
    io_test::SetUp();
    write_bytes(path("config.json"), tiny_config);
    cfg_ = muninn::io::read_model_config(dir_.string());
  }
  // Writes `tensors` as a two-shard checkpoint (first half, second half) with an index.
  void write_sharded(const std::vector<std::pair<std::string, tensor_to_write>>& tensors) {
    const std::size_t half = tensors.size() / 2;
    const std::vector<std::pair<std::string, tensor_to_write>> a(tensors.begin(), tensors.begin() + half);
    const std::vector<std::pair<std::string, tensor_to_write>> b(tensors.begin() + half, tensors.end());
    write_safetensors(path("model-00001-of-00002.safetensors"), a);
    write_safetensors(path("model-00002-of-00002.safetensors"), b);
    std::string idx = "{\"metadata\": {}, \"weight_map\": {";
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (i) idx += ", ";
      muninn::io::append_json_string(idx, tensors[i].first);
      idx += i < half ? ": \"model-00001-of-00002.safetensors\"" : ": \"model-00002-of-00002.safetensors\"";
    }
    write_bytes(path("model.safetensors.index.json"), idx + "}}");
  }
  std::string validate_error() {
    return error_of([&] { muninn::io::validate_huginn_checkpoint(checkpoint::open(dir_.string()), cfg_); });
  }
  muninn::huginn_config cfg_;
};

TEST_F(huginn_ckpt, complete_checkpoint_validates) {
  auto t = tiny_tensors();
  write_sharded(t);
  EXPECT_NO_THROW(muninn::io::validate_huginn_checkpoint(checkpoint::open(dir_.string()), cfg_));
  // The optional duplicate head and a RoPE table at least block_size long are accepted too.
  t.emplace_back("lm_head.weight", tensor_to_write{{16, 8}, std::vector<float>(128, 0.0f)});
  t.emplace_back("freqs_cis", tensor_to_write{{1, 10, 1, 2, 2}, std::vector<float>(40, 0.0f)});
  write_sharded(t);
  const checkpoint c = muninn::io::open_huginn_checkpoint(dir_.string(), cfg_);
  EXPECT_EQ(c.size(), t.size());
  EXPECT_EQ(c.read_f32("transformer.coda.0.mlp.proj.weight"), std::vector<float>(96, 0.5f));
}

TEST_F(huginn_ckpt, missing_tensor) {
  auto t = tiny_tensors();
  t.erase(std::find_if(t.begin(), t.end(), [](const auto& p) { return p.first == "transformer.core_block.1.attn.Wqkv.weight"; }));
  write_sharded(t);
  EXPECT_THAT(validate_error(), AllOf(HasSubstr(dir_.string() + ": missing tensor 'transformer.core_block.1.attn.Wqkv.weight'"),
                                      HasSubstr("(expected shape [24, 8])")));
}

TEST_F(huginn_ckpt, wrong_shape_names_shard_and_config) {
  auto t = tiny_tensors();
  for (auto& p : t)
    if (p.first == "transformer.coda.0.mlp.fc.weight") p.second = tensor_to_write{{12, 8}, std::vector<float>(96, 0.0f)};
  write_sharded(t);
  EXPECT_THAT(validate_error(),
              AllOf(HasSubstr(path("model-00002-of-00002.safetensors") + ": tensor 'transformer.coda.0.mlp.fc.weight' has shape [12, 8]"),
                    HasSubstr("but " + path("config.json") + " (n_embd=8, intermediate_size=12) implies [24, 8]")));
}

TEST_F(huginn_ckpt, extra_tensor_and_short_rope_table) {
  auto t = tiny_tensors();
  t.emplace_back("transformer.core_block.0.attn.proj.bias", tensor_to_write{{8}, std::vector<float>(8, 0.0f)});
  t.emplace_back("freqs_cis", tensor_to_write{{1, 5, 1, 2, 2}, std::vector<float>(20, 0.0f)});
  write_sharded(t);
  const std::string e = validate_error();
  EXPECT_THAT(e, AllOf(HasSubstr("1 unexpected tensor(s)"), HasSubstr("'transformer.core_block.0.attn.proj.bias'"),
                       HasSubstr(path("model-00002-of-00002.safetensors"))));
  EXPECT_THAT(e, AllOf(HasSubstr("tensor 'freqs_cis' has shape [1, 5, 1, 2, 2]"), HasSubstr("implies [1, 6, 1, 2, 2]")));
}

TEST_F(huginn_ckpt, untied_head_is_required) {
  cfg_.tie_embeddings = false;
  write_sharded(tiny_tensors());
  EXPECT_THAT(validate_error(), AllOf(HasSubstr("missing tensor 'lm_head.weight'"), HasSubstr("[16, 8]")));
}

TEST_F(huginn_ckpt, qk_bias_off_makes_qk_bias_tensors_extra) {
  cfg_.qk_bias = false;
  write_sharded(tiny_tensors());
  EXPECT_THAT(validate_error(), AllOf(HasSubstr("4 unexpected tensor(s)"), HasSubstr("'transformer.prelude.0.attn.qk_bias'")));
}

TEST_F(huginn_ckpt, training_prefix_is_stripped) {
  auto t = tiny_tensors();
  for (auto& p : t) p.first = "_orig_mod._original_module." + p.first;
  write_sharded(t);
  EXPECT_THAT(validate_error(), AllOf(HasSubstr("training prefix"), HasSubstr("missing tensor 'transformer.wte.weight'")));
  const checkpoint c = muninn::io::open_huginn_checkpoint(dir_.string(), cfg_);
  EXPECT_TRUE(c.has("transformer.wte.weight"));
  EXPECT_EQ(c.read_f32("transformer.ln_f.weight"), std::vector<float>(8, 0.5f));
}

TEST_F(huginn_ckpt, many_problems_are_summarised) {
  write_safetensors(path("model.safetensors"), {{"junk", tensor_to_write{{1}, {0}}}});
  const std::string e = validate_error();
  EXPECT_THAT(e, AllOf(HasSubstr("missing tensor 'transformer.wte.weight'"), HasSubstr("more problems")));
  EXPECT_THAT(e, Not(HasSubstr("transformer.coda.0.norm_4.weight")));  // beyond the first 8 lines
  EXPECT_THAT(e, HasSubstr("1 unexpected tensor(s) not in the Huginn layout: 'junk'"));  // always reported
}

}  // namespace

}  // namespace test_io
