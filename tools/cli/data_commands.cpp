// `muninn score`, `muninn eval --metric brierlm` and `muninn ae`: commands over data files.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <iomanip>
#include <iostream>

#include "cli_common.hpp"
#include "muninn/frontend/tap_dump.hpp"
#include "muninn/frontend/text.hpp"
#include "muninn/io/json.hpp"
#include "progress.hpp"

namespace muninn::cli {
namespace fe = muninn::frontend;

void require_file(const std::string& path, const std::string& flag, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) fail_as(error_kind::usage, flag, ": '", path, "' does not exist");
  if (std::filesystem::is_directory(st))
    fail_as(error_kind::usage, flag, ": '", path, "' is a directory; give ", what);
}

std::vector<std::vector<std::int32_t>> data_sequences(const std::string& file, const fe::loaded_model& m,
                                                      const std::string& dir, bool add_special, bool json_lines) {
  require_file(file, "--data", "a file with one sequence per line");
  std::string text;
  try {
    text = io::read_text_file(file);  // refuses a FIFO or a device before it can block
  } catch (const error& e) {
    fail_as(error_kind::usage, "--data: ", e.what());
  }
  std::istringstream in(text);
  std::vector<std::string> lines;
  bool ids = true;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ids = ids && line.find_first_not_of("0123456789, \t\r") == std::string::npos;
    lines.push_back(line);
  }
  if (lines.empty()) fail_as(error_kind::usage, "--data: '", file, "' holds no sequence");
  std::vector<std::vector<std::int32_t>> seqs;
  if (ids) {
    for (auto line : lines) {
      std::replace_if(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; }, ',');
      std::string compact;
      for (char c : line)
        if (!(c == ',' && (compact.empty() || compact.back() == ','))) compact += c;
      if (!compact.empty() && compact.back() == ',') compact.pop_back();
      seqs.push_back(fe::parse_id_list(compact, "--data"));
    }
    return seqs;
  }
  if (json_lines && std::all_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l[l.find_first_not_of(" \t\r")] == '{';
      })) {
    for (auto& line : lines) {
      const std::string where = file + ":" + std::to_string(&line - lines.data() + 1);
      const io::json doc = io::parse_json(line, where);
      const io::json* text = doc.is_object() ? doc.find("text") : nullptr;
      if (!text || !text->is_string())
        fail_as(error_kind::usage, "--data: ", where, ": a JSON line needs a \"text\" string");
      line = text->as_string();
    }
  }
  if (!m.tokenizer())
    fail_as(error_kind::usage, "--data: '", file, "' is text, and ", dir,
            "/tokenizer.json does not exist to encode it (give token ids instead)");
  for (const auto& line : lines) seqs.push_back(fe::encode_text(m, line, add_special));
  return seqs;
}

int cmd_score(const parsed& p) {
  const auto m = open_model(p);
  const auto seqs = data_sequences(p.options.text("data"), *m, m->info().path, false, false);
  const progress_bar bar("score");
  const fe::score_result s = m->score(seqs, p.options, [&](std::int64_t d, std::int64_t t) { bar.update(d, t); });
  std::cout << "sequences=" << s.sequences << " tokens=" << s.tokens << " predicted=" << s.predicted << "\n";
  std::cout << "nll=" << std::fixed << std::setprecision(6) << s.nll << " ppl=" << std::exp(s.nll) << "\n";
  if (!s.routing.empty()) {
    std::cout << "depth histogram (" << s.routing << " routing):";
    for (std::size_t d = 1; d < s.depth_counts.size(); ++d)
      std::cout << " " << d << ":" << s.depth_counts[d] << " (" << std::setprecision(1)
                << 100.0 * double(s.depth_counts[d]) / double(s.tokens) << "%)";
    std::cout << "\n";
  }
  return 0;
}

namespace {

std::string brier_line(const fe::brier4& b) {
  std::string s;
  char buf[64];
  for (int n = 1; n <= 4; ++n) {
    std::snprintf(buf, sizeof buf, "%sbrier%d=%.9f", n > 1 ? " " : "", n, b[std::size_t(n - 1)]);
    s += buf;
  }
  return s;
}

std::string brierlm_line(const fe::brier4& b) {
  const double prod = b[0] * b[1] * b[2] * b[3];
  char buf[64];
  std::snprintf(buf, sizeof buf, "brierlm=%.6f", 100.0 * std::pow(std::max(prod, 0.0), 0.25));
  return buf;
}

}  // namespace

int cmd_eval(const parsed& p) {
  const auto m = open_model(p);
  std::vector<std::int32_t> stream;
  for (const auto& doc : data_sequences(p.options.text("data"), *m, m->info().path, true, true))
    stream.insert(stream.end(), doc.begin(), doc.end());
  const bool verbose = p.options.flag("verbose");
  const progress_bar bar("eval");
  bool header = false;
  const auto print_header = [&](std::int64_t blocks, std::int64_t block_size, std::uint64_t seed) {
    if (header) return;
    header = true;
    std::cout << "metric=brierlm blocks=" << blocks << " block_size=" << block_size << " tokens=" << stream.size()
              << " dropped=" << std::int64_t(stream.size()) - blocks * block_size << " seed=" << seed << "\n"
              << std::flush;
  };
  const std::int64_t block_size = p.options.integer("block-size");
  const std::uint64_t seed = std::uint64_t(p.options.integer("seed"));
  const fe::brier_report r = m->brierlm(stream, p.options, [&](std::int64_t b, std::int64_t nb, const fe::brier4& v) {
    print_header(nb, block_size, seed);
    if (verbose) std::cout << "block " << b << ": " << brier_line(v) << " " << brierlm_line(v) << "\n" << std::flush;
    bar.update(b + 1, nb);
  });
  print_header(r.blocks, r.block_size, r.seed);
  char buf[64];
  std::snprintf(buf, sizeof buf, "brierlm=%.6f", r.brierlm);
  std::cout << brier_line(r.brier) << "\n" << buf << "\n";
  return 0;
}

namespace {

// `ae --dump DIR`: each chunk's latent mean and log σ [n, l] and the decoder's logits for the
// means [n·K, V], rows being chunks (mean, log_sigma) or tokens (logits).
void dump_ae(const parsed& p, const fe::calm_extras& ae, const std::vector<std::int32_t>& ids) {
  const std::vector<std::string> all = {"ae.mean", "ae.log_sigma", "ae.logits"};
  fe::tap_dump dump(p.options, all);
  const std::vector<std::string> names = fe::tap_selection(p.options, all);
  const auto wanted = [&](const std::string& n) {
    if (names.empty()) return true;
    for (const auto& w : names)
      if (n == w || n.rfind(w + ".", 0) == 0) return true;
    return false;
  };
  const std::int64_t l = ae.latent_size(), n = std::int64_t(ids.size()) / ae.patch_size();
  const std::vector<float> enc = ae.encode(ids);  // [n, 2l]: mean, then log σ
  std::vector<float> mean(std::size_t(n * l)), log_sigma(std::size_t(n * l));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < l; ++c) {
      mean[std::size_t(i * l + c)] = enc[std::size_t(i * 2 * l + c)];
      log_sigma[std::size_t(i * l + c)] = enc[std::size_t(i * 2 * l + l + c)];
    }
  if (wanted("ae.mean")) dump.write("ae.mean", -1, {n, l}, mean.data());
  if (wanted("ae.log_sigma")) dump.write("ae.log_sigma", -1, {n, l}, log_sigma.data());
  if (wanted("ae.logits")) {
    const std::vector<float> logits = ae.decode_logits(mean);
    const std::int64_t rows = n * ae.patch_size();
    dump.write("ae.logits", -1, {rows, std::int64_t(logits.size()) / rows}, logits.data());
  }
  std::cerr << "muninn: " << dump.finish() << "\n";
}

}  // namespace

int cmd_ae(const parsed& p) {
  const auto m = open_model(p);
  const fe::calm_extras* ae = m->calm();
  if (!ae) fail_as(error_kind::usage, "muninn ae runs CALM models and autoencoders; this is ", m->info().display);
  const std::vector<std::int32_t> ids = input_ids(p, *m);
  const std::vector<std::int32_t> back = ae->reconstruct(ae->padded(ids));
  if (fe::wants_dump(p.options)) dump_ae(p, *ae, ae->padded(ids));
  std::size_t right = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) right += back[i] == ids[i];
  const std::vector<std::int32_t> shown(back.begin(), back.begin() + std::ptrdiff_t(ids.size()));
  if (p.has("--prompt") && m->tokenizer()) std::cout << fe::decode(*m, shown) << "\n";
  std::cout << join_ids(shown) << "\n"
            << "accuracy=" << double(right) / double(ids.size()) << " (" << right << "/" << ids.size() << " tokens)\n";
  return 0;
}

}  // namespace muninn::cli
