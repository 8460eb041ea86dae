#pragma once
// What several muninn commands share: the commands themselves (one file each group) and the
// helpers that turn their own flags into token ids.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flags.hpp"
#include "muninn/frontend/model.hpp"

namespace muninn::cli {

int cmd_info(const parsed& p);
int cmd_forward(const parsed& p);
int cmd_generate(const parsed& p);
int cmd_tokenize(const parsed& p);
int cmd_score(const parsed& p);
int cmd_eval(const parsed& p);
int cmd_ae(const parsed& p);
int cmd_solve(const parsed& p);
int cmd_demo(const parsed& p);

/// \brief "1,2,3".
std::string join_ids(const std::vector<std::int32_t>& ids);

/// \brief Opens --model for the command's operation (registry: family checks included).
std::unique_ptr<frontend::loaded_model> open_model(const parsed& p);

/// \brief The ids of --tokens, or of --prompt encoded with the model's tokenizer (exactly one of them).
std::vector<std::int32_t> input_ids(const parsed& p, const frontend::loaded_model& m);

/// \brief A file path given as `flag` must exist and not be a folder (usage errors otherwise).
void require_file(const std::string& path, const std::string& flag, const std::string& what);

/// \brief The sequences of a --data file: lines of token ids (comma or space separated), or text
/// lines encoded with the model's tokenizer (`add_special`: with its post-processor's special
/// tokens); with `json_lines`, a file whose lines all start with '{' holds JSON objects whose
/// "text" is the document.
std::vector<std::vector<std::int32_t>> data_sequences(const std::string& file, const frontend::loaded_model& m,
                                                      const std::string& dir, bool add_special, bool json_lines);

}  // namespace muninn::cli
