"""Muninn from Python: recurrent-depth transformers (Huginn, Mixture-of-Recursions, CALM, TRM/HRM)
and plain Llama checkpoints on Muninn's C++17 engine, with numpy arrays in and out.

    import muninn
    m = muninn.load("tests/data/llama/tiny_text")
    print(m.generate("The cat sat", max_new_tokens=12).text)

docs/python.md describes the whole API; help(muninn.Model.generate) lists every option.
"""

from ._muninn import (
    CheckpointError,
    ConfigError,
    Error,
    Generation,
    Model,
    Tokenizer,
    TokenStream,
    UsageError,
    __version__,
    has_cuda,
    load,
    solve,
)

__all__ = [
    "CheckpointError",
    "ConfigError",
    "Error",
    "Generation",
    "Model",
    "Tokenizer",
    "TokenStream",
    "UsageError",
    "__version__",
    "has_cuda",
    "load",
    "solve",
]
