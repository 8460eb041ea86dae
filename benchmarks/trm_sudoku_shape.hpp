#pragma once
// The TRM shape the TRM benchmarks share (bench_host_trm, bench_cuda_families): Sudoku, sequence 81
// + 16 prefix = 97, D = 512, 8 heads, 2 layers, H_cycles 3, L_cycles 6 (21 net calls per
// supervision step), the paper's 7 M shape; attention (RoPE) or mlp_t.
#include <string>

#include "muninn/families/trm/config.hpp"

inline muninn::trm_config trm_sudoku_shape(bool mlp_t, const std::string& forward_dtype) {
  muninn::trm_config c;
  c.seq_len = 81;
  c.vocab_size = 11;
  c.num_puzzle_identifiers = 1;
  c.hidden_size = 512;
  c.num_heads = 8;
  c.expansion = 4;
  c.H_cycles = 3;
  c.L_cycles = 6;
  c.L_layers = 2;
  c.puzzle_emb_ndim = 512;
  c.pos_encodings = mlp_t ? "none" : "rope";
  c.mlp_t = mlp_t;
  c.forward_dtype = forward_dtype;
  return c;
}
