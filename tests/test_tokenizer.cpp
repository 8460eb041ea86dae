// Tests of muninn::io::tokenizer against fixtures written by tools/reference/make_tokenizer_fixtures.py, whose
// oracle is the Hugging Face `tokenizers` package (and jinja2 for the chat template).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "muninn/io/json.hpp"
#include "muninn/io/tokenizer.hpp"
#include "test_io_util.hpp"
#include "test_util.hpp"

#ifndef MUNINN_TEST_DATA_DIR
#define MUNINN_TEST_DATA_DIR "tests/data"
#endif

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_tokenizer {

namespace {

using muninn::io::json;
using muninn::io::tokenizer;

const std::string dir = std::string(MUNINN_TEST_DATA_DIR) + "/tokenizer/";

const json& expected() {
  static const json e = muninn::io::read_json_file(dir + "expected.json");
  return e;
}

using muninn_test::ids_of;

std::vector<std::string> strings_of(const json& a) {
  std::vector<std::string> v;
  for (const json& x : a.as_array()) v.push_back(x.as_string());
  return v;
}

// The matches of a pattern, as strings.
std::vector<std::string> match_pieces(const std::string& pattern, const std::string& text) {
  const muninn::io::regex re(pattern);
  std::vector<std::string> out;
  for (const auto& s : muninn::io::detail::find_all(re, text)) out.push_back(text.substr(s.first, s.second - s.first));
  return out;
}

class Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixture, EncodeAndDecodeMatchHuggingFace) {
  const json& e = expected().at("tokenizers").at(GetParam());
  const tokenizer tok = tokenizer::from_file(dir + e.at("file").as_string());
  EXPECT_EQ(tok.vocab_size(), e.at("vocab_size").as_int());
  int n = 0;
  for (const json& c : e.at("cases").as_array()) {
    const std::string& text = c.at("text").as_string();
    SCOPED_TRACE("text: \"" + text + "\"");
    const auto ids = tok.encode(text);
    EXPECT_EQ(ids, ids_of(c.at("ids")));
    EXPECT_EQ(tok.encode(text, true), ids_of(c.at("ids_with_special")));
    EXPECT_EQ(tok.decode(ids), c.at("decoded").as_string());
    EXPECT_EQ(tok.decode(ids, true), c.at("decoded_skip_special").as_string());
    std::vector<std::string> pieces;  // the oracle's pieces are in the byte-level alphabet
    for (const std::string& p : tok.pre_tokenize(text)) pieces.push_back(muninn::io::detail::bytes_to_token_string(p));
    EXPECT_EQ(pieces, strings_of(c.at("pieces")));
    ++n;
  }
  EXPECT_GE(n, 40);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, Fixture,
                         ::testing::Values("gpt2", "llama3", "gpt2_prefix", "llama3_removed", "digits", "unusual"));

TEST(Tokenizer, SingleIdDecodingReplacesCutCharactersLikeRust) {
  const json& e = expected().at("tokenizers").at("gpt2");
  const tokenizer tok = tokenizer::from_file(dir + "gpt2.json");
  const auto want = strings_of(e.at("single_id_decodes"));
  ASSERT_EQ(std::int64_t(want.size()), tok.vocab_size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::vector<std::int32_t> one = {std::int32_t(i)};
    EXPECT_EQ(tok.decode(one), want[i]) << "id " << i;
  }
  const auto byte_ids = ids_of(e.at("byte_tokens"));
  for (unsigned b = 0; b < 256; ++b) {
    std::string s;
    muninn::io::append_utf8(s, muninn::io::detail::byte_to_code_point(b));
    EXPECT_EQ(tok.token_to_id(s).value_or(-1), byte_ids[b]) << "byte " << b;
    EXPECT_EQ(tok.token_bytes(byte_ids[b]), std::string(1, char(b)));
  }
}

TEST(Tokenizer, Utf8LossyHandCases) {
  using muninn::io::detail::utf8_lossy;
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_lossy("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(utf8_lossy("\xE2\x82" "A"), r + "A");           // truncated 3-byte sequence: one replacement
  EXPECT_EQ(utf8_lossy("x\xF0\x9F\x98"), "x" + r);          // truncated at the end
  EXPECT_EQ(utf8_lossy("\xC0\x80"), r + r);                  // C0 never starts a sequence
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), r + r + r);          // surrogate: ED then two stray continuations
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(utf8_lossy("\xFF"), r);
}

TEST(Tokenizer, KnownPatternsMatchPythonRegex) {
  for (const char* name : {"gpt2", "llama3"}) {
    const json& e = expected().at("regex_splits").at(name);
    const std::string& pattern = e.at("pattern").as_string();
    int n = 0;
    for (const json& c : e.at("cases").as_array()) {
      const std::string& text = c[0].as_string();
      EXPECT_EQ(match_pieces(pattern, text), strings_of(c[1])) << name << " on \"" << text << "\"";
      ++n;
    }
    EXPECT_GT(n, 300);
  }
}

TEST(Tokenizer, RegexFeaturesMatchOniguruma) {
  int patterns = 0;
  for (const json& e : expected().at("onig_matches").as_array()) {
    const std::string& pattern = e.at("pattern").as_string();
    for (const json& c : e.at("cases").as_array()) {
      const std::string& text = c[0].as_string();
      std::vector<std::string> got;  // the oracle lists the non-empty matches
      for (const std::string& m : match_pieces(pattern, text))
        if (!m.empty()) got.push_back(m);
      EXPECT_EQ(got, strings_of(c[1])) << pattern << " on \"" << text << "\"";
    }
    ++patterns;
  }
  EXPECT_GE(patterns, 30);
}

TEST(Tokenizer, PatternWithControlCharactersMatchesItsEscapedForm) {
  // tokenizer.json may hold \r and \n as the control characters themselves rather than as escapes.
  const std::string escaped =
      R"((?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+)";
  std::string raw = escaped;
  for (std::size_t at; (at = raw.find("\\r")) != std::string::npos;) raw.replace(at, 2, "\r");
  for (std::size_t at; (at = raw.find("\\n")) != std::string::npos;) raw.replace(at, 2, "\n");
  ASSERT_NE(raw, escaped);
  const std::string text = "Hi\r\n\r\n  it'S 12345 !!\n\nx";
  EXPECT_EQ(match_pieces(raw, text), match_pieces(escaped, text));
  EXPECT_EQ(match_pieces(escaped, "12345"), (std::vector<std::string>{"123", "45"}));
}

TEST(Tokenizer, CharacterClassesMatchOniguruma) {
  using namespace muninn::io::detail;
  const json& e = expected().at("classes");
  const std::string& classes = e.at("classes").as_string();
  const std::uint32_t step = std::uint32_t(e.at("step").as_int());
  const std::uint32_t end = std::uint32_t(e.at("end").as_int());
  std::size_t k = 0;
  for (std::uint32_t cp = 0; cp < end; cp += step) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    ASSERT_LT(k, classes.size());
    const char want = classes[k++];
    const char got = is_letter(cp) ? 'L' : is_number(cp) ? 'N' : is_space(cp) ? 'S' : 'O';
    EXPECT_EQ(got, want) << "U+" << std::hex << cp;
  }
  EXPECT_EQ(k, classes.size());
  // Scripts named in the design: Latin, Greek, Cyrillic, CJK, Arabic, Hebrew, Devanagari, Hangul, kana, fullwidth.
  for (std::uint32_t cp : {0xE9u, 0x3B1u, 0x436u, 0x4E2Du, 0x628u, 0x5D0u, 0x915u, 0xD55Cu, 0x3042u, 0x30ABu, 0xFF21u})
    EXPECT_TRUE(is_letter(cp)) << std::hex << cp;
  for (std::uint32_t cp : {0x663u, 0x96Au, 0xFF11u, 0x2167u, 0xBDu, 0xB2u})
    EXPECT_TRUE(is_number(cp)) << std::hex << cp;
  for (std::uint32_t cp : {0x301u, 0x1F600u, 0x3002u, 0xFF0Cu, 0x1Cu}) {
    EXPECT_FALSE(is_letter(cp) || is_number(cp) || is_space(cp)) << std::hex << cp;
  }
}

// \p{L}, \p{N}, \s and \w as PCRE2 runs them after the rewriting, against Oniguruma code point by code point
// (\w only where PCRE2's Unicode tables know the code point: it is not brought up to date).
TEST(Tokenizer, RegexClassesMatchOniguruma) {
  using muninn::io::regex;
  const json& e = expected().at("classes");
  const std::string& classes = e.at("classes").as_string();
  const std::string& word = e.at("word").as_string();
  const std::uint32_t step = std::uint32_t(e.at("step").as_int());
  const std::uint32_t end = std::uint32_t(e.at("end").as_int());
  const regex letter(R"(\p{L})"), number(R"([\p{N}])"), space(R"(\s)"), nonspace(R"(\S)"), w(R"(\w)"),
      unknown(R"(\p{Cn})");
  const auto is = [](const regex& re, const std::string& s) {
    std::vector<std::pair<std::size_t, std::size_t>> spans;
    re.find_all(s, spans);
    return !spans.empty();
  };
  std::size_t k = 0;
  int words = 0;
  for (std::uint32_t cp = 0; cp < end; cp += step) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    muninn::io::append_utf8(s, cp);
    const char want = classes.at(k);
    const char got = is(letter, s) ? 'L' : is(number, s) ? 'N' : is(space, s) ? 'S' : 'O';
    EXPECT_EQ(got, want) << "U+" << std::hex << cp;
    EXPECT_EQ(is(nonspace, s), want != 'S') << "U+" << std::hex << cp;
    if (!is(unknown, s)) {
      EXPECT_EQ(is(w, s), word.at(k) == 'W') << "\\w at U+" << std::hex << cp;
      ++words;
    }
    ++k;
  }
  EXPECT_EQ(k, classes.size());
  EXPECT_GT(words, 2000);
}

TEST(Tokenizer, SplitBehaviorsAndDigitsMatchHuggingFace) {
  using namespace muninn::io::detail;
  const json& e = expected().at("pre_tokenizers");
  const auto behavior = [](const std::string& s) {
    if (s == "Removed") return split_behavior::removed;
    if (s == "Isolated") return split_behavior::isolated;
    if (s == "MergedWithPrevious") return split_behavior::merged_with_previous;
    if (s == "MergedWithNext") return split_behavior::merged_with_next;
    return split_behavior::contiguous;
  };
  for (const json& c : e.at("split").as_array()) {
    pre_step st;
    st.type = pre_step::kind::split_string;
    st.literal = "-";
    st.behavior = behavior(c.at("behavior").as_string());
    st.invert = c.at("invert").as_bool();
    const std::string& text = c.at("text").as_string();
    EXPECT_EQ(apply_pre_step(st, {text}), strings_of(c.at("pieces")))
        << c.at("behavior").as_string() << " invert=" << st.invert << " on \"" << text << "\"";
  }
  for (const json& c : e.at("digits").as_array()) {
    pre_step st;
    st.type = pre_step::kind::digits;
    st.individual_digits = c.at("individual_digits").as_bool();
    const std::string& text = c.at("text").as_string();
    EXPECT_EQ(apply_pre_step(st, {text}), strings_of(c.at("pieces"))) << text;
  }
}

TEST(Tokenizer, ChatTemplateMatchesJinja) {
  const tokenizer tok = tokenizer::from_file(dir + "gpt2.json");
  int n = 0;
  for (const json& c : expected().at("chat").as_array()) {
    std::vector<muninn::io::chat_message> msgs;
    for (const json& m : c.at("messages").as_array())
      msgs.push_back({m.at("role").as_string(), m.at("content").as_string()});
    const bool gen = c.at("add_generation_prompt").as_bool();
    EXPECT_EQ(tokenizer::apply_chat_template(msgs, gen), c.at("text").as_string());
    EXPECT_EQ(tok.encode_chat(msgs, gen), ids_of(c.at("gpt2_ids")));
    ++n;
  }
  EXPECT_EQ(n, 10);
  // Hand-written: the exact shape of the released Huginn tokenizer.
  EXPECT_EQ(tokenizer::apply_chat_template({{"user", " Hi \n"}}, true),
            "<|begin_text|><|begin_header|>user<|end_header|>\n\nHi<|end_turn|>"
            "<|begin_header|>Huginn<|end_header|>\n\n");
  EXPECT_EQ(tokenizer::apply_chat_template({{"user", "a"}, {"assistant", "b"}}, false),
            "<|begin_text|><|begin_header|>user<|end_header|>\n\na<|end_turn|>"
            "<|begin_header|>Huginn<|end_header|>\n\nb<|end_turn|><|end_text|>");
}

TEST(Tokenizer, SpecialTokensAndLookups) {
  const tokenizer tok = tokenizer::from_file(dir + "gpt2.json");
  const auto bos = tok.token_to_id("<|begin_text|>");
  const auto eos = tok.token_to_id("<|end_text|>");
  ASSERT_TRUE(bos && eos);
  EXPECT_EQ(*eos, *bos + 1);  // Huginn's order: begin_text, end_text, begin_header, ...
  EXPECT_TRUE(tok.is_special(*bos));
  EXPECT_FALSE(tok.is_special(0));
  EXPECT_EQ(tok.id_to_token(*eos), "<|end_text|>");
  EXPECT_EQ(tok.added_tokens().size(), 36u);
  EXPECT_FALSE(tok.token_to_id("<|no such token|>").has_value());
  EXPECT_THROW(tok.id_to_token(std::int32_t(tok.vocab_size())), muninn::error);
  EXPECT_THROW(tok.id_to_token(-1), muninn::error);
  // Default encode() adds nothing; the post-processor appends EOS only on request.
  EXPECT_EQ(tok.encode("Hi").back(), tok.token_to_id("i").value());
  EXPECT_EQ(tok.encode("Hi", true).back(), *eos);
  // Unknown ids are skipped by decode(), as tokenizers does.
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{-3, 1 << 20, *tok.token_to_id("H")}), "H");
  // Pre-tokenizer pieces are raw bytes.
  EXPECT_EQ(tok.pre_tokenize("Hello  world\n"), (std::vector<std::string>{"Hello", " ", " world", "\n"}));
}

TEST(Tokenizer, EncodeIsThreadSafe) {
  const tokenizer tok = tokenizer::from_file(dir + "llama3.json");
  const std::string text = "Grüße aus München! 1234567 Привет, мир! 你好 😀\n\n";
  const auto want = tok.encode(text);
  std::vector<std::vector<std::int32_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) got[t] = tok.encode(text + std::to_string(k % 7));
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(tok.decode(got[t]), text + std::to_string(199 % 7));
  EXPECT_EQ(tok.encode(text), want);
}

// A minimal tokenizer.json with bytes 'a' and 'b' and one merge, and fields replaced by the caller.
std::string mini(const std::string& model_type = "\"BPE\"", const std::string& pre =
                     R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})",
                 const std::string& normalizer = "null", const std::string& decoder = R"({"type":"ByteLevel"})") {
  return R"({"version":"1.0","added_tokens":[{"id":3,"content":"<s>","special":true}],"normalizer":)" + normalizer +
         R"(,"pre_tokenizer":)" + pre + R"(,"post_processor":null,"decoder":)" + decoder +
         R"(,"model":{"type":)" + model_type + R"(,"vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}})";
}

std::string error_of(const std::string& text, const std::string& name = "mini.json") {
  try {
    tokenizer::from_string(text, name);
  } catch (const muninn::error& e) {
    return e.what();
  }
  return "";
}

TEST(Tokenizer, MinimalTokenizerWorks) {
  const tokenizer tok = tokenizer::from_string(mini(), "mini.json");
  EXPECT_EQ(tok.encode("abab<s>ba"), (std::vector<std::int32_t>{2, 2, 3, 1, 0}));
  EXPECT_EQ(tok.decode({2, 3, 1}), "ab<s>b");
  EXPECT_EQ(tok.decode({2, 3, 1}, true), "abb");
  // Bytes missing from the vocabulary (and no unk token) are dropped before merging, as tokenizers does.
  EXPECT_EQ(tok.encode("acb"), (std::vector<std::int32_t>{2}));
  EXPECT_EQ(tok.encode("a c b"), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(tok.vocab_size(), 4);

  // ignore_merges: a piece that is itself in the vocabulary is one token even when no merge leads to it.
  std::string text = mini();
  text.replace(text.find(R"("ab":2})"), 7, R"("ab":2,"c":5,"abc":6},"ignore_merges":true)");
  const tokenizer im = tokenizer::from_string(text, "ignore_merges.json");
  EXPECT_EQ(im.encode("abc abcab"), (std::vector<std::int32_t>{6, 2, 5, 2}));  // values from tokenizers
  text.replace(text.find("\"ignore_merges\":true"), 20, "\"ignore_merges\":false");
  EXPECT_EQ(tokenizer::from_string(text, "merges.json").encode("abc abcab"),
            (std::vector<std::int32_t>{2, 5, 2, 5, 2}));
}

TEST(Tokenizer, ErrorsNameTheFileAndTheProblem) {
  const auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
  };
  try {
    tokenizer::from_file(dir + "no_such_tokenizer.json");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const muninn::error& e) {
    has(e.what(), "no_such_tokenizer.json");
  }
  has(error_of("{\"model\": [1, 2", "broken.json"), "broken.json");
  std::string msg = error_of(mini("\"WordPiece\""));
  has(msg, "mini.json");
  has(msg, "WordPiece");
  // A pattern PCRE2 cannot compile: the file, the pattern, PCRE2's message and the offset in the pattern.
  const auto split = [](const std::string& json_pattern) {
    return mini("\"BPE\"", R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":")" +
                                json_pattern + R"("},"behavior":"Isolated"},{"type":"ByteLevel","use_regex":false}]})");
  };
  msg = error_of(split(R"(\\p{L}+|(\\s+)"), "bad_regex.json");
  has(msg, "bad_regex.json");
  has(msg, R"(\p{L}+|(\s+)");
  has(msg, "missing closing parenthesis");
  has(msg, "offset 11");
  msg = error_of(split(R"(\\p{NoSuchProperty})"));
  has(msg, R"(\p{NoSuchProperty})");
  has(msg, "unknown property");
  // Oniguruma syntax that PCRE2 would read differently is refused rather than run with another meaning.
  has(error_of(split("[a-z&&[^aeiou]]")), "intersection");
  has(error_of(split("[a[bc]]")), "nested character class");
  // A pattern that is fine is accepted.
  EXPECT_EQ(error_of(split(R"(\\p{L}+|\\s+)")), "");
  has(error_of(mini("\"BPE\"", R"({"type":"Metaspace"})")), "Metaspace");
  has(error_of(mini("\"BPE\"", "null")), "pre_tokenizer");
  has(error_of(mini("\"BPE\"", R"({"type":"Sequence","pretokenizers":[{"type":"Digits"}]})")), "ByteLevel");
  has(error_of(mini("\"BPE\"", R"({"type":"ByteLevel"})", R"({"type":"NFC"})")), "NFC");
  has(error_of(mini("\"BPE\"", R"({"type":"ByteLevel"})", "null", R"({"type":"WordPiece"})")), "decoder");
  std::string bad_merge = mini();
  bad_merge.replace(bad_merge.find("\"a b\""), 5, "\"a c\"");
  has(error_of(bad_merge), "merge 0");
}

// Input that is not valid UTF-8 (tokenizers never sees it: Python strings are Unicode) keeps every byte.
TEST(Tokenizer, InvalidUtf8KeepsEveryByte) {
  const std::string text = "ab\xFF cd\xC3 \xE2\x82x \xED\xA0\x80 it's\xF0\x9F\x98 12\x80\x80 \xC3\xA9";
  for (const char* name : {"gpt2", "llama3", "unusual"}) {  // the others add prefix spaces or drop text
    const tokenizer tok = tokenizer::from_file(dir + name + ".json");
    std::string bytes;
    for (std::int32_t id : tok.encode(text)) bytes += tok.token_bytes(id);
    EXPECT_EQ(bytes, text) << name;
  }
}

// Encoding time grows linearly with the input, also with many lstrip and single_word added tokens (looking back
// over all the text before each of them made this quadratic): 8x the text may take at most 24x the time, where
// quadratic work takes 64x. The smaller input is large enough (256 KB) for the timings to be well above noise.
TEST(Tokenizer, EncodingIsLinearWithStrippingAddedTokens) {
  const tokenizer tok = tokenizer::from_file(dir + "gpt2_prefix.json");
  const std::string unit = "it's a <mask> test ing  [R]   of ing words\n\n  <mask> x <|end_turn|> ";
  const auto seconds = [&](std::size_t bytes) {
    std::string text;
    while (text.size() < bytes) text += unit;
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto ids = tok.encode(text);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      EXPECT_GT(ids.size(), bytes / 8);
    }
    return best;
  };
  const double small = seconds(256 * 1024), large = seconds(8 * 256 * 1024);
  EXPECT_LT(large, 24 * small) << "256 KB: " << small << " s, 2 MB: " << large << " s";
}

// A pattern that backtracks without end stops with an error naming it instead of running on.
TEST(Tokenizer, RunawayPatternIsAnErrorNamingIt) {
  const tokenizer tok = tokenizer::from_string(
      mini("\"BPE\"", R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(a+)+$"},)"
                      R"("behavior":"Isolated"},{"type":"ByteLevel","use_regex":false}]})"),
      "runaway.json");
  // Short inputs are fine (ids from tokenizers, whose Oniguruma gives up on the long one as well).
  EXPECT_EQ(tok.encode("aab"), (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(tok.encode("baa"), (std::vector<std::int32_t>{1, 0, 0}));
  try {
    tok.encode(std::string(40, 'a') + "b");
    ADD_FAILURE() << "no error";
  } catch (const muninn::error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(a+)+$"), std::string::npos) << msg;
    EXPECT_NE(msg.find("match limit"), std::string::npos) << msg;
  }
}

// A pattern that needs a little less than one search's limit at every position (20 a's then X: about 2^20 steps
// per group) runs for minutes when each search has its own limit; all the searches of one encode share one
// budget, so it stops after a few groups with an error naming the pattern. The encode runs in a child process
// killed after 30 s.
TEST(Tokenizer, RegexWorkIsBudgetedPerEncode) {
  const tokenizer tok = tokenizer::from_string(
      mini("\"BPE\"", R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(a+)+b|."},)"
                      R"("behavior":"Isolated"},{"type":"ByteLevel","use_regex":false}]})"),
      "backtracking.json");
  EXPECT_EQ(tok.encode("aab"), (std::vector<std::int32_t>{0, 2}));
  std::string text;
  for (int k = 0; k < 2000; ++k) text += std::string(20, 'a') + "X";
  const std::string msg = muninn_test::outcome_in_child([&] { tok.encode(text); }, 30);
  EXPECT_EQ(msg, "regex '(a+)+b|.' ran past the match limit of one encode: 2688000 steps for 42000 bytes of text "
                 "(64 per byte and pass); the pattern backtracks too much");
}

// Token ids are bounded by how many tokens the file lists: a tiny file cannot ask for an id table of gigabytes.
TEST(Tokenizer, HugeTokenIdIsRefused) {
  const auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
  };
  std::string msg = error_of(R"({"model":{"vocab":{"a":1000000000},"merges":[]}})", "huge.json");
  has(msg, "huge.json");
  has(msg, "'a'");
  has(msg, "1000000000");
  // The same through an added token.
  std::string text = mini();
  text.replace(text.find(R"("id":3)"), 6, R"("id":900000000)");
  msg = error_of(text, "huge_added.json");
  has(msg, "huge_added.json");
  has(msg, "<s>");
  // Gaps up to the stated slack are fine.
  text = mini();
  const std::string id = std::to_string(4 + tokenizer::id_slack - 1);
  text.replace(text.find(R"("id":3)"), 6, "\"id\":" + id);
  EXPECT_EQ(error_of(text), "");
  EXPECT_EQ(tokenizer::from_string(text, "gap.json").vocab_size(), 4 + tokenizer::id_slack);
}

}  // namespace

}  // namespace test_tokenizer
