#pragma once
// The loaders fuzzed by tests/fuzz: each target takes raw bytes, feeds them to one reader, and
// returns normally whether the reader accepts the bytes or rejects them with muninn::error. Any
// other exception, a crash or a sanitizer report is a bug. Shared by the libFuzzer entry points
// (libfuzzer_main.cpp) and the corpus replay test (replay.cpp).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/config.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/names.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/families/llama/names.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/names.hpp"
#include "muninn/families/mor/yaml.hpp"
#include "muninn/families/trm/config.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/io/chat_template.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/io/torch_file.hpp"

namespace muninn_fuzz {

namespace fs = std::filesystem;

// A per-process scratch directory: the file readers need real files.
inline const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("muninn_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

inline void write_file(const fs::path& p, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `f`, swallowing the muninn::error a malformed input must produce; returns its message
// ("" when the input was accepted).
template <class F>
std::string run(F&& f) {
  try {
    f();
  } catch (const muninn::error& e) {
    return e.what();
  }
  return "";
}

inline std::string json(const std::uint8_t* data, std::size_t size) {
  return run([&] { muninn::io::parse_json(text(data, size), "fuzz.json"); });
}

inline std::string safetensors(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "fuzz.safetensors";
  write_file(p, data, size);
  return run([&] {
    const muninn::io::checkpoint c = muninn::io::checkpoint::open(p.string());
    for (const auto& t : c.tensors()) (void)c.read_f32(t.name);  // every accepted byte range must be readable
  });
}

inline std::string npy(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "fuzz.npy";
  write_file(p, data, size);
  // Both readers run; an input counts as accepted when the reader for its dtype accepts it.
  const std::string a = run([&] { (void)muninn::io::read_npy_f32(p.string()); });
  const std::string b = run([&] { (void)muninn::io::read_npy_i64(p.string()); });
  return a.find("(expected '<f4')") != std::string::npos ? b : a;
}

inline std::string huginn_config(const std::uint8_t* data, std::size_t size) {
  return run([&] {
    const auto cfg = muninn::io::model_config_from_json(muninn::io::parse_json(text(data, size), "config.json"),
                                                        "config.json");
    (void)muninn::io::huginn_tensor_specs(cfg);  // the name map a config sizes
  });
}

inline std::string llama_config(const std::uint8_t* data, std::size_t size) {
  return run([&] {
    const auto cfg = muninn::io::llama_config_from_json(muninn::io::parse_json(text(data, size), "config.json"),
                                                        "config.json");
    (void)muninn::io::llama_tensor_specs(cfg);
  });
}

// An index over two fixed shards in its own directory (x, y in shard 1; z in shard 2), plus a
// file outside it that a hostile index might name.
inline std::string shard_index(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    const fs::path d = scratch() / "ckpt";
    fs::create_directories(d);
    using muninn::io::tensor_to_write;
    muninn::io::write_safetensors((d / "model-00001-of-00002.safetensors").string(),
                                  {{"x", tensor_to_write{{2}, {1, 2}}}, {"y", tensor_to_write{{1}, {3}}}});
    muninn::io::write_safetensors((d / "model-00002-of-00002.safetensors").string(), {{"z", tensor_to_write{{1}, {4}}}});
    muninn::io::write_safetensors((scratch() / "outside.safetensors").string(), {{"z", tensor_to_write{{1}, {5}}}});
    return d;
  }();
  const fs::path p = dir / "model.safetensors.index.json";
  write_file(p, data, size);
  return run([&] {
    const muninn::io::checkpoint c = muninn::io::checkpoint::open(dir.string());
    const std::string root = fs::canonical(dir).string() + "/";
    for (const auto& t : c.tensors())
      if (fs::weakly_canonical(t.file).string().rfind(root, 0) != 0)
        throw std::logic_error("loaded a shard outside the checkpoint: " + t.file);
  });
}

// A torch.save file (zip + restricted unpickler): every accepted tensor's bytes must be readable.
inline std::string torch(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "fuzz_torch.bin";
  write_file(p, data, size);
  return run([&] {
    const muninn::io::torch_file f(p.string());
    std::size_t sum = 0;
    for (const auto& t : f.tensors())
      for (std::size_t i = 0; i < t.nbytes; ++i) sum += static_cast<const unsigned char*>(t.data)[i];
    (void)sum;
  });
}

// A Mixture-of-Recursions config.json: the Llama fields, the mor block and the name map they size.
inline std::string mor_config(const std::uint8_t* data, std::size_t size) {
  return run([&] {
    const auto cfg = muninn::io::mor_config_from_json(muninn::io::parse_json(text(data, size), "config.json"),
                                                      "config.json");
    (void)muninn::io::mor_tensor_specs(cfg);
  });
}

// A Hydra YAML holding MoR settings (yaml-cpp errors must come back as muninn::error).
inline std::string mor_yaml(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "fuzz_mor.yaml";
  write_file(p, data, size);
  return run([&] { (void)muninn::io::mor_settings_from_yaml(p.string()); });
}

// A split of a TRM / HRM puzzle dataset (dataset.json + five .npy files). The input is a list of
// files, each introduced by a line "=== <name>\n" (dataset.json, all__inputs.npy, all__labels.npy,
// all__puzzle_identifiers.npy, all__puzzle_indices.npy, all__group_indices.npy; other names are
// ignored); the files it does not give are those of a small valid split (3 examples of 4 tokens,
// vocab 6, puzzles [0, 2) and [2, 3) with identifiers 1 and 2 of 3, one group). Every accepted
// split is then read whole through the copying accessors, the views and the index lookups.
inline std::string puzzle_dataset(const std::uint8_t* data, std::size_t size) {
  static const char* const names[] = {"dataset.json", "all__inputs.npy", "all__labels.npy",
                                      "all__puzzle_identifiers.npy", "all__puzzle_indices.npy",
                                      "all__group_indices.npy"};
  const fs::path dir = scratch() / "puzzle";
  fs::create_directories(dir);
  const auto npy = [](const char* descr, std::vector<std::int64_t> shape, const std::string& bytes) {
    return muninn::io::detail::npy_header(descr, shape, "fuzz.npy") + bytes;
  };
  const auto i32 = [](std::initializer_list<std::int32_t> v) {
    std::string s;
    for (std::int32_t x : v) s.append(reinterpret_cast<const char*>(&x), 4);
    return s;
  };
  std::string files[6] = {
      "{\"pad_id\": 0, \"ignore_label_id\": 0, \"blank_identifier_id\": 0, \"vocab_size\": 6, \"seq_len\": 4, "
      "\"num_puzzle_identifiers\": 3, \"total_groups\": 1, \"mean_puzzle_examples\": 1.5, \"total_puzzles\": 2, "
      "\"sets\": [\"all\"]}",
      npy("|u1", {3, 4}, std::string("\1\2\3\4\5\0\1\2\3\3\3\3", 12)),
      npy("|u1", {3, 4}, std::string("\2\2\3\4\5\1\1\2\3\4\3\3", 12)),
      npy("<i4", {2}, i32({1, 2})),
      npy("<i4", {3}, i32({0, 2, 3})),
      npy("<i4", {2}, i32({0, 2})),
  };
  const std::string_view in = text(data, size);
  for (std::size_t at = in.rfind("=== ", 0) == 0 ? 0 : in.find("\n=== "); at != std::string_view::npos;) {
    const std::size_t name_at = at + (in[at] == '\n' ? 5 : 4);
    const std::size_t eol = in.find('\n', name_at);
    if (eol == std::string_view::npos) break;
    const std::string_view name = in.substr(name_at, eol - name_at);
    const std::size_t next = in.find("\n=== ", eol);
    const std::string_view body = in.substr(eol + 1, (next == std::string_view::npos ? in.size() : next) - eol - 1);
    for (int k = 0; k < 6; ++k)
      if (name == names[k]) files[k] = std::string(body);
    at = next;
  }
  for (int k = 0; k < 6; ++k)
    write_file(dir / names[k], reinterpret_cast<const std::uint8_t*>(files[k].data()), files[k].size());
  return run([&] {
    const auto d = muninn::io::puzzle_dataset::open(dir.string());
    std::vector<std::int32_t> row(static_cast<std::size_t>(d.seq_len()));
    std::int64_t sum = 0;
    for (std::int64_t i = 0; i < d.num_examples(); ++i) {
      d.inputs(i, row.data());
      d.labels(i, row.data());
      const auto v = d.inputs_view(i);
      for (std::int64_t k = 0; k < v.size(); ++k) sum += v[k] + d.labels_view(i)[k];
      sum += d.puzzle_identifier(i);
    }
    for (std::int64_t p = 0; p < d.num_puzzles(); ++p) sum += d.puzzle_examples(p).second + d.identifier_of_puzzle(p);
    for (std::int64_t g = 0; g < d.num_groups(); ++g) sum += d.group_puzzles(g).second;
    (void)sum;
  });
}

// The input split at its first line "=== <name>\n": what comes before, and what comes after (empty when the
// line is absent).
inline std::pair<std::string_view, std::string_view> split_at(std::string_view in, std::string_view name) {
  const std::string marker = "=== " + std::string(name) + "\n";
  const std::size_t at = in.rfind(marker, 0) == 0 ? 0 : in.find("\n" + marker);
  if (at == std::string_view::npos) return {in, {}};
  const std::size_t body = at + (at == 0 ? 0 : 1) + marker.size();
  return {in.substr(0, at), in.substr(body)};
}

// A chat template, parsed and rendered (with and without the generation prompt) over a conversation: the
// messages after a line "=== messages" (a JSON list of {"role", "content"} strings), else a fixed one. Limits
// are tighter than the defaults so that each input runs in milliseconds; the paths that enforce them are the
// same.
inline muninn::io::template_limits fuzz_template_limits() {
  muninn::io::template_limits l;
  l.max_output_bytes = 1 << 16;
  l.max_produced_bytes = 1 << 20;
  l.max_iterations = 20'000;
  l.max_work = 200'000;
  return l;
}
inline std::string chat_template(const std::uint8_t* data, std::size_t size) {
  using muninn::io::chat_message;
  const auto parts = split_at(text(data, size), "messages");
  const std::string_view src = parts.first, msgs = parts.second;
  std::vector<chat_message> conversation = {
      {"system", "Be brief."}, {"user", "  Hi there!\n"}, {"assistant", "Hello."}, {"user", "Grüße 😀 <tool>"}};
  if (!msgs.empty()) {
    conversation.clear();
    const std::string err = run([&] {
      const muninn::io::json list = muninn::io::parse_json(msgs, "messages");
      if (!list.is_array()) return;
      for (const muninn::io::json& m : list.as_array())
        if (m.is_object() && m.contains("role") && m.at("role").is_string() && m.contains("content") &&
            m.at("content").is_string())
          conversation.push_back({m.at("role").as_string(), m.at("content").as_string()});
    });
    (void)err;  // a message list that is not JSON leaves what was read
  }
  return run([&] {
    const auto t = muninn::io::chat_template::parse(std::string(src), "fuzz.jinja", fuzz_template_limits());
    const muninn::io::chat_variables vars = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    (void)t.render(conversation, true, vars);
    (void)t.render(conversation, false, vars);
  });
}

// A tokenizer.json, loaded, then used to encode the text after a line "=== text" (else a fixed multilingual
// text with added tokens), to decode the ids again and to pre-tokenize.
inline std::string tokenizer(const std::uint8_t* data, std::size_t size) {
  const auto parts = split_at(text(data, size), "text");
  const std::string_view file = parts.first, given = parts.second;
  const std::string sample = given.empty() ? std::string("The quick brown fox <|end_turn|> it's 2024!  Grüße \xF0\x9F\x98\x80 "
                                                         "x=3.14\n\n\t<mask> [R]  ing \xC3(")
                                           : std::string(given);
  return run([&] {
    const auto tok = muninn::io::tokenizer::from_string(file, "fuzz_tokenizer.json");
    const std::vector<std::int32_t> ids = tok.encode(sample, true);
    (void)tok.decode(ids, false);
    (void)tok.decode(ids, true);
    (void)tok.pre_tokenize(sample);
  });
}

// A TRM / HRM all_config.yaml: the arch settings and the dataset paths.
inline std::string trm_config(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "all_config.yaml";
  write_file(p, data, size);
  return run([&] {
    (void)muninn::io::trm_arch_from_yaml(p.string());
    (void)muninn::io::trm_data_paths_from_yaml(p.string());
  });
}

// A puzzle dataset's dataset.json alone: the metadata and the sizes a TRM config takes from it.
inline std::string trm_dataset_json(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "dataset.json";
  write_file(p, data, size);
  return run([&] { (void)muninn::io::trm_sizes_from_dataset_json(p.string()); });
}

// A CALM config.json: read as the model's config when it has the model's fields, else as an autoencoder's.
inline std::string calm_config(const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / "config.json";
  write_file(p, data, size);
  return run([&] {
    if (muninn::io::is_calm_config(muninn::io::read_json_file(p.string()))) (void)muninn::io::read_calm_config(p.string());
    else (void)muninn::io::read_autoencoder_config(p.string());
  });
}

// Every target by name, for the replay driver and tools/fuzz.sh. Heap a replayed input may need: the parsers
// at most 24 bytes per input byte (beyond a fixed 1 MiB); a tokenizer or a rendered template builds more.
using target_fn = std::string (*)(const std::uint8_t*, std::size_t);
struct target {
  const char* name;
  target_fn fn;
  std::size_t bytes_per_input_byte = 24;
  std::size_t fixed_allowance = std::size_t(1) << 20;
};
inline constexpr target targets[] = {{"json", json},
                                     {"safetensors", safetensors},
                                     {"npy", npy},
                                     {"huginn_config", huginn_config},
                                     {"llama_config", llama_config},
                                     {"shard_index", shard_index},
                                     {"torch", torch},
                                     {"mor_config", mor_config},
                                     {"mor_yaml", mor_yaml},
                                     {"puzzle_dataset", puzzle_dataset},
                                     {"chat_template", chat_template, 64, std::size_t(16) << 20},
                                     {"tokenizer", tokenizer, 128, std::size_t(16) << 20},
                                     {"trm_config", trm_config},
                                     {"trm_dataset_json", trm_dataset_json},
                                     {"calm_config", calm_config}};

}  // namespace muninn_fuzz
