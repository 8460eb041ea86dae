// Tests for family::llama: config.json (transformers 4.x and 5.x layouts), the checkpoint name map
// and its validation, loading into model_weights (fused q;k;v and gate;up, biases, tied heads, bf16,
// shards) and the RoPE table (default, linear, llama3).
// Oracles: checkpoints written here with hand-listed Hugging Face names and values that identify
// tensor and element; transformers' RoPE formulas evaluated in double precision.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/families/llama/family.hpp"
#include "muninn/families/llama/rope_table.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/policies.hpp"
#include "test_io_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_llama_io {

namespace fs = std::filesystem;
using muninn::dtype;
using muninn::llama_config;
using muninn::io::checkpoint;
using muninn::io::tensor_to_write;
using ::testing::AllOf;
using ::testing::HasSubstr;
using llama = muninn::family::llama;

namespace {

using muninn_test::error_of;
void write_text(const fs::path& p, const std::string& text) { muninn_test::write_bytes(p, text); }

// ------------------------------------------------------------------------------------ config text

// A config.json as (key, raw JSON value) pairs, so that a test can change or drop one field.
struct config_text {
  std::vector<std::pair<std::string, std::string>> fields;
  config_text& set(const std::string& key, const std::string& raw) {
    for (auto& f : fields) {
      if (f.first != key) continue;
      f.second = raw;
      return *this;
    }
    fields.emplace_back(key, raw);
    return *this;
  }
  config_text& erase(const std::string& key) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      if (it->first != key) continue;
      fields.erase(it);
      break;
    }
    return *this;
  }
  std::string str() const {
    std::string s = "{";
    for (const auto& [k, v] : fields) s += (s.size() > 1 ? ",\n  \"" : "\n  \"") + k + "\": " + v;
    return s + "\n}\n";
  }
};

// The tiny model every checkpoint test uses: h=8, H=2, Hkv=1, D=4, I=6, 2 layers, V=10, 16 positions.
config_text base_config() {
  return config_text{{{"architectures", R"(["LlamaForCausalLM"])"},
                      {"model_type", R"("llama")"},
                      {"hidden_size", "8"},
                      {"intermediate_size", "6"},
                      {"num_attention_heads", "2"},
                      {"num_key_value_heads", "1"},
                      {"num_hidden_layers", "2"},
                      {"vocab_size", "10"},
                      {"max_position_embeddings", "16"},
                      {"rms_norm_eps", "1e-05"},
                      {"hidden_act", R"("silu")"},
                      {"pretraining_tp", "1"},
                      {"tie_word_embeddings", "false"},
                      {"attention_bias", "false"},
                      {"mlp_bias", "false"},
                      {"bos_token_id", "1"},
                      {"use_cache", "true"}}};
}

const char* llama3_keys =
    R"("factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192)";

// As transformers 4.x writes Llama 3.1: top-level rope_theta, rope_scaling, torch_dtype.
config_text v4_llama3() {
  return base_config()
      .set("torch_dtype", R"("bfloat16")")
      .set("rope_theta", "500000.0")
      .set("rope_scaling", std::string("{") + llama3_keys + R"(, "rope_type": "llama3"})")
      .set("transformers_version", R"("4.45.0")");
}

// As transformers 5.x writes it: everything RoPE under rope_parameters, dtype.
config_text v5_llama3() {
  return base_config()
      .set("dtype", R"("bfloat16")")
      .set("rope_parameters", std::string(R"({"rope_type": "llama3", "rope_theta": 500000.0, )") + llama3_keys + "}")
      .set("transformers_version", R"("5.0.0")");
}

// Each test gets its own directory under the system temp dir, removed afterwards.
class llama_test : public muninn_test::temp_dir_test {
 protected:
  llama_test() : temp_dir_test("muninn_test_llama_") {}
  llama_config read(const config_text& c) {
    write_text(dir_ / "config.json", c.str());
    return llama::read_config(dir_.string());
  }
  std::string config_error(const config_text& c) {
    write_text(dir_ / "config.json", c.str());
    return error_of([&] { llama::read_config(dir_.string()); });
  }
};

void expect_same_config(const llama_config& a, const llama_config& b) {
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.n_embd, b.n_embd);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.n_layers_in_prelude, b.n_layers_in_prelude);
  EXPECT_EQ(a.n_layers_in_recurrent_block, b.n_layers_in_recurrent_block);
  EXPECT_EQ(a.n_layers_in_coda, b.n_layers_in_coda);
  EXPECT_EQ(a.mean_recurrence, b.mean_recurrence);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.rope_base, b.rope_base);
  EXPECT_EQ(a.qk_bias, b.qk_bias);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.rope_type, b.rope_type);
  EXPECT_EQ(a.rope_factor, b.rope_factor);
  EXPECT_EQ(a.rope_low_freq_factor, b.rope_low_freq_factor);
  EXPECT_EQ(a.rope_high_freq_factor, b.rope_high_freq_factor);
  EXPECT_EQ(a.rope_original_max_position, b.rope_original_max_position);
  EXPECT_EQ(a.attention_bias, b.attention_bias);
  EXPECT_EQ(a.mlp_bias, b.mlp_bias);
}

// ------------------------------------------------------------------------------------------ config

TEST_F(llama_test, config_fields_map_to_model_config) {
  const llama_config c = read(v4_llama3());
  EXPECT_EQ(c.source, path("config.json"));
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.n_embd, 8);
  EXPECT_EQ(c.n_heads, 2);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.intermediate_size, 6);
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_EQ(c.n_layers_in_prelude, 2);
  EXPECT_EQ(c.n_layers_in_recurrent_block, 0);
  EXPECT_EQ(c.n_layers_in_coda, 0);
  EXPECT_EQ(c.mean_recurrence, 0);
  EXPECT_EQ(c.block_size, 16);
  EXPECT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_base, 500000.0f);
  EXPECT_EQ(c.rope_type, "llama3");
  EXPECT_EQ(c.rope_factor, 8.0f);
  EXPECT_EQ(c.rope_low_freq_factor, 1.0f);
  EXPECT_EQ(c.rope_high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_original_max_position, 8192);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_bias);
  EXPECT_FALSE(c.mlp_bias);

  const llama_config b = read(base_config().set("attention_bias", "true").set("mlp_bias", "true"));
  EXPECT_TRUE(b.attention_bias);
  EXPECT_TRUE(b.qk_bias);
  EXPECT_TRUE(b.mlp_bias);
}

TEST_F(llama_test, config_defaults_are_llama_configs) {
  config_text t = base_config();
  for (const char* k : {"num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "hidden_act",
                        "pretraining_tp", "tie_word_embeddings", "attention_bias", "mlp_bias", "model_type"})
    t.erase(k);
  const llama_config c = read(t);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.block_size, 2048);
  EXPECT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_base, 10000.0f);
  EXPECT_EQ(c.rope_type, "default");
  EXPECT_FALSE(c.tie_embeddings);  // LlamaConfig's default, unlike Huginn's
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.mlp_bias);
}

TEST_F(llama_test, head_dim_may_differ_from_hidden_over_heads) {
  EXPECT_EQ(read(base_config().set("head_dim", "6")).head_dim, 6);
  // Without head_dim, transformers floors hidden_size / num_attention_heads.
  EXPECT_EQ(read(base_config().set("hidden_size", "9")).head_dim, 4);
}

TEST_F(llama_test, transformers_4_and_5_configs_agree) {
  const std::vector<std::pair<config_text, config_text>> pairs = {
      {v4_llama3(), v5_llama3()},
      // Legacy "type" key (transformers < 4.43) against 5.x.
      {base_config().set("rope_theta", "10000.0").set("rope_scaling", R"({"type": "linear", "factor": 2.5})"),
       base_config().set("rope_parameters", R"({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.5})")},
      {base_config().set("rope_theta", "10000.0").set("rope_scaling", "null"),
       base_config().set("rope_parameters", R"({"rope_type": "default", "rope_theta": 10000.0})")},
      {base_config(), base_config().set("rope_parameters", R"({"rope_type": "default", "rope_theta": 10000.0})")},
      // Both layouts in one file, agreeing.
      {v4_llama3(), v4_llama3()
                        .set("dtype", R"("bfloat16")")
                        .set("rope_parameters", std::string(R"({"rope_type": "llama3", "rope_theta": 500000.0, )") +
                                                    llama3_keys + "}")},
  };
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    SCOPED_TRACE("pair " + std::to_string(i));
    const llama_config a = read(pairs[i].first), b = read(pairs[i].second);
    expect_same_config(a, b);
  }
  EXPECT_EQ(read(pairs[1].second).rope_type, "linear");
  EXPECT_EQ(read(pairs[1].second).rope_factor, 2.5f);
  EXPECT_EQ(read(pairs[2].second).rope_type, "default");
  EXPECT_EQ(read(base_config().set("rope_scaling", R"({"rope_type": "default"})")).rope_type, "default");
}

// Each rejected config names config.json and the field.
struct rejection {
  config_text config;
  std::vector<std::string> expect;
};

TEST_F(llama_test, config_rejections_name_file_and_field) {
  const std::string supported = R"(supported: "default" (or null), "linear", "llama3")";
  const auto v4_scaling = [](const std::string& raw) { return base_config().set("rope_scaling", raw); };
  const auto v5_params = [](const std::string& raw) { return base_config().set("rope_parameters", raw); };
  const std::vector<rejection> cases = {
      {base_config().set("hidden_act", R"("gelu")"), {"field 'hidden_act' is \"gelu\"", "\"silu\""}},
      {base_config().set("num_key_value_heads", "3"),
       {"field 'num_attention_heads' = 2 is not a multiple of 'num_key_value_heads' = 3"}},
      {base_config().set("head_dim", "5"), {"head_dim = 5 must be even"}},
      {base_config().set("hidden_size", "6"), {"head_dim = 3 must be even"}},
      {base_config().set("pretraining_tp", "2"), {"field 'pretraining_tp' = 2 is unsupported"}},
      {base_config().set("hidden_size", "0"), {"field 'hidden_size' must be at least 1, found 0"}},
      {base_config().set("intermediate_size", "-6"), {"field 'intermediate_size' must be at least 1"}},
      {base_config().set("num_hidden_layers", "0"), {"field 'num_hidden_layers' must be at least 1"}},
      {base_config().set("num_attention_heads", "0"), {"field 'num_attention_heads' must be at least 1"}},
      {base_config().set("num_key_value_heads", "0"), {"field 'num_key_value_heads' must be at least 1"}},
      {base_config().set("vocab_size", "0"), {"field 'vocab_size' must be at least 1"}},
      {base_config().set("max_position_embeddings", "0"), {"field 'max_position_embeddings' must be at least 1"}},
      {base_config().set("head_dim", "0"), {"field 'head_dim' must be at least 1"}},
      {base_config().set("rms_norm_eps", "0"), {"field 'rms_norm_eps' must be positive"}},
      {base_config().set("num_attention_heads", "16"), {"gives head_dim 0", "'head_dim'"}},
      {base_config().erase("vocab_size"), {"missing required field 'vocab_size'"}},
      {base_config().set("hidden_size", "8.5"), {"field 'hidden_size' must be an integer"}},
      {base_config().set("model_type", R"("mistral")"), {"field 'model_type' is \"mistral\""}},
      {v4_scaling(R"("linear")"), {"field 'rope_scaling' must be an object or null, found string"}},
      {v4_scaling("2.0"), {"field 'rope_scaling' must be an object or null, found number"}},
      {v5_params("[1]"), {"field 'rope_parameters' must be an object or null, found array"}},
      {v4_scaling(R"({"rope_type": "dynamic", "factor": 2.0})"),
       {"field 'rope_scaling.rope_type' is \"dynamic\"", supported}},
      {v4_scaling(R"({"type": "yarn", "factor": 2.0})"), {"field 'rope_scaling.type' is \"yarn\"", supported}},
      {v4_scaling(R"({"rope_type": "longrope"})"), {"\"longrope\"", supported}},
      {v4_scaling(R"({"type": "su"})"), {"\"su\"", supported}},
      {v5_params(R"({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0})"),
       {"field 'rope_parameters.rope_type' is \"yarn\"", supported}},
      {v4_scaling(R"({"rope_type": 3})"), {"field 'rope_scaling.rope_type' must be a string"}},
      {v4_scaling(R"({"rope_type": "linear"})"), {"rope type \"linear\" needs field 'rope_scaling.factor'"}},
      {v4_scaling(R"({"rope_type": "linear", "factor": 0})"), {"field 'rope_scaling.factor' must be positive"}},
      {v4_scaling(R"({"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192})"),
       {"rope type \"llama3\" needs field 'rope_scaling.factor'"}},
      {v4_scaling(R"({"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192})"),
       {"needs field 'rope_scaling.low_freq_factor'"}},
      {v4_scaling(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192})"),
       {"needs field 'rope_scaling.high_freq_factor'"}},
      {v5_params(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0})"),
       {"needs field 'rope_scaling.original_max_position_embeddings' (or "
        "'rope_parameters.original_max_position_embeddings')"}},
      {v4_scaling(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192})"),
       {"needs high_freq_factor > low_freq_factor"}},
      {v4_llama3().set("rope_parameters", R"({"rope_type": "llama3", "rope_theta": 10000.0})"),
       {"fields 'rope_theta' and 'rope_parameters.rope_theta' are aliases but disagree"}},
      {v4_llama3().set("rope_parameters", R"({"rope_type": "default"})"),
       {"fields 'rope_scaling.rope_type' and 'rope_parameters.rope_type' are aliases but disagree"}},
      {v4_llama3().set("rope_parameters", R"({"rope_type": "llama3", "factor": 32.0})"),
       {"fields 'rope_scaling.factor' and 'rope_parameters.factor' are aliases but disagree"}},
      {v4_llama3().set("dtype", R"("float32")"), {"fields 'torch_dtype' and 'dtype' are aliases but disagree"}},
      // hostile sizes and floats: bounded before they size the name map or overflow a product
      {base_config().set("num_hidden_layers", "1000000"),
       {"field 'num_hidden_layers' = 1000000 exceeds Muninn's limit of 4096"}},
      {base_config().set("num_attention_heads", "9223372036854775807"),
       {"field 'num_attention_heads' = 9223372036854775807 exceeds"}},
      {base_config().set("head_dim", "1152921504606846976"), {"field 'head_dim' = 1152921504606846976 exceeds"}},
      {base_config().set("hidden_size", "1048576").set("num_attention_heads", "1"), {"head_dim = 1048576 exceeds"}},
      {base_config().set("vocab_size", "4294967296"), {"field 'vocab_size' = 4294967296 exceeds"}},
      {base_config().set("max_position_embeddings", "4194304").set("head_dim", "4096"),
       {"block_size (max_position_embeddings) = 4194304 x head_dim = 4096", "RoPE table"}},
      {base_config().set("rms_norm_eps", "1e-46"), {"field 'rms_norm_eps' must be positive", "(0 as a float)"}},
      {base_config().set("rms_norm_eps", "1e-400"), {"field 'rms_norm_eps' must be positive, found 0"}},
      {base_config().set("rope_theta", "3.5e38"), {"field 'rope_theta' = 3.5e+38 does not fit a float"}},
      {v4_scaling(R"({"rope_type": "linear", "factor": 1e39})"), {"field 'rope_scaling.factor' = 1e+39 does not fit"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + ":\n" + cases[i].config.str());
    const std::string e = config_error(cases[i].config);
    EXPECT_THAT(e, HasSubstr(path("config.json") + ": "));
    for (const std::string& s : cases[i].expect) EXPECT_THAT(e, HasSubstr(s));
  }
  write_text(dir_ / "config.json", "[1, 2]");
  EXPECT_THAT(error_of([&] { llama::read_config(dir_.string()); }), HasSubstr("config must be a JSON object"));
}

TEST(llama_family, recognizes_llama_configs_only) {
  const auto rec = [](const char* text) { return llama::recognizes(muninn::io::parse_json(text, "t.json")); };
  EXPECT_TRUE(rec(R"({"model_type": "llama"})"));
  EXPECT_TRUE(rec(R"({"architectures": ["LlamaForCausalLM"]})"));
  EXPECT_TRUE(rec(R"({"model_type": "x", "architectures": ["Other", "LlamaForCausalLM"]})"));
  EXPECT_FALSE(rec(R"({"model_type": "huginn_raven", "architectures": ["RavenForCausalLM"]})"));
  EXPECT_FALSE(rec(R"({"model_type": "mistral", "architectures": ["MistralForCausalLM"]})"));
  EXPECT_FALSE(rec(R"({"model_type": 3, "architectures": "LlamaForCausalLM"})"));
  EXPECT_FALSE(rec("[]"));
  EXPECT_STREQ(llama::name, "llama");
}

// -------------------------------------------------------------------------------------- checkpoints

// The tensors of the tiny model, listed by hand from the Hugging Face layout. Element k of the t-th
// tensor holds t + k/64, so every value says which tensor and element it came from.
struct tiny_ckpt {
  std::vector<std::pair<std::string, tensor_to_write>> tensors;
  std::map<std::string, std::vector<float>> values;  // as stored (rounded to the storage type)

  void add(const std::string& name, std::vector<std::int64_t> shape, dtype type) {
    std::size_t n = 1;
    for (auto d : shape) n *= std::size_t(d);
    std::vector<float> v(n), stored(n);
    for (std::size_t k = 0; k < n; ++k) {
      v[k] = float(tensors.size() + 1) + float(k) / 64.0f;
      stored[k] = type == dtype::bf16 ? muninn::to_float(muninn::to_bf16(v[k])) : v[k];
    }
    tensors.emplace_back(name, tensor_to_write{std::move(shape), std::move(v), type});
    values[name] = std::move(stored);
  }
  void erase(const std::string& name) {
    for (auto it = tensors.begin(); it != tensors.end(); ++it)
      if (it->first == name) return void(tensors.erase(it));
    ADD_FAILURE() << "no tensor " << name;
  }
  void reshape(const std::string& name, std::vector<std::int64_t> shape) {
    std::size_t n = 1;
    for (auto d : shape) n *= std::size_t(d);
    for (auto& [k, t] : tensors)
      if (k == name) t = tensor_to_write{std::move(shape), std::vector<float>(n, 0.0f), t.type};
  }
  // The stored values of `names`, one after the other.
  std::vector<float> cat(std::initializer_list<std::string> names) const {
    std::vector<float> out;
    for (const auto& n : names) out.insert(out.end(), values.at(n).begin(), values.at(n).end());
    return out;
  }
};

struct tiny_options {
  bool lm_head = true;
  bool attention_bias = false;
  bool mlp_bias = false;
  dtype type = dtype::f32;
};

tiny_ckpt tiny_tensors(const tiny_options& o) {
  tiny_ckpt c;
  const dtype t = o.type;
  c.add("model.embed_tokens.weight", {10, 8}, t);
  for (const std::string p : {"model.layers.0", "model.layers.1"}) {
    c.add(p + ".input_layernorm.weight", {8}, t);
    c.add(p + ".self_attn.q_proj.weight", {8, 8}, t);
    c.add(p + ".self_attn.k_proj.weight", {4, 8}, t);
    c.add(p + ".self_attn.v_proj.weight", {4, 8}, t);
    c.add(p + ".self_attn.o_proj.weight", {8, 8}, t);
    if (o.attention_bias) {
      c.add(p + ".self_attn.q_proj.bias", {8}, t);
      c.add(p + ".self_attn.k_proj.bias", {4}, t);
      c.add(p + ".self_attn.v_proj.bias", {4}, t);
      c.add(p + ".self_attn.o_proj.bias", {8}, t);
    }
    c.add(p + ".post_attention_layernorm.weight", {8}, t);
    c.add(p + ".mlp.gate_proj.weight", {6, 8}, t);
    c.add(p + ".mlp.up_proj.weight", {6, 8}, t);
    c.add(p + ".mlp.down_proj.weight", {8, 6}, t);
    if (o.mlp_bias) {
      c.add(p + ".mlp.gate_proj.bias", {6}, t);
      c.add(p + ".mlp.up_proj.bias", {6}, t);
      c.add(p + ".mlp.down_proj.bias", {8}, t);
    }
  }
  c.add("model.norm.weight", {8}, t);
  if (o.lm_head) c.add("lm_head.weight", {10, 8}, t);
  return c;
}

template <class Buffer>
std::vector<float> to_vec(const Buffer& b) {
  return std::vector<float>(b.data(), b.data() + b.size());
}

// A backend whose memory is not the host's as far as the loader knows (its own tag), so loading
// takes the stage-on-host-then-upload path a GPU backend takes.
struct staging_backend {
  struct tag {};
  template <class T>
  using buffer = muninn::host_buffer<T>;
  template <class T>
  buffer<T> alloc(std::size_t n) const {
    return buffer<T>(n);
  }
  template <class T>
  void upload(T* dst, const T* src, std::size_t n) const {
    ++*uploads;
    std::copy(src, src + n, dst);
  }
  int* uploads;
};

class llama_ckpt : public llama_test {
 protected:
  // Writes config.json (base config with the options' flags) and model.safetensors.
  llama_config write(const tiny_ckpt& t, const tiny_options& o, bool tied = false) {
    write_text(dir_ / "config.json", base_config()
                                         .set("tie_word_embeddings", tied ? "true" : "false")
                                         .set("attention_bias", o.attention_bias ? "true" : "false")
                                         .set("mlp_bias", o.mlp_bias ? "true" : "false")
                                         .str());
    muninn::io::write_safetensors(path("model.safetensors"), t.tensors);
    return llama::read_config(dir_.string());
  }
  // Writes the tensors as two shards and an index instead of model.safetensors.
  void write_sharded(const tiny_ckpt& t) {
    fs::remove(dir_ / "model.safetensors");
    const std::size_t half = t.tensors.size() / 2;
    const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
    using list = std::vector<std::pair<std::string, tensor_to_write>>;
    const auto mid = t.tensors.begin() + std::ptrdiff_t(half);
    muninn::io::write_safetensors(path(s1), list(t.tensors.begin(), mid));
    muninn::io::write_safetensors(path(s2), list(mid, t.tensors.end()));
    std::string idx = R"({"metadata": {"total_size": 0}, "weight_map": {)";
    for (std::size_t i = 0; i < t.tensors.size(); ++i) {
      idx += i ? ", " : "";
      muninn::io::append_json_string(idx, t.tensors[i].first);
      idx += ": \"" + (i < half ? s1 : s2) + "\"";
    }
    write_text(dir_ / "model.safetensors.index.json", idx + "}}");
  }
  muninn::model_weights<muninn::host_backend, float> load(const llama_config& cfg) {
    const checkpoint ck = llama::open_checkpoint(dir_.string(), cfg);
    return llama::load_weights<muninn::host_backend, float, muninn::block::pre_norm>(muninn::host_backend{}, ck, cfg);
  }
  std::string open_error(const llama_config& cfg) {
    return error_of([&] { llama::open_checkpoint(dir_.string(), cfg); });
  }
};

std::int64_t total_numel(const tiny_ckpt& t) {
  std::int64_t n = 0;
  for (const auto& [name, v] : t.values) n += std::int64_t(v.size());
  return n;
}

// Every buffer against the stored tensors it comes from.
void expect_loaded(const muninn::model_weights<muninn::host_backend, float>& w, const tiny_ckpt& t,
                   const llama_config& cfg) {
  EXPECT_EQ(to_vec(w.wte), t.values.at("model.embed_tokens.weight"));
  EXPECT_EQ(to_vec(w.ln_f), t.values.at("model.norm.weight"));
  if (cfg.tie_embeddings) {
    EXPECT_EQ(w.lm_head.size(), 0u);
  } else {
    EXPECT_EQ(to_vec(w.lm_head), t.values.at("lm_head.weight"));
  }
  EXPECT_TRUE(w.core.empty());
  EXPECT_TRUE(w.coda.empty());
  ASSERT_EQ(w.prelude.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const std::string a = "model.layers." + std::to_string(i) + ".self_attn.";
    const std::string m = "model.layers." + std::to_string(i) + ".mlp.";
    const auto& l = w.prelude[std::size_t(i)];
    EXPECT_EQ(to_vec(l.norm[0]), t.values.at("model.layers." + std::to_string(i) + ".input_layernorm.weight"));
    EXPECT_EQ(to_vec(l.norm[1]), t.values.at("model.layers." + std::to_string(i) + ".post_attention_layernorm.weight"));
    EXPECT_EQ(l.norm[2].size(), 0u);
    EXPECT_EQ(to_vec(l.wqkv), t.cat({a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}));
    EXPECT_EQ(to_vec(l.attn_proj), t.values.at(a + "o_proj.weight"));
    EXPECT_EQ(to_vec(l.fc), t.cat({m + "gate_proj.weight", m + "up_proj.weight"}));
    EXPECT_EQ(to_vec(l.mlp_proj), t.values.at(m + "down_proj.weight"));
    if (cfg.attention_bias) {
      EXPECT_EQ(to_vec(l.qk_bias), t.cat({a + "q_proj.bias", a + "k_proj.bias"}));
      EXPECT_EQ(to_vec(l.v_bias), t.values.at(a + "v_proj.bias"));
      EXPECT_EQ(to_vec(l.o_bias), t.values.at(a + "o_proj.bias"));
    } else {
      EXPECT_EQ(l.qk_bias.size() + l.v_bias.size() + l.o_bias.size(), 0u);
    }
    if (cfg.mlp_bias) {
      EXPECT_EQ(to_vec(l.fc_bias), t.cat({m + "gate_proj.bias", m + "up_proj.bias"}));
      EXPECT_EQ(to_vec(l.mlp_proj_bias), t.values.at(m + "down_proj.bias"));
    } else {
      EXPECT_EQ(l.fc_bias.size() + l.mlp_proj_bias.size(), 0u);
    }
  }
  EXPECT_EQ(to_vec(w.rope), muninn::make_llama_rope_table(cfg));
  EXPECT_EQ(w.rope.size(), std::size_t(16 * 4));  // block_size × D/2 × {cos, sin}
}

TEST_F(llama_ckpt, untied_checkpoint_validates_and_loads) {
  const tiny_options o;
  const tiny_ckpt t = tiny_tensors(o);
  const llama_config cfg = write(t, o);
  const auto w = load(cfg);
  expect_loaded(w, t, cfg);
  EXPECT_EQ(w.parameter_count, total_numel(t));
  // A few numbers by position: row 0 of k_proj follows the 8 q rows, row 0 of up_proj the 6 gate rows.
  const auto& l = w.prelude[0];
  EXPECT_EQ(l.wqkv[8 * 8], t.values.at("model.layers.0.self_attn.k_proj.weight")[0]);
  EXPECT_EQ(l.wqkv[12 * 8 + 3], t.values.at("model.layers.0.self_attn.v_proj.weight")[3]);
  EXPECT_EQ(l.fc[6 * 8 + 1], t.values.at("model.layers.0.mlp.up_proj.weight")[1]);
  EXPECT_EQ(l.fc[5 * 8 + 7], t.values.at("model.layers.0.mlp.gate_proj.weight")[47]);
}

TEST_F(llama_ckpt, biases_load_into_their_buffers) {
  tiny_options o;
  o.attention_bias = o.mlp_bias = true;
  const tiny_ckpt t = tiny_tensors(o);
  const llama_config cfg = write(t, o);
  const auto w = load(cfg);
  expect_loaded(w, t, cfg);
  EXPECT_EQ(w.parameter_count, total_numel(t));
  const auto& l = w.prelude[1];
  ASSERT_EQ(l.qk_bias.size(), 12u);  // q [H·D = 8] then k [Hkv·D = 4]
  EXPECT_EQ(l.qk_bias[7], t.values.at("model.layers.1.self_attn.q_proj.bias")[7]);
  EXPECT_EQ(l.qk_bias[8], t.values.at("model.layers.1.self_attn.k_proj.bias")[0]);
  EXPECT_EQ(l.v_bias.size(), 4u);
  EXPECT_EQ(l.o_bias.size(), 8u);
  ASSERT_EQ(l.fc_bias.size(), 12u);  // gate [I = 6] then up [6]
  EXPECT_EQ(l.fc_bias[5], t.values.at("model.layers.1.mlp.gate_proj.bias")[5]);
  EXPECT_EQ(l.fc_bias[6], t.values.at("model.layers.1.mlp.up_proj.bias")[0]);
  EXPECT_EQ(l.mlp_proj_bias.size(), 8u);
}

TEST_F(llama_ckpt, biases_the_config_does_not_announce_are_extra_and_announced_ones_required) {
  tiny_options with;
  with.attention_bias = true;
  write(tiny_tensors(with), with);
  const llama_config no_bias = read(base_config());
  EXPECT_THAT(open_error(no_bias),
              AllOf(HasSubstr(dir_.string() + ": 8 unexpected tensor(s) not in the Llama layout"),
                    HasSubstr("'model.layers.0.self_attn.q_proj.bias' (in " + path("model.safetensors") + ")")));
  const tiny_options none;
  write(tiny_tensors(none), none);
  const llama_config mlp_bias = read(base_config().set("mlp_bias", "true"));
  EXPECT_THAT(open_error(mlp_bias),
              AllOf(HasSubstr(dir_.string() + ": missing tensor 'model.layers.0.mlp.gate_proj.bias' (expected shape [6])"),
                    HasSubstr("hidden_size=8, intermediate_size=6, mlp_bias=true")));
}

TEST_F(llama_ckpt, tied_head_with_and_without_lm_head) {
  tiny_options o;
  o.lm_head = false;
  const tiny_ckpt without = tiny_tensors(o);
  llama_config cfg = write(without, o, /*tied=*/true);
  ASSERT_TRUE(cfg.tie_embeddings);
  const auto w1 = load(cfg);
  expect_loaded(w1, without, cfg);
  EXPECT_EQ(w1.parameter_count, total_numel(without));

  // A stored copy of the head is accepted and not read: same weights, same parameter count.
  const tiny_ckpt with = tiny_tensors(tiny_options{});
  cfg = write(with, tiny_options{}, /*tied=*/true);
  const auto w2 = load(cfg);
  expect_loaded(w2, with, cfg);
  EXPECT_EQ(w2.parameter_count, total_numel(without));
  EXPECT_EQ(w2.parameter_count, total_numel(with) - 80);
}

TEST_F(llama_ckpt, untied_head_is_required) {
  tiny_options o;
  o.lm_head = false;
  const llama_config cfg = write(tiny_tensors(o), o, /*tied=*/false);
  EXPECT_THAT(open_error(cfg), AllOf(HasSubstr(dir_.string() + ": missing tensor 'lm_head.weight' (expected shape [10, 8])"),
                                     HasSubstr(path("config.json") + " (vocab_size=10, hidden_size=8, "
                                                                     "tie_word_embeddings=false) implies it")));
}

TEST_F(llama_ckpt, stored_inv_freq_buffers_are_accepted_and_ignored) {
  const tiny_options o;
  tiny_ckpt t = tiny_tensors(o);
  t.add("model.rotary_emb.inv_freq", {2}, dtype::f32);
  t.add("model.layers.0.self_attn.rotary_emb.inv_freq", {2}, dtype::f32);
  t.add("model.layers.1.self_attn.rotary_emb.inv_freq", {2}, dtype::f32);
  const llama_config cfg = write(t, o);
  const auto w = load(cfg);
  expect_loaded(w, t, cfg);
  EXPECT_EQ(w.parameter_count, total_numel(t) - 6);  // buffers, not parameters
}

TEST_F(llama_ckpt, missing_tensor_names_checkpoint_tensor_and_config) {
  const tiny_options o;
  tiny_ckpt t = tiny_tensors(o);
  t.erase("model.layers.1.mlp.up_proj.weight");
  const llama_config cfg = write(t, o);
  EXPECT_THAT(open_error(cfg),
              AllOf(HasSubstr(dir_.string() + ": missing tensor 'model.layers.1.mlp.up_proj.weight' (expected shape [6, 8])"),
                    HasSubstr(path("config.json") + " (hidden_size=8, intermediate_size=6) implies it")));
}

TEST_F(llama_ckpt, wrong_shape_names_shard_tensor_and_config) {
  const tiny_options o;
  tiny_ckpt t = tiny_tensors(o);
  t.reshape("model.layers.1.self_attn.k_proj.weight", {8, 8});  // as if num_key_value_heads were 2
  t.reshape("model.layers.0.self_attn.o_proj.weight", {8, 4});
  write(t, o);
  write_sharded(t);
  const llama_config cfg = llama::read_config(dir_.string());
  const std::string e = open_error(cfg);
  EXPECT_THAT(e, AllOf(HasSubstr(path("model-00002-of-00002.safetensors") +
                                 ": tensor 'model.layers.1.self_attn.k_proj.weight' has shape [8, 8] but " +
                                 path("config.json") + " (num_key_value_heads=1, head_dim=4, hidden_size=8) implies [4, 8]"),
                       HasSubstr(path("model-00001-of-00002.safetensors") +
                                 ": tensor 'model.layers.0.self_attn.o_proj.weight' has shape [8, 4] but " +
                                 path("config.json") + " (hidden_size=8, num_attention_heads=2, head_dim=4) implies [8, 8]")));
}

TEST_F(llama_ckpt, unexpected_tensor_names_its_file) {
  const tiny_options o;
  tiny_ckpt t = tiny_tensors(o);
  t.add("model.layers.2.input_layernorm.weight", {8}, dtype::f32);
  const llama_config cfg = write(t, o);
  EXPECT_THAT(open_error(cfg), HasSubstr(dir_.string() + ": 1 unexpected tensor(s) not in the Llama layout: "
                                                         "'model.layers.2.input_layernorm.weight' (in " +
                                         path("model.safetensors") + ")"));
  // load_weights validates too, so a checkpoint opened without validation cannot load half a model.
  EXPECT_THAT(error_of([&] {
                llama::load_weights<muninn::host_backend, float, muninn::block::pre_norm>(
                    muninn::host_backend{}, checkpoint::open(dir_.string()), cfg);
              }),
              HasSubstr("'model.layers.2.input_layernorm.weight'"));
}

TEST_F(llama_ckpt, sharded_index_loads) {
  tiny_options o;
  o.attention_bias = true;
  const tiny_ckpt t = tiny_tensors(o);
  const llama_config cfg = write(t, o);
  write_sharded(t);
  ASSERT_FALSE(fs::exists(dir_ / "model.safetensors"));
  const checkpoint ck = llama::open_checkpoint(dir_.string(), cfg);
  EXPECT_EQ(ck.files().size(), 2u);
  const auto w = load(cfg);
  expect_loaded(w, t, cfg);
  EXPECT_EQ(w.parameter_count, total_numel(t));
}

TEST_F(llama_ckpt, bf16_weights_convert_on_load) {
  tiny_options o;
  o.type = dtype::bf16;
  o.mlp_bias = true;
  const tiny_ckpt t = tiny_tensors(o);
  const llama_config cfg = write(t, o);
  EXPECT_EQ(llama::open_checkpoint(dir_.string(), cfg).get("lm_head.weight").type, dtype::bf16);
  // The head's last value (t + 79/64 for its index t) is not a bf16 value: the loaded head holds the rounded one.
  EXPECT_NE(t.values.at("lm_head.weight")[79], t.tensors.back().second.values[79]);
  expect_loaded(load(cfg), t, cfg);
}

TEST_F(llama_ckpt, device_backends_stage_on_the_host) {
  tiny_options o;
  o.attention_bias = o.mlp_bias = true;
  const tiny_ckpt t = tiny_tensors(o);
  const llama_config cfg = write(t, o);
  int uploads = 0;
  const staging_backend be{&uploads};
  const checkpoint ck = llama::open_checkpoint(dir_.string(), cfg);
  const auto w = llama::load_weights<staging_backend, float, muninn::block::pre_norm>(be, ck, cfg);
  const auto& l = w.prelude[1];
  const std::string a = "model.layers.1.self_attn.", m = "model.layers.1.mlp.";
  EXPECT_EQ(to_vec(l.wqkv), t.cat({a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}));
  EXPECT_EQ(to_vec(l.qk_bias), t.cat({a + "q_proj.bias", a + "k_proj.bias"}));
  EXPECT_EQ(to_vec(l.fc), t.cat({m + "gate_proj.weight", m + "up_proj.weight"}));
  EXPECT_EQ(to_vec(l.fc_bias), t.cat({m + "gate_proj.bias", m + "up_proj.bias"}));
  EXPECT_EQ(to_vec(w.lm_head), t.values.at("lm_head.weight"));
  // One upload per buffer: wte, lm_head, ln_f; 11 per layer (2 norms, wqkv, o, 3 attention biases,
  // fc, down, 2 MLP biases); the RoPE table.
  EXPECT_EQ(uploads, 3 + 2 * 11 + 1);
  EXPECT_EQ(w.parameter_count, total_numel(t));
}

// ---------------------------------------------------------------------------------------- RoPE

// transformers' inverse frequencies (LlamaRotaryEmbedding / _compute_*_parameters), in double.
std::vector<double> reference_inv_freq(const llama_config& c) {
  const double pi = 3.14159265358979323846;
  std::vector<double> inv;
  for (std::int64_t i = 0; i < c.head_dim / 2; ++i) {
    double f = 1.0 / std::pow(double(c.rope_base), double(2 * i) / double(c.head_dim));
    if (c.rope_type == "linear") f /= c.rope_factor;
    if (c.rope_type == "llama3") {
      const double old = double(c.rope_original_max_position), lo = c.rope_low_freq_factor,
                   hi = c.rope_high_freq_factor, wavelen = 2 * pi / f;
      if (wavelen > old / lo) {
        f /= c.rope_factor;
      } else if (!(wavelen < old / hi)) {
        const double smooth = (old / wavelen - lo) / (hi - lo);
        f = (1 - smooth) * f / c.rope_factor + smooth * f;
      }
    }
    inv.push_back(f);
  }
  return inv;
}

llama_config rope_config(const std::string& type, std::int64_t head_dim, float base) {
  llama_config c;
  c.head_dim = head_dim;
  c.rope_base = base;
  c.block_size = 64;
  c.rope_type = type;
  if (type == "linear") c.rope_factor = 2.5f;
  if (type == "llama3") {  // Llama 3.1's values
    c.rope_factor = 8.0f;
    c.rope_low_freq_factor = 1.0f;
    c.rope_high_freq_factor = 4.0f;
    c.rope_original_max_position = 8192;
  }
  return c;
}

// The table against cos/sin of double angles. The angle itself is an fp32 product in transformers
// (float(p) · inv_freq), so beyond angle 1 the bound grows with it: 1e-6 per radian.
std::vector<float> inv_freq(const llama_config& c) {
  return muninn::rope_inv_freq(c.head_dim, c.rope_base, muninn::llama_rope_scaling(c));
}

void expect_rope_matches_reference(const llama_config& c) {
  const std::vector<float> inv = inv_freq(c);
  const std::vector<double> ref = reference_inv_freq(c);
  ASSERT_EQ(inv.size(), ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(inv[i], ref[i], 1e-6 * ref[i]) << "frequency " << i;
  const std::vector<float> table = muninn::make_llama_rope_table(c);
  const std::size_t half = ref.size();
  ASSERT_EQ(table.size(), std::size_t(c.block_size) * half * 2);
  for (std::size_t p = 0; p < std::size_t(c.block_size); ++p)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = double(p) * ref[i], tol = 1e-6 * std::max(1.0, angle);
      EXPECT_NEAR(table[(p * half + i) * 2], std::cos(angle), tol) << "p=" << p << " i=" << i;
      EXPECT_NEAR(table[(p * half + i) * 2 + 1], std::sin(angle), tol) << "p=" << p << " i=" << i;
    }
}

TEST(llama_rope, default_matches_transformers_formula) {
  expect_rope_matches_reference(rope_config("default", 128, 500000.0f));
  expect_rope_matches_reference(rope_config("default", 16, 10000.0f));
  // Default RoPE is the table Huginn's make_rope_table builds.
  const llama_config c = rope_config("default", 16, 10000.0f);
  EXPECT_EQ(muninn::make_llama_rope_table(c), muninn::make_rope_table(16, 64, 10000.0f));
}

TEST(llama_rope, linear_divides_by_factor) {
  const llama_config c = rope_config("linear", 64, 10000.0f);
  expect_rope_matches_reference(c);
  const std::vector<float> scaled = inv_freq(c), plain = inv_freq(rope_config("default", 64, 10000.0f));
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(scaled[i], plain[i] / 2.5f);
}

TEST(llama_rope, llama3_scales_by_wavelength) {
  const llama_config c = rope_config("llama3", 128, 500000.0f);
  expect_rope_matches_reference(c);
  // The Llama 3.1 setting exercises all three bands: kept, blended, divided by factor.
  const std::vector<float> scaled = inv_freq(c), plain = inv_freq(rope_config("default", 128, 500000.0f));
  int kept = 0, blended = 0, divided = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (scaled[i] == plain[i]) ++kept;
    else if (scaled[i] == plain[i] / 8.0f) ++divided;
    else ++blended;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(blended, 0);
  EXPECT_GT(divided, 0);
  EXPECT_EQ(kept + blended + divided, 64);
  // Another head size and base, with non-power-of-two factors.
  llama_config d = rope_config("llama3", 80, 1e6f);
  d.rope_factor = 5.5f;
  d.rope_low_freq_factor = 1.5f;
  d.rope_high_freq_factor = 3.25f;
  d.rope_original_max_position = 1000;
  expect_rope_matches_reference(d);
}

TEST(llama_rope, config_maps_to_rope_scaling) {
  using kind = muninn::rope_scaling::kind;
  EXPECT_EQ(muninn::llama_rope_scaling(rope_config("default", 8, 1.0f)).type, kind::none);
  const muninn::rope_scaling lin = muninn::llama_rope_scaling(rope_config("linear", 8, 1.0f));
  EXPECT_EQ(lin.type, kind::linear);
  EXPECT_EQ(lin.factor, 2.5f);
  const muninn::rope_scaling l3 = muninn::llama_rope_scaling(rope_config("llama3", 8, 1.0f));
  EXPECT_EQ(l3.type, kind::llama3);
  EXPECT_EQ(l3.factor, 8.0f);
  EXPECT_EQ(l3.low_freq_factor, 1.0f);
  EXPECT_EQ(l3.high_freq_factor, 4.0f);
  EXPECT_EQ(l3.original_max_position_embeddings, 8192);
  llama_config bad = rope_config("yarn", 8, 1.0f);
  bad.source = "x/config.json";
  EXPECT_THAT(error_of([&] { muninn::llama_rope_scaling(bad); }), HasSubstr("x/config.json: rope type \"yarn\""));
}

TEST(llama_rope, read_from_config_json) {
  // The whole path: config.json -> llama_config -> table, for a 4.x llama3 config.
  const fs::path dir = fs::temp_directory_path() / ("muninn_test_llama_rope_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_text(dir / "config.json", v4_llama3().set("head_dim", "128").set("max_position_embeddings", "64").str());
  const llama_config c = llama::read_config(dir.string());
  fs::remove_all(dir);
  llama_config ref = rope_config("llama3", 128, 500000.0f);
  EXPECT_EQ(muninn::make_llama_rope_table(c), muninn::make_llama_rope_table(ref));
}

// ------------------------------------------------------------------------- golden fixture folders

// What tests/data/llama/<name>/expected.json (written with transformers) says about the model
// itself: the stored parameter count and the scaled inverse frequencies.
void expect_matches_expected_json(const std::string& dir, const llama_config& cfg, std::int64_t parameter_count) {
  if (!fs::exists(dir + "/expected.json")) return;
  const muninn::io::json e = muninn::io::read_json_file(dir + "/expected.json");
  if (const auto* n = e.find("n_params")) {
    EXPECT_EQ(parameter_count, n->as_int());
  }
  if (const auto* f = e.find("rope_inv_freq")) {
    const std::vector<float> inv = inv_freq(cfg);
    ASSERT_EQ(inv.size(), f->size());
    for (std::size_t i = 0; i < inv.size(); ++i)
      EXPECT_NEAR(inv[i], (*f)[i].as_double(), 2.5e-7 * std::fabs((*f)[i].as_double())) << "frequency " << i;
  }
}

// Every folder of tests/data/llama/ (written with transformers): its config parses, its checkpoint
// opens and loads, and the parameter count and RoPE frequencies are transformers'.
TEST(llama_fixtures, every_folder_parses_opens_and_loads) {
  const fs::path root = fs::path(MUNINN_TEST_DATA) / "llama";
  ASSERT_TRUE(fs::is_directory(root)) << root << ": the committed Llama fixtures are missing";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "config.json")) continue;
    SCOPED_TRACE(entry.path().string());
    const std::string dir = entry.path().string();
    const llama_config cfg = llama::read_config(dir);
    EXPECT_TRUE(llama::recognizes(muninn::io::read_json_file(dir + "/config.json")));
    const checkpoint ck = llama::open_checkpoint(dir, cfg);
    const auto w = llama::load_weights<muninn::host_backend, float, muninn::block::pre_norm>(muninn::host_backend{}, ck, cfg);
    EXPECT_EQ(std::int64_t(w.prelude.size()), cfg.n_layers_in_prelude);
    EXPECT_EQ(w.wte.size(), std::size_t(cfg.vocab_size * cfg.n_embd));
    EXPECT_EQ(w.rope.size(), std::size_t(cfg.block_size * cfg.head_dim));
    expect_matches_expected_json(dir, cfg, w.parameter_count);
    ++checked;
  }
  EXPECT_GE(checked, 6) << "the committed fixture folders with a config.json under " << root << " are missing";
}

// The same checkpoint with a 5.x and a 4.x config.json reads to the same llama_config.
TEST(llama_fixtures, v4_and_v5_configs_of_one_checkpoint_agree) {
  const fs::path root = fs::path(MUNINN_TEST_DATA) / "llama";
  ASSERT_TRUE(fs::exists(root / "tiny_bf16_sharded_v4" / "config.json") && fs::exists(root / "tiny_bf16_sharded" / "config.json"))
      << "the committed fixtures tiny_bf16_sharded{,_v4} are missing from " << root;
  const llama_config v5 = llama::read_config((root / "tiny_bf16_sharded").string());
  const llama_config v4 = llama::read_config((root / "tiny_bf16_sharded_v4").string());
  expect_same_config(v4, v5);
  EXPECT_EQ(v4.rope_type, "llama3");
}

}  // namespace

}  // namespace test_llama_io
