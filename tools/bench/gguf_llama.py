"""The Llama hyperparameters and tensor names of a GGUF file, shared by the scripts that write the
same Llama for llama.cpp (compare_llamacpp.py: random weights per precision; llama_folder_to_gguf.py:
a folder's fp32 weights). `writer` is a gguf.GGUFWriter from llama.cpp's own gguf-py."""


def add_llama_hparams(writer, *, hidden, layers, intermediate, heads, kv_heads, head_dim, vocab, context,
                      rope_theta=10000.0, rms_eps=1e-5):
    """Writes the architecture keys llama.cpp's Llama graph reads."""
    writer.add_context_length(context)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(intermediate)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(rms_eps)
    writer.add_vocab_size(vocab)


# GGUF name of each per-layer tensor, keyed by the Hugging Face name after "model.layers.{i}.".
LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
