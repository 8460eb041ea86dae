# `muninn generate --dump-states`: the file has one row per position the model ran (prompt + generated
# - 1: the last generated token is never fed back) and, at fixed depth, no NaN anywhere. With an exit
# criterion the steps a token did not run are NaN.
# Usage: cmake -DEXE=muninn -DMODEL=.../tiny_f32 -DWORK=dir -P cli_dump_states.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(READ ${MODEL}/config.json config)
string(JSON h GET "${config}" n_embd)

# npy_float_words(<shape var> <words var> <file>): the shape "(a, b, c)" of a .npy file and its data as a
# list of 8-hex-digit float32 words (the header is padded to a multiple of 64 bytes, so words align).
function(npy_float_words shape_var words_var file)
  file(READ ${file} hex HEX)
  string(SUBSTRING "${hex}" 16 4 len_hex)  # header length: little-endian uint16 at byte 8
  string(SUBSTRING "${len_hex}" 0 2 lo)
  string(SUBSTRING "${len_hex}" 2 2 hi)
  math(EXPR dict_len "0x${hi}${lo}")
  file(READ ${file} header OFFSET 10 LIMIT ${dict_len})  # the text dict after magic, version, length
  math(EXPR header_len "${dict_len} + 10")
  string(REGEX MATCH "'shape': \\(([0-9, ]*)\\)" _ "${header}")
  set(shape "${CMAKE_MATCH_1}")
  math(EXPR data_start "${header_len} * 2")
  string(SUBSTRING "${hex}" ${data_start} -1 data)
  string(REGEX MATCHALL "........" words "${data}")
  set(${shape_var} "${shape}" PARENT_SCOPE)
  set(${words_var} "${words}" PARENT_SCOPE)
endfunction()

# A quiet NaN float32 as written by std::numeric_limits<float>::quiet_NaN(), little-endian.
set(nan_word 0000c07f)

# Fixed depth 3: 3 prompt + 4 generated tokens ran 6 positions, every step of each.
cli_run("generate --dump-states" out COMMAND ${EXE} generate --model ${MODEL} --tokens 1,2,3 --max-new-tokens 4
        --steps 3 --init-state zero --dump-states ${WORK}/fixed.npy)
npy_float_words(shape words ${WORK}/fixed.npy)
if(NOT shape STREQUAL "6, 3, ${h}")
  message(FATAL_ERROR "fixed depth: shape (${shape}), expected (6, 3, ${h}): prompt 3 + generated 4 - 1 rows")
endif()
list(FIND words ${nan_word} nan_at)
if(NOT nan_at EQUAL -1)
  message(FATAL_ERROR "fixed depth: NaN at float ${nan_at}; every position that is written ran every step")
endif()

# Early exit (latent-diff 0.5 exits this model after a few of its 8 steps): NaN after each exit.
cli_run("generate --exit" out COMMAND ${EXE} generate --model ${MODEL} --tokens 1,2,3 --max-new-tokens 4
        --steps 8 --init-state zero --exit latent-diff --exit-threshold 0.5 --dump-states ${WORK}/exit.npy)
npy_float_words(shape words ${WORK}/exit.npy)
if(NOT shape STREQUAL "6, 8, ${h}")
  message(FATAL_ERROR "early exit: shape (${shape}), expected (6, 8, ${h})")
endif()
list(FIND words ${nan_word} nan_at)
if(nan_at EQUAL -1)
  message(FATAL_ERROR "early exit: no NaN, but tokens exit before step 8 (steps: ${out})")
endif()
message(STATUS "dump-states ok: (6, 3, ${h}) at fixed depth, NaN after exits")
