// Model.forward: logits of one sequence (a numpy array that owns the engine's buffer, no copy),
// of a list of sequences, or of a padded 2-D batch with an attention mask; taps beside them.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "binding.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/text.hpp"

namespace muninn::python {
namespace {

std::vector<std::string> tap_list(nb::handle taps) {
  if (taps.is_none()) return {};
  if (nb::isinstance<nb::str>(taps)) return {nb::cast<std::string>(taps)};
  std::vector<std::string> out;
  for (nb::handle t : taps) {
    if (!nb::isinstance<nb::str>(t)) throw nb::type_error("taps must be a list of tap names (str)");
    out.push_back(nb::cast<std::string>(t));
  }
  return out;
}

std::vector<std::int32_t> one_sequence(const fe::loaded_model& m, nb::handle obj, const std::string& what) {
  if (nb::isinstance<nb::str>(obj)) return fe::encode_prompt(m, m.info().path, nb::cast<std::string>(obj), what);
  return ids_from(obj, what);
}

// Logits alone, or a dict of logits and the taps that were asked for.
nb::object result_of(fe::forward_result&& r, bool with_taps) {
  const auto rows = std::size_t(r.rows), vocab = std::size_t(r.vocab);
  nb::object logits = numpy_f32(std::move(r.logits), {rows, vocab});
  if (!with_taps) return logits;
  nb::dict d;
  d["logits"] = logits;
  for (auto& [name, t] : r.taps) {
    const std::vector<std::size_t> shape(t.shape.begin(), t.shape.end());
    d[name.c_str()] = t.f32.empty() && !t.i32.empty() ? numpy_i32(std::move(t.i32), shape)
                                                        : numpy_f32(std::move(t.f32), shape);
  }
  return d;
}

// Each row's positions with mask 1: one run, left or right of the padding.
struct span {
  std::size_t begin = 0, end = 0;
};

std::vector<span> spans_of(nb::handle mask, std::size_t batch, std::size_t length) {
  nb::object a = nb::module_::import_("numpy").attr("asarray")(mask).attr("astype")("int64");
  const std::vector<std::vector<std::int32_t>> rows = batch_from(a, "attention_mask");
  if (rows.size() != batch || (batch > 0 && rows[0].size() != length))
    fail_as(error_kind::usage, "attention_mask has shape [", rows.size(), ", ", rows.empty() ? 0 : rows[0].size(),
            "] but ids [", batch, ", ", length, "]");
  std::vector<span> out;
  for (std::size_t b = 0; b < batch; ++b) {
    const auto& row = rows[b];
    span s;
    while (s.begin < length && row[s.begin] == 0) ++s.begin;
    s.end = s.begin;
    while (s.end < length && row[s.end] == 1) ++s.end;
    for (std::size_t t = 0; t < length; ++t)
      if (row[t] != 0 && row[t] != 1)
        fail_as(error_kind::usage, "attention_mask[", b, "][", t, "] is ", row[t], ": a mask holds 0 and 1");
    if (s.begin == s.end) fail_as(error_kind::usage, "attention_mask[", b, "] masks every position");
    for (std::size_t t = s.end; t < length; ++t)
      if (row[t] != 0)
        fail_as(error_kind::usage, "attention_mask[", b, "]: the 1s must be one run (left or right padding)");
    out.push_back(s);
  }
  return out;
}

// [B, T, V] logits of a padded batch: each row's unmasked positions run as one sequence; the
// logits of padded positions are 0.
nb::object padded_batch(const fe::loaded_model& m, const std::vector<std::vector<std::int32_t>>& ids, nb::handle mask,
                        const fe::option_values& o) {
  const std::size_t B = ids.size(), T = B ? ids[0].size() : 0;
  std::vector<span> spans(B, span{0, T});
  if (!mask.is_none()) spans = spans_of(mask, B, T);
  std::vector<std::vector<std::int32_t>> seqs;
  for (std::size_t b = 0; b < B; ++b)
    seqs.emplace_back(ids[b].begin() + std::ptrdiff_t(spans[b].begin), ids[b].begin() + std::ptrdiff_t(spans[b].end));
  std::vector<float> out = without_gil([&] {
    const std::vector<fe::forward_result> rs = m.forward_batch(seqs, o);
    const std::size_t V = std::size_t(m.info().vocab_size);
    std::vector<float> logits(B * T * V, 0.0f);
    for (std::size_t b = 0; b < B; ++b)
      std::copy(rs[b].logits.begin(), rs[b].logits.end(),
                logits.begin() + std::ptrdiff_t((b * T + spans[b].begin) * V));
    return logits;
  });
  return numpy_f32(std::move(out), {B, T, std::size_t(m.info().vocab_size)});
}

nb::object forward(const py_model& self, nb::handle ids, nb::handle attention_mask, nb::handle taps_arg,
                   const nb::kwargs& kwargs) {
  const fe::option_values o = options_from(fe::operation::forward, kwargs, "forward");
  const std::vector<std::string> taps = tap_list(taps_arg);
  call_guard g(self.state, "forward");
  const fe::loaded_model& m = g.model();
  fe::check_call(m, o);
  const bool batch = is_batch(ids, "ids");
  if (!attention_mask.is_none() && !batch)
    fail_as(error_kind::usage, "attention_mask goes with a padded batch of ids [B, T]");
  if (batch && (is_array(ids) || !attention_mask.is_none())) {
    if (!taps.empty()) fail_as(error_kind::usage, "taps follow one sequence: give a list of sequences, not a padded batch");
    const std::vector<std::vector<std::int32_t>> rows = batch_from(ids, "ids");
    for (std::size_t b = 1; b < rows.size(); ++b)
      if (rows[b].size() != rows[0].size())
        fail_as(error_kind::usage, "ids: the rows of a padded batch have one length; row ", b, " has ", rows[b].size(),
                ", row 0 has ", rows[0].size());
    return padded_batch(m, rows, attention_mask, o);
  }
  if (batch) {
    std::vector<std::vector<std::int32_t>> seqs;
    std::size_t i = 0;
    for (nb::handle row : ids) seqs.push_back(one_sequence(m, row, "ids[" + std::to_string(i++) + "]"));
    std::vector<fe::forward_result> rs = without_gil([&] { return m.forward_batch(seqs, o, taps); });
    nb::list out;
    for (auto& r : rs) out.append(result_of(std::move(r), !taps.empty()));
    return out;
  }
  const std::vector<std::int32_t> seq = one_sequence(m, ids, "ids");
  fe::forward_result r = without_gil([&] { return m.forward(seq, o, taps); });
  return result_of(std::move(r), !taps.empty());
}

}  // namespace

void bind_forward(nb::module_&, nb::class_<py_model>& cls) {
  cls.def("forward", &forward, nb::arg("ids").none(), nb::kw_only(), nb::arg("attention_mask") = nb::none(),
          nb::arg("taps") = nb::none(), nb::arg("options"),
          keep("forward(ids, *, attention_mask=None, taps=None, **options)\n\n"
               "One forward pass: float32 logits [T, V] of every position, in a numpy array that owns the engine's "
               "buffer (no copy).\n\n"
               "ids: token ids (a list of ints or a 1-D integer array), or a str encoded with the model's tokenizer "
               "as a prompt. A list of sequences gives a list of results (batched where the family can; each as it "
               "would be alone); a 2-D array gives logits [B, T, V], with attention_mask [B, T] (1: a token, 0: "
               "padding, left or right, as in transformers) whose padded positions get logits 0.\n"
               "taps: names of taps (Model.taps), e.g. ['trajectory']: the result is then a dict with 'logits' and "
               "each tap as an array.\n\n" +
               options_doc(fe::operation::forward)));
}

}  // namespace muninn::python
