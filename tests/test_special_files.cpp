// Every file reader refuses a path that is not a regular file — a FIFO, a character device
// (/dev/zero), a directory, a socket — with one error naming it, before it can block: opening a
// FIFO for reading waits for a writer, and /dev/zero never ends. Each reader runs in a child
// process with an alarm, so a reader that hangs fails its test instead of hanging the suite.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "muninn/families/calm/config.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/yaml.hpp"
#include "muninn/families/trm/config.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/io/chat_template.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/io/torch_file.hpp"
#include "test_io_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_special_files {

namespace {

using muninn_test::outcome_in_child;
namespace fs = std::filesystem;
const fs::path data = MUNINN_TEST_DATA;

// The kinds of special file put in place of a reader's file.
enum class special { fifo, dev_zero, directory, socket };
const char* name_of(special s) {
  switch (s) {
    case special::fifo: return "FIFO";
    case special::dev_zero: return "/dev/zero";
    case special::directory: return "directory";
    case special::socket: return "socket";
  }
  return "?";
}

void make_special(const fs::path& p, special s) {
  fs::remove_all(p);
  switch (s) {
    case special::fifo: ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno); break;
    case special::dev_zero: fs::create_symlink("/dev/zero", p); break;
    case special::directory: fs::create_directory(p); break;
    case special::socket: {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      ASSERT_LT(p.string().size(), sizeof a.sun_path) << p;
      std::strcpy(a.sun_path, p.c_str());
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
      ::close(fd);  // the socket file stays
      break;
    }
  }
}

// One reader and the file of it that a special file replaces.
struct reader_case {
  const char* what;
  const char* file;                                    // replaced, relative to the case's folder
  std::function<void(const fs::path&)> prepare;        // writes the other files the reader needs
  std::function<void(const fs::path&)> read;           // reads the folder
  // What else may refuse the path first (a check that runs before the file is opened), or "".
  const char* refused_earlier = "";
  bool directory_is_a_checkpoint = false;              // a directory in its place is read as a folder
};

void copy_dir(const fs::path& from, const fs::path& to) {
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::vector<reader_case> reader_cases() {
  using namespace muninn;
  const auto nothing = [](const fs::path&) {};
  return {
      {"Huginn config.json", "config.json", nothing, [](const fs::path& d) { io::read_model_config(d.string()); }},
      {"Llama config.json", "config.json", nothing, [](const fs::path& d) { io::read_llama_config(d.string()); }},
      {"CALM config.json", "config.json", nothing, [](const fs::path& d) { io::read_calm_config(d.string()); }},
      {"CALM autoencoder config.json", "config.json", nothing,
       [](const fs::path& d) { io::read_autoencoder_config(d.string()); }},
      {"MoR config.json", "config.json", nothing, [](const fs::path& d) { io::read_mor_config(d.string(), ""); }},
      {"MoR YAML", "mor.yaml", nothing,
       [](const fs::path& d) { io::mor_settings_from_yaml((d / "mor.yaml").string()); }},
      {"TRM all_config.yaml", "all_config.yaml", nothing,
       [](const fs::path& d) { io::trm_arch_from_yaml((d / "all_config.yaml").string()); }},
      {"TRM data paths", "all_config.yaml", nothing,
       [](const fs::path& d) { io::trm_data_paths_from_yaml((d / "all_config.yaml").string()); }},
      {"TRM sizes config.json", "config.json", nothing,
       [](const fs::path& d) { io::trm_sizes_from_config_json((d / "config.json").string()); }},
      {"model.safetensors", "model.safetensors", nothing, [](const fs::path& d) { io::checkpoint::open(d.string()); }},
      {"model.safetensors.index.json", "model.safetensors.index.json", nothing,
       [](const fs::path& d) { io::checkpoint::open(d.string()); }},
      {"a shard of the index", "model-00002-of-00006.safetensors",
       [](const fs::path& d) { copy_dir(data / "llama/tiny_bf16_sharded", d); },
       [](const fs::path& d) { io::checkpoint::open(d.string()); },
       "outside the checkpoint directory"},  // the link to /dev/zero leaves the folder
      {"pytorch_model.bin", "pytorch_model.bin", nothing, [](const fs::path& d) { io::checkpoint::open(d.string()); }},
      {"a torch.save file", "step_3", nothing, [](const fs::path& d) { io::torch_file((d / "step_3").string()); }},
      {"a checkpoint file by path", "step_3", nothing,
       [](const fs::path& d) { io::checkpoint::open((d / "step_3").string()); }, "", true},
      {".npy", "x.npy", nothing, [](const fs::path& d) { io::read_npy_f32((d / "x.npy").string()); }},
      {"tokenizer.json", "tokenizer.json", nothing,
       [](const fs::path& d) { io::tokenizer::from_file((d / "tokenizer.json").string()); }},
      {"tokenizer_config.json", "tokenizer_config.json", nothing,
       [](const fs::path& d) { io::chat_template::from_tokenizer_config((d / "tokenizer_config.json").string()); }},
      {"a chat template file", "chat_template.jinja", nothing,
       [](const fs::path& d) { io::read_text_file((d / "chat_template.jinja").string()); }},
      {"a JSON file", "x.json", nothing, [](const fs::path& d) { io::read_json_file((d / "x.json").string()); }},
      {"dataset.json", "dataset.json", [](const fs::path& d) { copy_dir(data / "trm/data/sudoku4/test", d); },
       [](const fs::path& d) { io::puzzle_dataset::open(d.string()); }},
      {"a puzzle dataset array", "all__inputs.npy",
       [](const fs::path& d) { copy_dir(data / "trm/data/sudoku4/test", d); },
       [](const fs::path& d) { io::puzzle_dataset::open(d.string()); }},
  };
}

class SpecialFiles : public muninn_test::temp_dir_test {
 protected:
  SpecialFiles() : temp_dir_test("muninn_special_") {}
};

TEST_F(SpecialFiles, EveryReaderRefusesThemBeforeBlocking) {
  for (const reader_case& c : reader_cases()) {
    for (special s : {special::fifo, special::dev_zero, special::directory, special::socket}) {
      if (s == special::directory && c.directory_is_a_checkpoint) continue;
      SCOPED_TRACE(std::string(c.what) + " as a " + name_of(s));
      const fs::path dir = dir_ / "case";
      fs::remove_all(dir);
      fs::create_directories(dir);
      c.prepare(dir);
      make_special(dir / c.file, s);
      const std::string msg = outcome_in_child([&] { c.read(dir); });
      const bool earlier = *c.refused_earlier && msg.find(c.refused_earlier) != std::string::npos;
      EXPECT_TRUE(msg.find("not a regular file") != std::string::npos || earlier) << msg;
      EXPECT_NE(msg.find(c.file), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    }
  }
}

// The error names what the path is.
TEST_F(SpecialFiles, TheErrorSaysWhatThePathIs) {
  const fs::path fifo = dir_ / "config.json";
  make_special(fifo, special::fifo);
  EXPECT_EQ(outcome_in_child([&] { muninn::io::read_json_file(fifo.string()); }),
            "cannot read '" + fifo.string() + "': it is a FIFO, not a regular file");
  EXPECT_EQ(outcome_in_child([] { muninn::io::read_text_file("/dev/zero"); }),
            "cannot read '/dev/zero': it is a character device, not a regular file");
  EXPECT_EQ(outcome_in_child([&] { muninn::io::read_text_file(dir_.string()); }),
            "cannot read '" + dir_.string() + "': it is a directory, not a regular file");
}

}  // namespace

}  // namespace test_special_files
