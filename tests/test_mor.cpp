// Mixture-of-Recursions on the host: the layer → weight-set maps of the sharing strategies (the
// reference's examples and its rule for depths that do not divide), checkpoints with untied
// recursion copies against our PyTorch reference (tools/reference/mor_ref.py, fixtures in
// tests/data/mor_untied), the settings files and their errors, depth-wise batching and the
// trained demo model. The tied reference cases of tests/data/mor (scoring-mode logits and
// selections, causal-rule logits and depths, greedy decoding with the recursion-wise cache) are
// model cases, tests/model_cases.hpp, run on the host and on CUDA.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "muninn/families/mor/arch.hpp"
#include "muninn/families/mor/sharing_map.hpp"
#include "muninn/families/mor/yaml.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/depthwise_batching.hpp"
#include "test_io_util.hpp"
#include "test_mor_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_mor {

using namespace muninn;
using v = std::vector<std::int64_t>;

TEST(SharingMap, CycleRepeatsTheBlock) {
  const auto m = make_sharing_map(sharing_strategy::cycle, 9, 3);
  EXPECT_EQ(m.block, 3);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(m.owner, (v{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(m.layer_of(2, 1), 7);
}

TEST(SharingMap, SequenceRepeatsEachLayer) {
  const auto m = make_sharing_map(sharing_strategy::sequence, 6, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.owner, (v{0, 0, 0, 3, 3, 3}));
  EXPECT_THROW(m.layer_of(0, 0), muninn::error);
}

TEST(SharingMap, MiddleCycleKeepsFirstAndLastApart) {
  // 360M MoR-3: 0 | 1..10 | 1..10 | 1..10 | 31; MoR-4 over 34 layers: 0 | 1..8 x4 | 33.
  auto m = make_sharing_map(sharing_strategy::middle_cycle, 32, 3);
  EXPECT_EQ(m.block, 10);
  ASSERT_EQ(m.size(), 32);
  EXPECT_EQ(m.owner.front(), 0);
  EXPECT_EQ(m.owner.back(), 31);
  for (std::int64_t p = 1; p < 31; ++p) EXPECT_EQ(m.owner[std::size_t(p)], 1 + (p - 1) % 10) << p;
  EXPECT_EQ(m.layer_of(1, 0), 11);
  m = make_sharing_map(sharing_strategy::middle_cycle, 34, 4);
  EXPECT_EQ(m.block, 8);
  EXPECT_EQ(m.owner[33], 33);
  EXPECT_EQ(m.owner[32], 8);
}

TEST(SharingMap, MiddleSequence) {
  const auto m = make_sharing_map(sharing_strategy::middle_sequence, 8, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.owner, (v{0, 1, 1, 1, 4, 4, 4, 7}));
}

TEST(SharingMap, NonDivisibleDepthDropsLayersAsTheReference) {
  // middle: linspace(1, 7, 6) = 1, 2.2, 3.4, 4.6, 5.8, 7 -> 1, 2, 3, 5, 6, 7
  auto m = make_sharing_map(sharing_strategy::middle_cycle, 9, 3);
  EXPECT_EQ(m.block, 2);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 5, 6, 7, 8}));
  EXPECT_EQ(m.owner, (v{0, 1, 2, 1, 2, 1, 2, 7}));
  // cycle: linspace(0, 9, 9) = 0, 1.125, 2.25, 3.375, 4.5, 5.625, 6.75, 7.875, 9 -> 4.5 rounds to 4 (half to even)
  m = make_sharing_map(sharing_strategy::cycle, 10, 3);
  EXPECT_EQ(m.kept, (v{0, 1, 2, 3, 4, 6, 7, 8, 9}));
}

TEST(SharingMap, BadSettingsAreErrors) {
  EXPECT_THROW(make_sharing_map(sharing_strategy::cycle, 4, 0), muninn::error);
  EXPECT_THROW(make_sharing_map(sharing_strategy::middle_cycle, 3, 2), muninn::error);
  EXPECT_THROW(parse_sharing("spiral"), muninn::error);
  EXPECT_EQ(parse_sharing("middle-cycle"), sharing_strategy::middle_cycle);
}

namespace {

using muninn_test::ids_of;
using muninn_test::mor_dir;
using muninn_test::mor_fixture_tol;
const std::string& untied_dir = muninn_test::mor_untied_dir;

// The fixture's checks (test_mor_util.hpp) at the tolerance its expected.json states.
template <class M>
void check_passes(const M& m, const io::json& doc) {
  muninn_test::mor_check_passes(m, doc, mor_fixture_tol(doc));
}

template <class Arch>
void check_case(const std::string& name, const std::string& dir) {
  SCOPED_TRACE(name);
  const auto m = model<host_backend, float, Arch>::load(dir + name);
  const io::json doc = io::read_json_file(dir + name + "/expected.json");
  check_passes(m, doc);
  muninn_test::mor_check_greedy(m, doc, mor_fixture_tol(doc));
}

}  // namespace

// The six cases of tests/data/mor against the reference (logits, selections, depths, greedy
// decoding) are model cases (tests/model_cases.hpp), run on every backend by test_model and
// test_model_cuda.

// The checkpoints hold the block once per recursion and every recursion copy is one storage: one
// copy is loaded, every recursion runs it.
namespace {
template <class Arch>
void expect_one_copy(const std::string& name) {
  SCOPED_TRACE(name);
  const auto m = model<host_backend, float, Arch>::load(mor_dir + name);
  EXPECT_TRUE(m.weights().recursion_layers.empty());
  for (std::int64_t r = 1; r < m.config().mor.recursions; ++r)
    EXPECT_EQ(&m.layer_at(layer_group::core, r, 0), &m.weights().core[0]) << "recursion " << r;
}
}  // namespace

TEST(MorReference, TiedCopiesAreLoadedOnce) {
  expect_one_copy<mor_expert_arch>("expert_mcyc_r3_linear_sigmoid");
  expect_one_copy<mor_token_arch>("token_cycle_r3_sigmoid");
}

// ------------------------------------------- recursion copies that differ (tests/data/mor_untied)

// Checkpoints saved by our reference with untied recursion copies (the reference's expert
// transform gives every recursion its own attention; the sequence strategies give recursions
// different layers): each recursion runs its own stored copy, against the logits the reference
// computed from those same weights. Tying them moves some logit by expected.json's
// tied_logit_gap (0.8 to 3.7), far beyond the 1e-4 tolerance.
TEST(MorUntiedCopies, ExpertCycleAttentionPerRecursion) { check_case<mor_expert_arch>("expert_cycle_attn", untied_dir); }
TEST(MorUntiedCopies, ExpertSequence) { check_case<mor_expert_arch>("expert_sequence_attn", untied_dir); }
TEST(MorUntiedCopies, ExpertMiddleCycleAttentionPerRecursion) { check_case<mor_expert_arch>("expert_mcyc_attn", untied_dir); }
TEST(MorUntiedCopies, ExpertMiddleSequence) { check_case<mor_expert_arch>("expert_mseq_attn", untied_dir); }
TEST(MorUntiedCopies, ExpertKvSharingOwnQueries) { check_case<mor_expert_arch>("expert_mcyc_attn_kvshare", untied_dir); }
TEST(MorUntiedCopies, TokenCycleAttentionPerRecursion) { check_case<mor_token_arch>("token_cycle_attn", untied_dir); }
TEST(MorUntiedCopies, TokenSequence) { check_case<mor_token_arch>("token_sequence_tied", untied_dir); }
TEST(MorUntiedCopies, TokenMiddleCycleEqualCopiesStoredApart) {
  check_case<mor_token_arch>("token_mcyc_attn_r2_as_r1", untied_dir);
}
TEST(MorUntiedCopies, TokenMiddleSequenceMlpAndNorm) { check_case<mor_token_arch>("token_mseq_mlp_norm", untied_dir); }

// Memory: what differs is loaded per recursion, what is equal is one buffer. The sizes (vocab 32,
// hidden 16, intermediate 32, 2 heads of 8, 1 KV head): a layer holds norms 2·16, q 16·16, k and
// v 8·16 each, o 16·16, gate, up and down 32·16 each = 2336; its attention q;k;v and o 768.
TEST(MorUntiedCopies, DistinctCopiesAreLoadedEqualOnesShared) {
  using M = model<host_backend, float, mor_expert_arch>;
  {
    // middle_cycle, B 2, Nr 3, tied head, attention per recursion: embedding 512, norm 16,
    // first and last layer 2·2336, recursion 0's block 2·2336, recursions 1 and 2's attention
    // 2·2·768, three routers 3·16.
    const auto m = M::load(untied_dir + "expert_mcyc_attn");
    EXPECT_EQ(m.parameter_count(), 512 + 16 + 4 * 2336 + 4 * 768 + 48);
    const auto& w = m.weights();
    ASSERT_EQ(w.recursion_layers.size(), 4u);
    for (std::int64_t r = 1; r < 3; ++r)
      for (std::int64_t l = 0; l < 2; ++l) {
        const auto& own = m.layer_at(layer_group::core, r, l);
        const auto& base = w.core[std::size_t(l)];
        EXPECT_NE(own.wqkv.data(), base.wqkv.data());
        EXPECT_NE(own.attn_proj.data(), base.attn_proj.data());
        EXPECT_EQ(own.fc.data(), base.fc.data()) << "the tied MLP is one buffer";
        EXPECT_EQ(own.mlp_proj.data(), base.mlp_proj.data());
        EXPECT_EQ(own.norm[0].data(), base.norm[0].data());
        EXPECT_EQ(own.norm[1].data(), base.norm[1].data());
        EXPECT_FALSE(own.fc.owns());
      }
  }
  {
    // sequence, B 2: the blocks are w0 w0 | w0 w1 | w1 w1 and every recursion has its own
    // attention: two layers' norms and MLP (2·(2336 − 768)) and six attentions (6·768), untied head.
    const auto m = M::load(untied_dir + "expert_sequence_attn");
    EXPECT_EQ(m.parameter_count(), 2 * 512 + 16 + 2 * (2336 - 768) + 6 * 768 + 48);
    EXPECT_EQ(m.layer_at(layer_group::core, 0, 1).fc.data(), m.layer_at(layer_group::core, 0, 0).fc.data());
    EXPECT_EQ(m.layer_at(layer_group::core, 1, 1).fc.data(), m.layer_at(layer_group::core, 2, 0).fc.data());
    EXPECT_NE(m.layer_at(layer_group::core, 1, 0).fc.data(), m.layer_at(layer_group::core, 1, 1).fc.data());
  }
  {
    // recursion 2's attention equals recursion 1's but is stored apart: one copy for both, and
    // both recursions run one layer object.
    using T = model<host_backend, float, mor_token_arch>;
    const auto m = T::load(untied_dir + "token_mcyc_attn_r2_as_r1");
    EXPECT_EQ(m.parameter_count(), 512 + 16 + 4 * 2336 + 2 * 768 + 3 * 16);
    for (std::int64_t l = 0; l < 2; ++l) {
      EXPECT_EQ(&m.layer_at(layer_group::core, 2, l), &m.layer_at(layer_group::core, 1, l));
      EXPECT_NE(&m.layer_at(layer_group::core, 1, l), &m.weights().core[std::size_t(l)]);
    }
  }
}

// ---------------------------------------------------------------- settings: JSON block, YAML, errors

namespace {

const char* const kCases[] = {"expert_mcyc_r3_linear_sigmoid", "expert_cycle_r2_mlp_tanh", "expert_mcyc_L9_drop",
                              "expert_mcyc_r3_kvshare",        "token_mcyc_r3_softmax_lossfree", "token_cycle_r3_sigmoid"};

class MorFiles : public muninn_test::temp_dir_test {
 protected:
  MorFiles() : temp_dir_test("muninn_mor_") {}
  // A copy of a fixture's config.json with `edit` applied to its text, and its checkpoint.
  std::string variant(const std::string& name, const std::function<void(std::string&)>& edit) {
    std::ifstream in(mor_dir + name + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    edit(text);
    muninn_test::write_bytes(path("config.json"), text);
    std::filesystem::copy_file(mor_dir + name + "/pytorch_model.bin", path("pytorch_model.bin"),
                               std::filesystem::copy_options::overwrite_existing);
    return dir_.string();
  }
};

}  // namespace

TEST(MorConfig, HydraYamlEqualsTheJsonBlock) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const io::json cfg = io::read_json_file(mor_dir + name + "/config.json");
    const mor_settings a = io::mor_settings_from_json(cfg.at("mor"), "config.json");
    const mor_settings b = io::mor_settings_from_yaml(mor_dir + name + "/mor.yaml");
    EXPECT_EQ(a.recursions, b.recursions);
    EXPECT_EQ(a.sharing, b.sharing);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.router_type, b.router_type);
    EXPECT_EQ(a.router_func, b.router_func);
    EXPECT_EQ(a.alpha, b.alpha);
    EXPECT_EQ(a.temp, b.temp);
    EXPECT_EQ(a.router_bias, b.router_bias);
    EXPECT_EQ(a.kv_sharing, b.kv_sharing);
    if (a.type == "expert") {
      EXPECT_EQ(a.capacity, b.capacity);
    }
  }
}

TEST_F(MorFiles, ReferenceOutputWithoutMorBlockReadsTheYamlBeside) {
  // The reference's HF Trainer writes a plain LlamaConfig: the settings come from the run's YAML.
  const std::string name = "expert_mcyc_r3_linear_sigmoid";
  const std::string dir = variant(name, [](std::string& t) {
    const auto at = t.find("\"mor\"");
    ASSERT_NE(at, std::string::npos);
    t.replace(at, 5, "\"unused_mor\"");
  });
  EXPECT_NE(muninn_test::error_of([&] { io::read_mor_config(dir, ""); }).find("no 'mor' block"), std::string::npos);
  std::filesystem::copy_file(mor_dir + name + "/mor.yaml", path("mor.yaml"));
  const auto m = model<host_backend, float, mor_expert_arch>::load(dir);
  const io::json doc = io::read_json_file(mor_dir + name + "/expected.json");
  check_passes(m, doc);
}

namespace {

// A MoR checkpoint as the reference's trainer leaves it: `run/checkpoint-100/` with a plain
// LlamaConfig (no `mor` block), the run's YAML somewhere around it.
class MorRunFolders : public muninn_test::temp_dir_test {
 protected:
  MorRunFolders() : temp_dir_test("muninn_mor_run_") {}
  static constexpr const char* kName = "expert_mcyc_r3_linear_sigmoid";
  void SetUp() override {
    temp_dir_test::SetUp();
    ckpt_ = path("run/checkpoint-100");
    std::filesystem::create_directories(ckpt_);
    std::ifstream in(mor_dir + kName + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("\"mor\""), 5, "\"unused_mor\"");
    muninn_test::write_bytes(ckpt_ + "/config.json", text);
    std::filesystem::copy_file(mor_dir + kName + "/pytorch_model.bin", ckpt_ + "/pytorch_model.bin");
  }
  // Puts the fixture's run YAML at `rel` (below the temp folder) and returns its path.
  std::string yaml_at(const std::string& rel) {
    const std::filesystem::path p = path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::copy_file(mor_dir + kName + "/mor.yaml", p);
    return p.string();
  }
  std::string ckpt_;
};

}  // namespace

TEST_F(MorRunFolders, TheRunYamlOneLevelUpIsFoundAndRunsTheCheckpoint) {
  const std::string yaml = yaml_at("run/run.yaml");
  EXPECT_EQ(io::mor_yaml_beside(ckpt_), yaml);
  const auto m = model<host_backend, float, mor_expert_arch>::load(ckpt_);
  check_passes(m, io::read_json_file(mor_dir + kName + "/expected.json"));
}

TEST_F(MorRunFolders, EachNamedPlaceIsFoundInItsOrder) {
  // Later places first, so that each step shows the earlier place winning.
  const std::vector<std::string> order = {"run/run.yaml", "run/checkpoint-100.yml", "run/checkpoint-100.yaml",
                                          "run/.hydra/config.yaml", "run/checkpoint-100/.hydra/config.yaml",
                                          "run/checkpoint-100/mor.yaml"};
  for (const std::string& rel : order) {
    SCOPED_TRACE(rel);
    EXPECT_EQ(io::mor_yaml_beside(ckpt_), yaml_at(rel));
    EXPECT_EQ(io::mor_yaml_beside(ckpt_ + "/config.json"), path(rel));  // a config.json path stands for its folder
    EXPECT_EQ(io::mor_yaml_beside(ckpt_ + "/"), path(rel));
  }
}

TEST_F(MorRunFolders, OneUnnamedYamlWithAMorBlockIsTheRunsAndOthersAreIgnored) {
  muninn_test::write_bytes(path("run/data.yaml"), "dataset: fineweb\nmor: 3\n");  // no `mor` mapping
  muninn_test::write_bytes(path("run/broken.yaml"), "mor: {enable: [true\n");      // not YAML
  muninn_test::write_bytes(path("run/notes.txt"), "mor:\n  enable: true\n");       // not a YAML name
  const std::string yaml = yaml_at("run/250720_pretrain_mor.yaml");
  EXPECT_EQ(io::mor_yaml_beside(ckpt_), yaml);
  EXPECT_NO_THROW(io::read_mor_config(ckpt_, ""));
}

TEST_F(MorRunFolders, SeveralUnnamedCandidatesAreOneErrorListingThem) {
  const std::string a = yaml_at("run/a.yaml"), b = yaml_at("run/b.yml");
  const std::string msg = muninn_test::error_of([&] { io::read_mor_config(ckpt_, ""); });
  EXPECT_NE(msg.find(a + ", " + b), std::string::npos) << msg;
  EXPECT_NE(msg.find("--config FILE"), std::string::npos) << msg;
  // A named one settles it.
  yaml_at("run/run.yaml");
  EXPECT_EQ(io::mor_yaml_beside(ckpt_), path("run/run.yaml"));
}

TEST_F(MorRunFolders, NoYamlAnywhereListsEveryPlaceLooked) {
  const std::string msg = muninn_test::error_of([&] { io::read_mor_config(ckpt_, ""); });
  EXPECT_NE(msg.find("no 'mor' block"), std::string::npos) << msg;
  for (const char* rel : {"run/checkpoint-100/mor.yaml", "run/checkpoint-100/.hydra/config.yaml",
                                 "run/.hydra/config.yaml", "run/checkpoint-100.yaml", "run/run.yaml", "run/*.yaml"})
    EXPECT_NE(msg.find(path(rel)), std::string::npos) << rel << " not in: " << msg;
  EXPECT_NO_THROW(io::read_mor_config(ckpt_, yaml_at("elsewhere.yaml")));
}

TEST_F(MorFiles, ContradictionsAreOneClearError) {
  const std::string name = "expert_mcyc_r3_linear_sigmoid";
  const auto edited = [&](const std::string& from, const std::string& to) {
    return variant(name, [&](std::string& t) {
      const auto at = t.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      t.replace(at, from.size(), to);
    });
  };
  using muninn_test::error_of;
  EXPECT_NE(error_of([&] { io::read_mor_config(edited("0.3333333333333333", "0.9"), ""); }).find("'mor.capacity' increases"),
            std::string::npos);
  EXPECT_NE(error_of([&] { io::read_mor_config(edited("\"middle_cycle\"", "\"spiral\""), ""); })
                .find("field 'mor.sharing' is \"spiral\"; it must be cycle, sequence, middle_cycle or middle_sequence"),
            std::string::npos);
  EXPECT_NE(error_of([&] { io::read_mor_config(edited("\"num_recursion\": 3", "\"num_recursion\": 2"), ""); })
                .find("'mor.capacity' has 3 entries for 2 recursions"),
            std::string::npos);
  // Settings that do not match the tensors: a token-choice model names other tensors.
  const std::string msg = error_of([&] {
    const std::string dir = edited("\"type\": \"expert\"", "\"type\": \"token\"");
    model<host_backend, float, mor_token_arch>::load(dir);
  });
  EXPECT_NE(msg.find("Mixture-of-Recursions"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.1.block_list.0.0"), std::string::npos) << msg;
  const std::string yaml = path("bad.yaml");
  // A router of the wrong shape, in a safetensors copy of the checkpoint: [1, 32] stored as [2, 16].
  {
    const io::checkpoint ck = io::checkpoint::open(mor_dir + name);
    std::vector<std::pair<std::string, io::tensor_to_write>> out;
    for (const auto& t : ck.tensors()) {
      io::tensor_to_write w{t.shape, ck.read_f32(t.name)};
      if (t.name == "model.layers.2.mor_router.router.weight") w.shape = {2, 16};
      out.emplace_back(t.name, std::move(w));
    }
    const std::string dir = variant(name, [](std::string&) {});
    std::filesystem::remove(path("pytorch_model.bin"));
    io::write_safetensors(path("model.safetensors"), out);
    const std::string bad = error_of([&] { model<host_backend, float, mor_expert_arch>::load(dir); });
    EXPECT_NE(bad.find("model.layers.2.mor_router.router.weight"), std::string::npos) << bad;
    EXPECT_NE(bad.find("[1, 32]"), std::string::npos) << bad;
  }
  muninn_test::write_bytes(yaml, "recursive:\n  enable: true\n  num_recursion: 3\nmor:\n  enable: true\n"
                                 "  type: expert\n  capacity: '1.0,0.5,0.7'\n");
  EXPECT_NE(error_of([&] { io::mor_settings_from_yaml(yaml); }).find("bad.yaml: field 'mor.capacity' increases"),
            std::string::npos);
  muninn_test::write_bytes(yaml, "recursive:\n  enable: true\n  num_recursion: ${oc.env:NR}\nmor:\n  enable: true\n");
  EXPECT_NE(error_of([&] { io::mor_settings_from_yaml(yaml); }).find("interpolation"), std::string::npos);
  muninn_test::write_bytes(yaml, "recursive: [1, 2\n");
  EXPECT_NE(error_of([&] { io::mor_settings_from_yaml(yaml); }).find("not valid YAML"), std::string::npos);
}

// Every float setting is finite and inside its range, from YAML (which can spell .inf and .nan) and from JSON
// (whose finite extremes overflow a float): one error naming the file and the field.
TEST_F(MorFiles, FloatSettingsMustBeFiniteAndInRange) {
  const std::string base = mor_dir + std::string("expert_mcyc_r3_linear_sigmoid/mor.yaml");
  std::ifstream in(base);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string yaml = path("mor.yaml");
  const auto yaml_error = [&](const std::string& from, const std::string& to, const std::string& type = "") {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    if (!type.empty()) t.replace(t.find("type: expert"), 12, "type: " + type);
    muninn_test::write_bytes(yaml, t);
    return muninn_test::error_of([&] { io::mor_settings_from_yaml(yaml); });
  };
  const std::string temp = "  temp: 1.0", alpha = "    alpha: 0.1", token_alpha = "    alpha: 1.0";
  EXPECT_EQ(yaml_error(temp, "  temp: .inf"),
            yaml + ": field 'mor.temp' is inf; it must be a finite number in [1e-06, 1e+06]");
  EXPECT_EQ(yaml_error(temp, "  temp: .nan"),
            yaml + ": field 'mor.temp' is nan; it must be a finite number in [1e-06, 1e+06]");
  EXPECT_EQ(yaml_error(temp, "  temp: 0"), yaml + ": field 'mor.temp' is 0; it must be a finite number in [1e-06, 1e+06]");
  EXPECT_EQ(yaml_error(alpha, "    alpha: .inf"),
            yaml + ": field 'mor.expert.alpha' is inf; it must be a finite number in (0, 1e+06]");
  EXPECT_EQ(yaml_error(alpha, "    alpha: .NaN"),
            yaml + ": field 'mor.expert.alpha' is nan; it must be a finite number in (0, 1e+06]");
  EXPECT_EQ(yaml_error(token_alpha, "    alpha: -.inf", "token"),
            yaml + ": field 'mor.token.alpha' is -inf; it must be a finite number in (0, 1e+06]");
  EXPECT_EQ(yaml_error("capacity: '1.0,", "capacity: 'nan,"),
            yaml + ": field 'mor.capacity' entry 0 is nan; capacities are shares in (0, 1]");
  // JSON cannot spell infinity, but its finite extremes overflow the float the router computes in
  const auto json_error = [&](const std::string& from, const std::string& to) {
    const std::string dir = variant("expert_mcyc_r3_linear_sigmoid", [&](std::string& t) { t.replace(t.find(from), from.size(), to); });
    return muninn_test::error_of([&] { io::read_mor_config(dir, ""); });
  };
  EXPECT_EQ(json_error("\"alpha\": 0.1", "\"alpha\": 1e300"),
            path("config.json") + ": field 'mor.alpha' is 1e+300; it must be a finite number in (0, 1e+06]");
  EXPECT_EQ(json_error("\"temp\": 1.0", "\"temp\": 1e-300"),
            path("config.json") + ": field 'mor.temp' is 1e-300; it must be a finite number in [1e-06, 1e+06]");
}

// ------------------------------------------------------------------- continuous depth-wise batching

// Tokens of several sequences at different depths share each call of the shared block; each
// sequence still gets exactly what it gets alone (tokens and depths), with fewer block calls than
// tokens x depth.
TEST(DepthwiseBatching, EachRowAsAlone) {
  const auto m = model<host_backend, float, mor_expert_arch>::load(mor_dir + "expert_mcyc_r3_linear_sigmoid");
  const std::vector<std::vector<std::int32_t>> prompts = {{18, 43, 2, 11, 45}, {3, 54, 7, 19, 37}, {5}, {9, 9, 9, 1},
                                                          {60, 2, 33}};
  generate_options o;
  o.max_new_tokens = 9;
  for (const std::int64_t batch : {1, 2, 3, 8}) {
    SCOPED_TRACE("max_batch " + std::to_string(batch));
    depthwise_options d;
    d.max_batch = batch;
    d.flush_at = batch > 2 ? 2 : 1;
    depthwise_stats st;
    const auto got = generate_depthwise(m, prompts, o, d, &st);
    std::int64_t depth_sum = 0;
    for (std::size_t r = 0; r < prompts.size(); ++r) {
      const auto alone = generate(m, prompts[r], o);
      EXPECT_EQ(got[r].tokens, alone.tokens) << "row " << r;
      EXPECT_EQ(got[r].steps, alone.steps) << "row " << r;
      for (std::size_t i = 1; i < got[r].steps.size(); ++i) depth_sum += got[r].steps[i];
    }
    EXPECT_EQ(st.tokens, std::int64_t(prompts.size()) * (o.max_new_tokens - 1));
    EXPECT_EQ(st.block_rows, depth_sum) << "one block row per token per recursion it ran";
    if (batch > 1) {
      EXPECT_LT(st.block_calls, st.block_rows) << "rows at different depths shared calls";
    }
  }
}

// Depth-wise batching over recursions whose copies differ: rows at different recursions run
// different stored layers, grouped by copy within each step; every sequence still gets what it
// gets alone (which the reference-logit tests above pin to the saved weights).
TEST(DepthwiseBatching, UntiedCopiesEachRowAsAlone) {
  for (const char* name : {"expert_cycle_attn", "expert_sequence_attn", "expert_mcyc_attn", "expert_mseq_attn",
                           "expert_mcyc_attn_kvshare"}) {
    SCOPED_TRACE(name);
    const auto m = model<host_backend, float, mor_expert_arch>::load(untied_dir + name);
    const std::vector<std::vector<std::int32_t>> prompts = {{18, 13, 2, 11, 25}, {3, 24, 7, 19, 27}, {5}, {9, 9, 9, 1},
                                                            {30, 2, 31}};
    generate_options o;
    o.max_new_tokens = 9;
    for (const std::int64_t batch : {2, 8}) {
      depthwise_options d;
      d.max_batch = batch;
      d.flush_at = batch > 2 ? 2 : 1;
      depthwise_stats st;
      const auto got = generate_depthwise(m, prompts, o, d, &st);
      for (std::size_t r = 0; r < prompts.size(); ++r) {
        const auto alone = generate(m, prompts[r], o);
        EXPECT_EQ(got[r].tokens, alone.tokens) << "row " << r << ", max_batch " << batch;
        EXPECT_EQ(got[r].steps, alone.steps) << "row " << r << ", max_batch " << batch;
      }
      EXPECT_LT(st.block_calls, st.block_rows) << "rows at different depths shared steps";
    }
  }
}

// ------------------------------------------------------------------------- the trained demo model

// The shipped MoR trained by tools/reference/train_mor.py: on 200 held-out sequences Muninn makes
// the reference's predictions and routes every token to the same depth, in both modes; and the
// accuracy and depth histogram by class that Muninn measures are the ones the PyTorch reference
// measured (demo.json "results", written by mor_ref, the figures docs/mor_demo.md reports).
TEST(MorDemo, TrainedModelMatchesTheReferenceOnHeldOutData) {
  const std::string dir = std::string(MUNINN_TEST_DATA) + "/../../examples/models/mor_demo";
  const auto m = model<host_backend, float, mor_expert_arch>::load(dir);
  const io::json held = io::read_json_file(dir + "/heldout.json");
  const io::json demo = io::read_json_file(dir + "/demo.json");
  const std::int64_t V = m.config().vocab_size;
  const std::int64_t nr = m.config().mor.recursions;
  std::vector<std::string> names;  // class id -> name ("free" is class 0, never scored)
  for (std::size_t c = 0; held.at("classes").find(std::to_string(c)); ++c)
    names.push_back(held.at("classes").at(std::to_string(c)).as_string());
  ASSERT_GE(names.size(), 2u);
  for (const auto mode : {routing_mode::scoring, routing_mode::causal}) {
    const bool scoring = mode == routing_mode::scoring;
    std::vector<std::int64_t> right(names.size()), total(names.size());
    std::vector<std::vector<std::int64_t>> hist(names.size(), std::vector<std::int64_t>(nr + 1));
    std::int64_t seqs = 0;
    for (const auto& s : held.at("sequences").as_array()) {
      const auto ids = ids_of(s.at("ids"));
      const auto targets = ids_of(s.at("targets"));
      const auto cls = ids_of(s.at("cls"));
      run_options o;
      o.routing = mode;
      std::vector<std::int32_t> depth;
      o.depths = &depth;
      const auto lg = m.forward(ids, o);
      std::vector<std::int32_t> pred;
      for (std::size_t t = 0; t < ids.size(); ++t) pred.push_back(argmax_host(lg.data() + std::int64_t(t) * V, V));
      ASSERT_EQ(pred, ids_of(s.at(scoring ? "pred_scoring" : "pred_causal"))) << "sequence " << seqs;
      ASSERT_EQ(depth, ids_of(s.at(scoring ? "depth_scoring" : "depth_causal"))) << "sequence " << seqs;
      for (std::size_t t = 0; t < ids.size(); ++t) {
        ++hist[cls[t]][depth[t]];
        if (cls[t] == 0) continue;
        ++total[cls[t]];
        right[cls[t]] += pred[t] == targets[t];
      }
      ++seqs;
    }
    EXPECT_EQ(seqs, 200);
    const io::json& ref = demo.at("results").at(scoring ? "mor_scoring" : "mor_causal");
    for (std::size_t c = 0; c < names.size(); ++c) {
      for (std::int64_t d = 1; d <= nr; ++d) {
        EXPECT_EQ(hist[c][d], ref.at("depth_histogram").at(names[c]).at(std::to_string(d)).as_int())
            << names[c] << " depth " << d << (scoring ? " (scoring)" : " (causal)");
      }
      if (c == 0) continue;
      ASSERT_GT(total[c], 0) << names[c];
      // demo.json rounds to 4 decimals
      EXPECT_NEAR(double(right[c]) / double(total[c]), ref.at("accuracy").at(names[c]).as_double(), 5e-5)
          << names[c] << (scoring ? " (scoring)" : " (causal)");
    }
  }
}

}  // namespace test_mor
