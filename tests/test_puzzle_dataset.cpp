// Tests for families/trm/puzzle_dataset.hpp: the TRM / HRM reference builders' .npy datasets. Oracles: the
// fixtures of tools/reference/make_trm_fixtures.py (tests/data/trm/data, and the batches its
// expected.json files record, collated by the reference's rules in Python), and hostile splits
// written here file by file.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"
#include "test_io_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_puzzle_dataset {

namespace fs = std::filesystem;
using muninn::io::puzzle_dataset;
using muninn::io::puzzle_dtype;
using muninn_test::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

using range = std::pair<std::int64_t, std::int64_t>;

const std::string trm_dir = std::string(MUNINN_TEST_DATA) + "/trm/";

// A .npy file with the given descr, shape and raw little-endian element bytes.
std::string npy_bytes(const char* descr, const std::vector<std::int64_t>& shape, const std::string& data) {
  return muninn::io::detail::npy_header(descr, shape, "test.npy") + data;
}
template <class T>
std::string raw(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

class puzzle_files : public muninn_test::temp_dir_test {
 protected:
  puzzle_files() : temp_dir_test("muninn_puzzle_") {}

  // A copy of a fixture split in the test's directory; returns its path.
  std::string copy_split(const std::string& rel) {
    const fs::path to = dir_ / "split";
    fs::create_directories(to);
    fs::copy(trm_dir + rel, to, fs::copy_options::overwrite_existing | fs::copy_options::recursive);
    return to.string();
  }
  void put(const std::string& split, const std::string& name, const std::string& bytes) {
    muninn_test::write_bytes(fs::path(split) / name, bytes);
  }
  // sudoku4/test with one file replaced
  std::string sudoku_with(const std::string& name, const std::string& bytes) {
    const std::string s = copy_split("data/sudoku4/test");
    put(s, name, bytes);
    return s;
  }
  std::string sudoku_json(const std::string& replace_from, const std::string& replace_to) {
    const std::string s = copy_split("data/sudoku4/test");
    std::string j = muninn::io::read_text_file(s + "/dataset.json");
    const std::size_t at = j.find(replace_from);
    EXPECT_NE(at, std::string::npos) << replace_from;
    if (at != std::string::npos) j.replace(at, replace_from.size(), replace_to);
    put(s, "dataset.json", j);
    return s;
  }
};

// ------------------------------------------------------------------------------- the fixtures

TEST(puzzle_dataset, sudoku4_test_split) {
  const puzzle_dataset d = puzzle_dataset::open(trm_dir + "data/sudoku4/test");
  EXPECT_EQ(d.set_name(), "all");
  EXPECT_EQ(d.num_examples(), 8);
  EXPECT_EQ(d.num_puzzles(), 8);
  EXPECT_EQ(d.num_groups(), 8);
  EXPECT_EQ(d.seq_len(), 16);
  EXPECT_EQ(d.inputs_dtype(), puzzle_dtype::u8);
  EXPECT_EQ(d.labels_dtype(), puzzle_dtype::u8);
  const auto& m = d.metadata();
  EXPECT_EQ(m.vocab_size, 6);
  EXPECT_EQ(m.pad_id, 0);
  ASSERT_TRUE(m.ignore_label_id.has_value());
  EXPECT_EQ(*m.ignore_label_id, 0);
  EXPECT_EQ(m.blank_identifier_id, 0);
  EXPECT_EQ(m.num_puzzle_identifiers, 1);
  EXPECT_EQ(m.total_groups, 8);
  EXPECT_DOUBLE_EQ(m.mean_puzzle_examples, 1.0);
  ASSERT_TRUE(m.total_puzzles.has_value());
  EXPECT_EQ(m.sets, std::vector<std::string>{"all"});
  for (std::int64_t i = 0; i < d.num_examples(); ++i) {
    EXPECT_EQ(d.puzzle_of(i), i);
    EXPECT_EQ(d.puzzle_identifier(i), 0);
    const auto in = d.inputs(i);
    const auto view = d.inputs_view(i);
    ASSERT_EQ(view.size(), 16);
    for (std::int64_t k = 0; k < 16; ++k) {
      EXPECT_EQ(view[k], in[std::size_t(k)]);
      EXPECT_GE(in[std::size_t(k)], 1);  // blank 1 or a digit 2..5; never PAD in a puzzle
    }
  }
}

TEST(puzzle_dataset, sudoku4_augmented_train_split_is_int64) {
  const puzzle_dataset d = puzzle_dataset::open(trm_dir + "data/sudoku4/train");
  EXPECT_EQ(d.inputs_dtype(), puzzle_dtype::i64);
  EXPECT_EQ(d.labels_dtype(), puzzle_dtype::i64);
  EXPECT_EQ(d.num_examples(), 12);
  EXPECT_EQ(d.num_groups(), 4);
  // the Sudoku builder writes total_puzzles = number of groups; it is not checked
  EXPECT_EQ(d.metadata().total_puzzles.value_or(-1), 4);
  for (std::int64_t g = 0; g < 4; ++g) EXPECT_EQ(d.group_puzzles(g), (range{3 * g, 3 * g + 3}));
  for (std::int64_t i = 0; i < d.num_examples(); ++i) {
    const auto lab = d.labels(i);
    const auto view = d.labels_view(i);
    for (std::int64_t k = 0; k < 16; ++k) {
      EXPECT_EQ(view[k], lab[std::size_t(k)]);
      EXPECT_GE(lab[std::size_t(k)], 2);  // a solved grid: digits only
    }
  }
}

TEST(puzzle_dataset, arc4_several_examples_per_puzzle) {
  const puzzle_dataset d = puzzle_dataset::open(trm_dir + "data/arc4/test");
  EXPECT_EQ(d.num_examples(), 7);
  EXPECT_EQ(d.num_puzzles(), 6);
  EXPECT_EQ(d.num_groups(), 3);
  EXPECT_EQ(d.metadata().num_puzzle_identifiers, 7);
  EXPECT_NEAR(d.metadata().mean_puzzle_examples, 7.0 / 6.0, 1e-15);
  EXPECT_EQ(d.puzzle_examples(0), (range{0, 2}));
  EXPECT_EQ(d.puzzle_examples(5), (range{6, 7}));
  const std::vector<std::int64_t> puzzle = {0, 0, 1, 2, 3, 4, 5};
  for (std::int64_t i = 0; i < 7; ++i) {
    EXPECT_EQ(d.puzzle_of(i), puzzle[std::size_t(i)]) << i;
    EXPECT_EQ(d.puzzle_identifier(i), puzzle[std::size_t(i)] + 1) << i;  // identifiers 1..6, 0 is blank
  }
  EXPECT_EQ(d.group_puzzles(2), (range{4, 6}));
  const puzzle_dataset t = puzzle_dataset::open(trm_dir + "data/arc4/train", "all");
  EXPECT_EQ(t.num_examples(), 18);
  EXPECT_EQ(t.puzzle_of(17), 5);
  EXPECT_EQ(t.identifier_of_puzzle(5), 6);
}

// The batches recorded in expected.json were collated in Python by the reference's rules: the
// rows, the identifiers found through puzzle_indices, labels equal to ignore_label_id -> -100.
TEST(puzzle_dataset, matches_the_batches_of_the_model_fixtures) {
  for (const char* c : {"trm_att_f32", "trm_mlpt_f32", "trm_att_bf16", "hrm_f32"}) {
    SCOPED_TRACE(c);
    const auto e = muninn::io::read_json_file(trm_dir + c + "/expected.json");
    const auto& batch = e.at("batch");
    const puzzle_dataset d = puzzle_dataset::open(trm_dir + e.at("dataset").as_string() + "/test");
    const auto& ex = batch.at("examples");
    for (std::size_t r = 0; r < ex.size(); ++r) {
      const std::int64_t i = ex[r].as_int();
      if (i < 0) {  // a padded row: PAD inputs and the blank identifier
        for (const auto& v : batch.at("inputs")[r].as_array()) EXPECT_EQ(v.as_int(), d.metadata().pad_id);
        EXPECT_EQ(batch.at("puzzle_identifiers")[r].as_int(), d.metadata().blank_identifier_id);
        continue;
      }
      const auto in = d.inputs(i);
      const auto lab = d.labels(i);
      for (std::size_t k = 0; k < in.size(); ++k) {
        EXPECT_EQ(in[k], batch.at("inputs")[r][k].as_int());
        const std::int64_t want = lab[k] == *d.metadata().ignore_label_id ? -100 : lab[k];
        EXPECT_EQ(want, batch.at("labels")[r][k].as_int());
      }
      EXPECT_EQ(d.puzzle_identifier(i), batch.at("puzzle_identifiers")[r].as_int());
    }
  }
}

TEST_F(puzzle_files, hrm_metadata_without_total_puzzles) {
  const std::string s = sudoku_json(", \"total_puzzles\": 8", "");
  const puzzle_dataset d = puzzle_dataset::open(s);
  EXPECT_FALSE(d.metadata().total_puzzles.has_value());
  EXPECT_EQ(d.num_examples(), 8);
}

TEST_F(puzzle_files, null_ignore_label_and_empty_puzzles) {
  // an empty puzzle (equal offsets): example 1 belongs to the last puzzle starting at or before it
  const std::string s = copy_split("data/arc4/test");
  put(s, "all__puzzle_indices.npy", npy_bytes("<i8", {7}, raw<std::int64_t>({0, 1, 1, 3, 4, 5, 7})));
  std::string j = muninn::io::read_text_file(s + "/dataset.json");
  j.replace(j.find("\"ignore_label_id\": 0"), 20, "\"ignore_label_id\": null");
  put(s, "dataset.json", j);
  const puzzle_dataset d = puzzle_dataset::open(s);
  EXPECT_FALSE(d.metadata().ignore_label_id.has_value());
  EXPECT_EQ(d.puzzle_of(0), 0);
  EXPECT_EQ(d.puzzle_of(1), 2);
  EXPECT_EQ(d.puzzle_of(2), 2);
  EXPECT_EQ(d.puzzle_of(3), 3);
  EXPECT_EQ(d.puzzle_of(6), 5);
  EXPECT_EQ(d.puzzle_examples(1), (range{1, 1}));
}

TEST_F(puzzle_files, labels_may_hold_ignore_label_id_outside_the_vocabulary) {
  std::string s = sudoku_json("\"ignore_label_id\": 0", "\"ignore_label_id\": -100");
  std::vector<std::int64_t> lab(8 * 16, 2);
  lab[5] = -100;
  put(s, "all__labels.npy", npy_bytes("<i8", {8, 16}, raw(lab)));
  const puzzle_dataset d = puzzle_dataset::open(s);
  EXPECT_EQ(d.labels(0)[5], -100);
  lab[6] = -7;
  put(s, "all__labels.npy", npy_bytes("<i8", {8, 16}, raw(lab)));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__labels.npy"), HasSubstr("token -7 of example 0 (position 6)"),
                    HasSubstr("is not ignore_label_id")));
}

TEST_F(puzzle_files, int32_tokens_and_int64_indices_are_accepted) {
  const std::string s = copy_split("data/sudoku4/test");
  std::vector<std::int32_t> in(8 * 16, 3);
  put(s, "all__inputs.npy", npy_bytes("<i4", {8, 16}, raw(in)));
  put(s, "all__group_indices.npy", npy_bytes("<i8", {2}, raw<std::int64_t>({0, 8})));
  const puzzle_dataset d = puzzle_dataset::open(s);
  EXPECT_EQ(d.inputs_dtype(), puzzle_dtype::i32);
  EXPECT_EQ(d.inputs(7), std::vector<std::int32_t>(16, 3));
  EXPECT_EQ(d.num_groups(), 1);
}

// ------------------------------------------------------------------------------- hostile files

TEST_F(puzzle_files, truncated_npy) {
  const std::string whole = muninn::io::read_text_file(trm_dir + "data/sudoku4/test/all__inputs.npy");
  const std::string s = sudoku_with("all__inputs.npy", whole.substr(0, whole.size() - 3));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__inputs.npy"), HasSubstr(".npy data is 125 bytes but shape (8, 16) of uint8 needs 128")));
  put(s, "all__inputs.npy", whole.substr(0, 40));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), AllOf(HasSubstr("all__inputs.npy"), HasSubstr("header")));
}

TEST_F(puzzle_files, wrong_dtypes) {
  std::string s = sudoku_with("all__inputs.npy", npy_bytes("<f4", {8, 16}, std::string(8 * 16 * 4, '\0')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__inputs.npy"), HasSubstr("dtype '<f4' is not supported here (expected '|u1', '<i4' or '<i8')")));
  s = sudoku_with("all__puzzle_identifiers.npy", npy_bytes("|u1", {8}, std::string(8, '\0')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__puzzle_identifiers.npy"), HasSubstr("dtype '|u1' is not supported here (expected '<i4' or '<i8')")));
  s = sudoku_with("all__labels.npy", npy_bytes(">i8", {8, 16}, std::string(8 * 16 * 8, '\0')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("dtype '>i8' is not supported"));
}

TEST_F(puzzle_files, shapes) {
  std::string s = sudoku_with("all__inputs.npy", npy_bytes("|u1", {128}, std::string(128, '\1')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__inputs.npy"), HasSubstr("has 1 dimensions (128,), expected 2")));
  s = sudoku_with("all__inputs.npy", npy_bytes("|u1", {16, 8}, std::string(128, '\1')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__inputs.npy"), HasSubstr("rows have 8 tokens but dataset.json says seq_len 16")));
  s = sudoku_with("all__labels.npy", npy_bytes("|u1", {7, 16}, std::string(7 * 16, '\2')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("all__labels.npy: 7 rows but"));
  s = sudoku_with("all__puzzle_indices.npy", npy_bytes("<i4", {8}, raw<std::int32_t>({0, 1, 2, 3, 4, 5, 6, 8})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__puzzle_indices.npy: 8 entries but"), HasSubstr("lists 8 puzzles (expected 8 + 1)")));
  s = sudoku_with("all__inputs.npy", npy_bytes("|u1", {INT64_C(1) << 62, 16}, std::string(16, '\1')));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("overflows 64 bits"));
}

TEST_F(puzzle_files, identifiers_out_of_range) {
  std::string s = sudoku_with("all__puzzle_identifiers.npy", npy_bytes("<i4", {8}, raw<std::int32_t>({0, 0, 0, 1, 0, 0, 0, 0})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__puzzle_identifiers.npy"), HasSubstr("puzzle 3 has identifier 1, outside [0, 1)")));
  s = sudoku_with("all__puzzle_identifiers.npy", npy_bytes("<i8", {8}, raw<std::int64_t>({0, 0, 0, 0, 0, 0, 0, -1})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("puzzle 7 has identifier -1"));
}

TEST_F(puzzle_files, decreasing_and_unbounded_indices) {
  std::string s =
      sudoku_with("all__puzzle_indices.npy", npy_bytes("<i4", {9}, raw<std::int32_t>({0, 1, 2, 4, 3, 5, 6, 7, 8})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__puzzle_indices.npy"), HasSubstr("decreases at entry 4 (4 then 3)")));
  s = sudoku_with("all__puzzle_indices.npy", npy_bytes("<i4", {9}, raw<std::int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 9})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("ends at 9 but there are 8 examples"));
  s = sudoku_with("all__puzzle_indices.npy", npy_bytes("<i4", {9}, raw<std::int32_t>({1, 1, 2, 3, 4, 5, 6, 7, 8})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("starts at 1, not 0"));
  s = sudoku_with("all__group_indices.npy", npy_bytes("<i4", {3}, raw<std::int32_t>({0, 5, 4})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__group_indices.npy"), HasSubstr("decreases at entry 2 (5 then 4)")));
  s = sudoku_with("all__group_indices.npy", npy_bytes("<i4", {2}, raw<std::int32_t>({0, 9})));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("ends at 9 but there are 8 puzzles"));
  s = sudoku_with("all__group_indices.npy", npy_bytes("<i4", {0}, ""));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("needs at least one entry"));
}

TEST_F(puzzle_files, tokens_outside_the_vocabulary) {
  std::string in(8 * 16, '\2');
  in[3 * 16 + 9] = 6;  // vocab_size is 6
  std::string s = sudoku_with("all__inputs.npy", npy_bytes("|u1", {8, 16}, in));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }),
              AllOf(HasSubstr("all__inputs.npy: token 6 of example 3 (position 9) is outside the vocabulary [0, 6)")));
  // with the scan turned off, opening succeeds and the copy finds it
  muninn::io::puzzle_dataset_options o;
  o.check_tokens = false;
  const puzzle_dataset d = puzzle_dataset::open(s, "", o);
  EXPECT_EQ(d.inputs_view(3)[9], 6);
  EXPECT_NO_THROW(d.inputs(2));
  EXPECT_THAT(error_of([&] { d.inputs(3); }), HasSubstr("token 6 of example 3 (position 9)"));
  std::vector<std::int64_t> neg(8 * 16, 2);
  neg[0] = -1;
  s = sudoku_with("all__inputs.npy", npy_bytes("<i8", {8, 16}, raw(neg)));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), HasSubstr("token -1 of example 0 (position 0)"));
}

TEST_F(puzzle_files, accessors_check_their_arguments) {
  const puzzle_dataset d = puzzle_dataset::open(copy_split("data/sudoku4/test"));
  EXPECT_THAT(error_of([&] { d.inputs(8); }), HasSubstr("example 8 is out of range (8 examples)"));
  EXPECT_THAT(error_of([&] { d.labels_view(-1); }), HasSubstr("example -1 is out of range"));
  EXPECT_THAT(error_of([&] { d.puzzle_of(100); }), HasSubstr("example 100 is out of range"));
  EXPECT_THAT(error_of([&] { d.identifier_of_puzzle(8); }), HasSubstr("puzzle 8 is out of range (8 puzzles)"));
  EXPECT_THAT(error_of([&] { d.group_puzzles(8); }), HasSubstr("group 8 is out of range (8 groups)"));
}

TEST_F(puzzle_files, metadata) {
  const auto fails = [&](const std::string& from, const std::string& to, const std::string& msg) {
    SCOPED_TRACE(to);
    const std::string s = sudoku_json(from, to);
    EXPECT_THAT(error_of([&] { puzzle_dataset::open(s); }), AllOf(HasSubstr("dataset.json"), HasSubstr(msg)));
  };
  fails("\"seq_len\": 16", "\"seq_len\": 0", "field 'seq_len' is 0, outside [1, 4194304]");
  fails("\"seq_len\": 16", "\"seq_len\": 1099511627776", "field 'seq_len' is 1099511627776, outside");
  fails("\"seq_len\": 16", "\"seq_len\": 16.5", "field 'seq_len' must be an integer, found number");
  fails("\"seq_len\": 16, ", "", "missing field 'seq_len'");
  fails("\"vocab_size\": 6", "\"vocab_size\": 99999999999", "field 'vocab_size' is 99999999999, outside [1, 16777216]");
  fails("\"pad_id\": 0", "\"pad_id\": 6", "field 'pad_id' is 6, outside [0, 5]");
  fails("\"blank_identifier_id\": 0", "\"blank_identifier_id\": 1", "field 'blank_identifier_id' is 1, outside [0, 0]");
  fails("\"num_puzzle_identifiers\": 1", "\"num_puzzle_identifiers\": 4294967296",
        "field 'num_puzzle_identifiers' is 4294967296, outside [1, 2147483647]");
  fails("\"ignore_label_id\": 0", "\"ignore_label_id\": \"x\"", "'ignore_label_id' must be an int32 or null");
  fails("\"mean_puzzle_examples\": 1.0", "\"mean_puzzle_examples\": null", "'mean_puzzle_examples' must be a number");
  fails("\"sets\": [\"all\"]", "\"sets\": []", "field 'sets' must be a non-empty list");
  fails("\"sets\": [\"all\"]", "\"sets\": [\"../all\"]", "set name '../all' is not a plain file-name part");
  fails("\"sets\": [\"all\"]", "\"sets\": [\"..\"]", "set name '..' is not a plain file-name part");
  fails("\"sets\": [\"all\"]", "\"sets\": [\"all\", \"all\"]", "set 'all' is listed twice");
  fails("\"sets\": [\"all\"]", "\"sets\": [\"all\", \"b\"]", "lists the sets all, b; name one");
  fails("{", "[", "JSON parse error");
  const std::string s = sudoku_json("\"sets\": [\"all\"]", "\"sets\": [\"all\", \"b\"]");
  EXPECT_EQ(puzzle_dataset::open(s, "all").num_examples(), 8);
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s, "b"); }), HasSubstr("b__inputs.npy"));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s, "c"); }), HasSubstr("dataset.json has no set 'c'"));
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(path("nowhere")); }),
              AllOf(HasSubstr("nowhere/dataset.json"), HasSubstr("cannot")));
  fs::remove(fs::path(s) / "all__group_indices.npy");
  EXPECT_THAT(error_of([&] { puzzle_dataset::open(s, "all"); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("all__group_indices.npy")));
}

}  // namespace

}  // namespace test_puzzle_dataset
