// Tests for torch.save checkpoints: the ZIP reader, the restricted unpickler, torch_file and
// checkpoint::open on them. Oracles: files torch.save wrote and the values torch.load read back
// (tests/data/torch/expected.json, tools/reference/make_torch_fixtures.py), hostile files written
// byte by byte, and pickles assembled here.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/pickle.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/torch_file.hpp"
#include "muninn/io/zip.hpp"
#include "muninn/muninn.hpp"
#include "test_io_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_torch_io {

namespace fs = std::filesystem;
using muninn::dtype;
using muninn::io::checkpoint;
using muninn::io::json;
using muninn::io::torch_file;
using muninn_test::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

const std::string data_dir = std::string(MUNINN_TEST_DATA) + "/torch/";

const json& expected() {
  static const json e = muninn::io::read_json_file(data_dir + "expected.json");
  return e;
}

dtype muninn_dtype(const std::string& torch_name) {
  if (torch_name == "bfloat16") return dtype::bf16;
  if (torch_name == "float16") return dtype::f16;
  return dtype::f32;
}

// Every float tensor of `rel` read through checkpoint::open equals what torch.load read back.
void check_against_torch(const std::string& rel, const std::string& open_path) {
  SCOPED_TRACE(rel);
  const json* file = expected().find("files")->find(rel);
  ASSERT_NE(file, nullptr);
  const checkpoint c = checkpoint::open(open_path);
  const json& tensors = *file->find("tensors");
  EXPECT_EQ(c.size(), tensors.size());
  for (const auto& [name, want] : tensors.as_object()) {
    SCOPED_TRACE(name);
    const auto& t = c.get(name);
    EXPECT_EQ(t.type, muninn_dtype(want.find("dtype")->as_string()));
    std::vector<std::int64_t> shape;
    for (const json& d : want.find("shape")->as_array()) shape.push_back(d.as_int());
    EXPECT_EQ(t.shape, shape);
    const std::vector<float> got = c.read_f32(name);
    const auto& values = want.find("values")->as_array();
    ASSERT_EQ(got.size(), values.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(double(got[i]), values[i].as_double()) << "element " << i;
  }
}

// Storage sharing and offsets as torch.load saw them: one storage per owner, data at offset × size.
void check_storages(const std::string& rel) {
  SCOPED_TRACE(rel);
  const json* file = expected().find("files")->find(rel);
  const torch_file f(data_dir + rel);
  EXPECT_EQ(f.storage_count(), std::size_t(file->find("storages")->as_int()));
  for (const auto& [name, want] : file->find("tensors")->as_object()) {
    const auto* t = f.find(name);
    ASSERT_NE(t, nullptr) << name;
    const auto* owner = f.find(want.find("shares_storage_with")->as_string());
    EXPECT_EQ(t->storage_offset, std::uint64_t(want.find("storage_offset")->as_int())) << name;
    EXPECT_EQ(t->storage, owner->storage) << name;
    const auto esize = muninn::io::torch_dtype_size(t->dtype);
    const auto* base = static_cast<const std::uint8_t*>(owner->data) - owner->storage_offset * esize;
    EXPECT_EQ(t->data, base + t->storage_offset * esize) << name;
  }
}

TEST(TorchFile, ValuesMatchTorchLoad) {
  check_against_torch("hf/pytorch_model.bin", data_dir + "hf");  // a directory: finds pytorch_model.bin
  check_against_torch("mixed.pt", data_dir + "mixed.pt");
  check_against_torch("step_3", data_dir + "step_3");
  check_against_torch("buffer.pt", data_dir + "buffer.pt");
  check_against_torch("zip64.pt", data_dir + "zip64.pt");
}

TEST(TorchFile, AliasedKeysShareOneStorage) {
  for (const char* rel : {"hf/pytorch_model.bin", "mixed.pt", "zip64.pt"}) check_storages(rel);
  const torch_file f(data_dir + "mixed.pt");
  EXPECT_EQ(f.find("alias")->data, f.find("w_f32")->data);
  EXPECT_EQ(f.find("tail")->storage_offset, 6u);
  EXPECT_EQ(f.find("row")->storage, f.find("base")->storage);
  EXPECT_TRUE(f.find("scalar")->shape.empty());
  EXPECT_EQ(f.top(), "mixed");
  EXPECT_EQ(f.version(), 3);
}

TEST(TorchFile, TopFolderLocationAndPrefix) {
  const torch_file buffer(data_dir + "buffer.pt");
  EXPECT_EQ(buffer.top(), "archive");
  const torch_file snap(data_dir + "step_3");
  EXPECT_EQ(snap.top(), "step_3");
  for (const auto& t : snap.tensors()) EXPECT_EQ(t.location, "cuda:0") << t.name;
  checkpoint c = checkpoint::open(data_dir + "step_3");
  EXPECT_EQ(c.strip_prefix("_orig_mod."), 2u);
  EXPECT_TRUE(c.has("inner.embed"));
  EXPECT_EQ(c.get("inner.embed").type, dtype::bf16);
}

TEST(TorchFile, SafetensorsComeFirstInADirectory) {
  const fs::path dir = fs::temp_directory_path() / ("muninn_torch_first_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(data_dir + "hf/pytorch_model.bin", dir / "pytorch_model.bin", fs::copy_options::overwrite_existing);
  EXPECT_TRUE(checkpoint::open(dir.string()).has("rec0.weight"));
  muninn::io::write_safetensors((dir / "model.safetensors").string(), {{"only", {{1}, {2.f}, dtype::f32}}});
  const checkpoint c = checkpoint::open(dir.string());
  EXPECT_EQ(c.names(), std::vector<std::string>{"only"});
  fs::remove_all(dir);
}

TEST(TorchFile, Int64IsReadButNotLoadable) {
  const torch_file f(data_dir + "int64.pt");
  const auto* ids = f.find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->dtype, "int64");
  std::int64_t v[3];
  std::memcpy(v, ids->data, sizeof v);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[2], 2);
  EXPECT_THAT(error_of([] { checkpoint::open(data_dir + "int64.pt"); }),
              AllOf(HasSubstr("int64.pt"), HasSubstr("tensor 'ids' has dtype int64"), HasSubstr("float32, bfloat16")));
}

TEST(TorchFile, NonContiguousIsRefused) {
  EXPECT_THAT(error_of([] { torch_file f(data_dir + "noncontig.pt"); }),
              AllOf(HasSubstr("noncontig.pt"), HasSubstr("tensor 'wt' is not contiguous"), HasSubstr("stride [1, 3]")));
}

// A family loader, unchanged, on a directory holding config.json and pytorch_model.bin (a tied
// Llama whose lm_head.weight aliases the embedding): logits as transformers computes them.
TEST(TorchFile, LlamaFamilyLoadsPytorchModelBin) {
  using llama_model = muninn::model<muninn::host_backend, float, muninn::llama_arch>;
  const json& want = *expected().find("llama_bin");
  const auto m = llama_model::load(data_dir + "llama_bin");
  const auto logits = m.forward(muninn_test::ids_of(*want.find("ids")));
  std::vector<float> ref;
  for (const json& x : want.find("logits")->as_array()) ref.push_back(float(x.as_double()));
  EXPECT_LE(muninn_test::max_abs_diff(logits, ref), 1e-4);
}

struct hostile_case {
  const char* file;
  std::vector<const char*> parts;
};

TEST(TorchFile, HostileFilesGiveOneClearError) {
  const std::vector<hostile_case> cases = {
      {"os_system.pt", {"refusing to load 'os.system'", "os_system/data.pkl", "allowlist"}},
      {"eval.pt", {"refusing to load 'builtins.eval'", "eval/data.pkl"}},
      {"truncated.pt", {"not a readable ZIP archive", "no end-of-central-directory record"}},
      {"compressed.pt", {"entry 'compressed/data.pkl' is compressed (method 8)"}},
      {"short_storage.pt", {"tensor 'w'", "short_storage/data/0 holds 12 bytes", "4 elements"}},
      {"past_storage.pt", {"tensor 'w'", "lie outside its storage '0' of 4 elements"}},
      {"huge_numel.pt", {"tensor 'w'", "4611686018427387904 elements"}},
      {"memo.pt", {"malformed pickle", "memo GET of index 200"}},
      {"marks.pt", {"malformed pickle", "nested MARKs"}},
      {"cd_outside.pt", {"central directory (offset 2147483648", "lies outside"}},
  };
  for (const auto& c : cases) {
    const std::string path = data_dir + "hostile/" + c.file;
    const std::string msg = error_of([&] { checkpoint::open(path); });
    EXPECT_THAT(msg, HasSubstr(path)) << c.file;
    for (const char* p : c.parts) EXPECT_THAT(msg, HasSubstr(p)) << c.file;
  }
}

// ---- the unpickler on hand-assembled bytes
namespace pk = muninn::io::pickle;

pk::ref unpickle(const std::string& bytes) { return pk::load(bytes, "test.pkl"); }
std::string unpickle_error(const std::string& bytes) {
  return error_of([&] { unpickle(bytes); });
}
// A byte string from a literal, NULs included (hex escapes are split where a hex digit follows).
template <std::size_t N>
std::string str(const char (&s)[N]) {
  return std::string(s, N - 1);
}

TEST(Pickle, ScalarsAndContainers) {
  // {'a': [1, -2, 300, 2**40, 1.5, True, None], 'b': ('x',)} via DICT / LIST / TUPLE1 and memo
  const std::string p = str("\x80\x02(X\x01\x00\x00\x00" "a(K\x01J\xfe\xff\xff\xffM,\x01\x8a\x06\x00\x00\x00\x00\x00\x01"
                            "G\x3f\xf8\x00\x00\x00\x00\x00\x00\x88Nlq\x05\x8c\x01" "b\x8c\x01x\x85" "d.");
  const pk::ref v = unpickle(p);
  ASSERT_EQ(v->k, pk::kind::dict);
  ASSERT_EQ(v->entries.size(), 2u);
  const auto& list = v->entries[0].second->items;
  ASSERT_EQ(list.size(), 7u);
  EXPECT_EQ(list[0]->i, 1);
  EXPECT_EQ(list[1]->i, -2);
  EXPECT_EQ(list[2]->i, 300);
  EXPECT_EQ(list[3]->i, std::int64_t(1) << 40);
  EXPECT_EQ(list[4]->f, 1.5);
  EXPECT_EQ(list[5]->k, pk::kind::boolean);
  EXPECT_EQ(list[6]->k, pk::kind::none);
  EXPECT_EQ(v->entries[1].second->items[0]->s, "x");
}

TEST(Pickle, MalformedInputIsAnError) {
  EXPECT_THAT(unpickle_error(str("\x80\x02X\x10\x00\x00\x00" "ab")), HasSubstr("runs past the end"));
  EXPECT_THAT(unpickle_error(str("\x80\x02K")), HasSubstr("truncated"));
  EXPECT_THAT(unpickle_error(str("\x80\x09N.")), HasSubstr("pickle protocol 9"));
  EXPECT_THAT(unpickle_error(str("\x80\x02N")), HasSubstr("truncated"));  // no STOP
  EXPECT_THAT(unpickle_error(str("\x80\x02NN.")), HasSubstr("STOP leaves 2 values"));
  EXPECT_THAT(unpickle_error(str("\x80\x02I1\n.")), HasSubstr("opcode 0x49 is not accepted"));
  EXPECT_THAT(unpickle_error(str("\x80\x02t.")), HasSubstr("TUPLE without a MARK"));
  EXPECT_THAT(unpickle_error(str("\x80\x02}(N.")), HasSubstr("STOP leaves"));
  EXPECT_THAT(unpickle_error(str("\x80\x02}(Nu.")), HasSubstr("odd number"));
  EXPECT_THAT(unpickle_error(str("\x80\x02(\x85.")), HasSubstr("TUPLE1 needs 1 values"));
  // a list appended to itself would be a cycle: refused
  EXPECT_THAT(unpickle_error(str("\x80\x02]q\x00h\x00" "a.")), HasSubstr("modifies a list that is already stored elsewhere"));
  // 40 nested one-element tuples exceed the nesting limit
  EXPECT_THAT(unpickle_error("\x80\x02N" + std::string(40, '\x85') + "."), HasSubstr("nest deeper than 32"));
  // the value budget: 1000 Nones against a limit of 100
  pk::limits small;
  small.max_values = 100;
  EXPECT_THAT(error_of([&] { pk::load("\x80\x02(" + std::string(1000, 'N') + "l.", "many.pkl", small); }),
              AllOf(HasSubstr("many.pkl"), HasSubstr("more than 100 values")));
}

TEST(Pickle, AllowlistAppliesToGlobalsAndCalls) {
  EXPECT_THAT(unpickle_error("\x80\x02" "cposix\nsystem\n."), HasSubstr("refusing to load 'posix.system' from test.pkl"));
  EXPECT_THAT(unpickle_error("\x80\x02" "ctorch\nload\n."), HasSubstr("refusing to load 'torch.load'"));
  EXPECT_THAT(unpickle_error("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2_x\n."), HasSubstr("refusing to load"));
  // a storage class or dtype is a value, never a function
  EXPECT_THAT(unpickle_error("\x80\x02" "ctorch\nFloatStorage\n)R."),
              HasSubstr("refusing to call 'torch.FloatStorage'"));
  EXPECT_EQ(unpickle("\x80\x02" "ctorch\nbfloat16\n.")->s, "torch.bfloat16");
  EXPECT_THAT(unpickle_error("\x80\x02" "ccollections\nOrderedDict\nK\x01\x85R."), HasSubstr("only OrderedDict()"));
  EXPECT_THAT(unpickle_error("\x80\x02" "K\x01)R."), HasSubstr("REDUCE calls a int"));
  // BUILD is accepted on an OrderedDict only
  EXPECT_EQ(unpickle("\x80\x02" "ccollections\nOrderedDict\n)R}b.")->k, pk::kind::dict);
  EXPECT_THAT(unpickle_error("\x80\x02" "]}b."), HasSubstr("BUILD sets the state of a list"));
}

// ---- the ZIP layer
TEST(Zip, EntryNamesAreValidated) {
  using muninn::io::detail::zip_name_valid;
  EXPECT_TRUE(zip_name_valid("archive/data/0"));
  EXPECT_TRUE(zip_name_valid("archive/"));
  EXPECT_FALSE(zip_name_valid(""));
  EXPECT_FALSE(zip_name_valid("/etc/passwd"));
  EXPECT_FALSE(zip_name_valid("a/../b"));
  EXPECT_FALSE(zip_name_valid("a//b"));
  EXPECT_FALSE(zip_name_valid("a\\b"));
  EXPECT_FALSE(zip_name_valid(std::string("a\0b", 3)));
}

TEST(Zip, EntriesPointIntoTheMapping) {
  const muninn::io::zip_archive z(data_dir + "zip64.pt");
  const auto* pkl = z.find("zip64/data.pkl");
  ASSERT_NE(pkl, nullptr);
  const auto* base = z.mapping().data();
  EXPECT_GE(pkl->data, base);
  EXPECT_LE(pkl->data + pkl->size, base + z.mapping().size());
  EXPECT_EQ(pkl->data[0], 0x80);  // PROTO
  EXPECT_EQ(z.find("zip64/byteorder")->size, 6u);
}

TEST(Zip, TooShortOrNotZip) {
  const auto dir = fs::temp_directory_path() / ("muninn_zip_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string small = (dir / "small.bin").string();
  muninn_test::write_bytes(small, "PK\x03\x04");
  EXPECT_THAT(error_of([&] { checkpoint::open(small); }), AllOf(HasSubstr(small), HasSubstr("shorter than")));
  const std::string nonzip = (dir / "plain.bin").string();
  muninn_test::write_bytes(nonzip, std::string(64, 'x'));
  EXPECT_THAT(error_of([&] { muninn::io::zip_archive z(nonzip); }), HasSubstr("no end-of-central-directory record"));
  fs::remove_all(dir);
}

}  // namespace

}  // namespace test_torch_io
