#pragma once
// Generated tokens to text as a client should see it: incremental decoding that never sends half
// of a multi-byte character or of a word the tokenizer's decoder would still change, and stop
// strings (OpenAI's `stop`) matched across token boundaries, with text that may begin a stop
// string held back until it is known not to.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"

namespace muninn::server {

class text_stream {
 public:
  /// \brief Text of `m`'s tokens; `stops` are the stop strings (may be empty).
  text_stream(const frontend::loaded_model& m, std::vector<std::string> stops);
  /// \brief Adds one token; returns the text that became final with it (possibly empty).
  std::string add(std::int32_t token);
  /// \brief At the end: the text still held back (none after a stop string matched).
  std::string finish();
  /// \brief Whether a stop string matched; the text sent ends before it.
  bool stopped() const { return stopped_; }
  /// \brief Everything sent so far.
  const std::string& text() const { return sent_; }

 private:
  std::string release(bool last);

  const frontend::loaded_model& m_;
  std::vector<std::string> stops_;
  std::vector<std::int32_t> ids_;
  std::size_t prefix_ = 0, read_ = 0;  // decoding window: ids_[prefix_, read_) is already text
  std::string text_;                   // all decoded text that is final
  std::string sent_;                   // the part of it sent (text_ minus what may begin a stop string)
  bool stopped_ = false;
};

}  // namespace muninn::server
