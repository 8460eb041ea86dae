// Incremental decoding with a window (as transformers' streamers do): the new text of a token is
// decode(ids[prefix:]) minus decode(ids[prefix:read]), so decoders that strip a leading space or
// merge byte tokens see the same context both times; a result ending in U+FFFD (an incomplete
// UTF-8 sequence) waits for the next token.

#include "text_stream.hpp"

#include <algorithm>

#include "muninn/frontend/text.hpp"

namespace muninn::server {

text_stream::text_stream(const frontend::loaded_model& m, std::vector<std::string> stops) : m_(m) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string text_stream::add(std::int32_t token) {
  if (stopped_) return "";
  ids_.push_back(token);
  if (!m_.tokenizer()) {  // no tokenizer.json: the ids are the output
    text_ += (text_.empty() ? "" : " ") + std::to_string(token);
  } else {
    const std::vector<std::int32_t> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
    const std::vector<std::int32_t> before(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
    const std::string now = frontend::decode(m_, window);
    const std::string old = before.empty() ? std::string() : frontend::decode(m_, before);
    const bool incomplete = now.size() >= 3 && now.compare(now.size() - 3, 3, "\xEF\xBF\xBD") == 0;
    if (!incomplete && now.size() >= old.size() && now.compare(0, old.size(), old) == 0) {
      text_ += now.substr(old.size());
      prefix_ = read_;
      read_ = ids_.size();
    }
  }
  return release(false);
}

std::string text_stream::finish() {
  if (!stopped_ && m_.tokenizer() && read_ < ids_.size()) {
    // Whatever is still pending (an incomplete character at the very end) is sent as decoded.
    const std::vector<std::int32_t> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
    const std::vector<std::int32_t> before(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
    const std::string now = frontend::decode(m_, window);
    const std::string old = before.empty() ? std::string() : frontend::decode(m_, before);
    if (now.size() >= old.size()) text_ += now.substr(old.size());
    read_ = ids_.size();
  }
  return release(true);
}

// The text that can be sent: up to a stop string (which ends the stream), else all but the longest
// tail that is a proper prefix of a stop string.
std::string text_stream::release(bool last) {
  if (stopped_) return "";
  std::size_t cut = std::string::npos;
  for (const auto& s : stops_) {
    const std::size_t from = sent_.size() >= s.size() ? sent_.size() - s.size() + 1 : 0;
    const std::size_t at = text_.find(s, from);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  std::size_t end = text_.size();
  if (cut != std::string::npos) {
    end = cut;
    stopped_ = true;
  } else if (!last) {
    for (const auto& s : stops_)
      for (std::size_t k = std::min(s.size() - 1, text_.size()); k > 0; --k)
        if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
          end = std::min(end, text_.size() - k);
          break;
        }
  }
  end = std::max(end, sent_.size());
  std::string out = text_.substr(sent_.size(), end - sent_.size());
  sent_ += out;
  if (stopped_) text_ = sent_;
  return out;
}

}  // namespace muninn::server
