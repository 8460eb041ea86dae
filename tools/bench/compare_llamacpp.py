#!/usr/bin/env python3
"""Muninn against llama.cpp on the same SmolLM-135M-shaped Llama, same machine, same run.

    python3 tools/bench/compare_llamacpp.py --llama-src DIR [--llama-build DIR] [--build build/host]
                                            [--threads 1 2] [--repeats 3] [--out /tmp/muninn_llamacpp]

llama.cpp is built from its source beside ours, for the measurement only (never committed): any
checkout of it (its git repository, or the `vendor/llama.cpp` folder of the llama-cpp-python
source package, `pip download llama-cpp-python --no-binary :all: --no-deps`). When
`--llama-build/bin/llama-bench` is missing, the script configures and builds it there
(Release, native CPU flags, llama-bench only). Python needs numpy and pyyaml (for gguf-py), e.g. in
a venv: `python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy pyyaml`, then run this
script with /tmp/venv/bin/python.

The model: benchmarks/smollm_shape.hpp's shape (hidden 576, 9 heads / 3 KV heads, head_dim 64,
MLP 1536, 30 layers, vocab 49152, tied embeddings) with random weights, written as GGUF in F32,
BF16 and Q8_0 by llama.cpp's own Python writer (its gguf-py; norms stay F32, as llama.cpp's
converter keeps them), with no vocabulary (the benchmark feeds token ids). Work, as in
bench_host_llama: prefill = 128 prompt tokens in one batch (llama-bench `-p 128`), decode = 64
single-token steps (`-n 64`). llama-bench's figure is its mean tokens/s over `--repeats`; Muninn's
is Google Benchmark's rate from bench_host_llama (one model per weight format it reports).
GB/s = bytes of weights read per decoded token x tokens/s (embedding table excluded for decode:
one row is read, and the tied output matrix is read once as the LM head); the machine's read
bandwidth is bench_host_ops' BM_stream_read on the same run. `uptime` is printed before and after.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from gguf_llama import LAYER_TENSORS, add_llama_hparams

H, HEADS, KV, HD, INTER, LAYERS, VOCAB = 576, 9, 3, 64, 1536, 30, 49152


def build_llama(src, build):
    bench = os.path.join(build, "bin", "llama-bench")
    if os.path.exists(bench):
        return bench
    subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
                    "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF"], check=True)
    subprocess.run(["cmake", "--build", build, "--target", "llama-bench", "-j2"], check=True)
    return bench


def write_gguf(src, path, ftype):
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    import gguf  # llama.cpp's own writer
    from gguf import GGMLQuantizationType as Q

    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(path, "llama")
    add_llama_hparams(w, hidden=H, layers=LAYERS, intermediate=INTER, heads=HEADS, kv_heads=KV, head_dim=HD,
                      vocab=VOCAB, context=2048)
    w.add_tokenizer_model("none")
    w.add_file_type({"F32": 0, "BF16": 32, "Q8_0": 7}[ftype])

    def mat(name, rows, cols):
        a = (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)).astype(np.float32)
        if ftype == "F32":
            w.add_tensor(name, a)
        elif ftype == "BF16":
            w.add_tensor(name, gguf.quants.quantize(a, Q.BF16), raw_dtype=Q.BF16)
        else:
            w.add_tensor(name, gguf.quants.quantize(a, Q.Q8_0), raw_dtype=Q.Q8_0)

    def norm(name):
        w.add_tensor(name, np.ones(H, dtype=np.float32))

    mat("token_embd.weight", VOCAB, H)
    norm("output_norm.weight")
    shapes = {"self_attn.q_proj.weight": (HEADS * HD, H), "self_attn.k_proj.weight": (KV * HD, H),
              "self_attn.v_proj.weight": (KV * HD, H), "self_attn.o_proj.weight": (H, HEADS * HD),
              "mlp.gate_proj.weight": (INTER, H), "mlp.up_proj.weight": (INTER, H), "mlp.down_proj.weight": (H, INTER)}
    for i in range(LAYERS):
        for hf, name in LAYER_TENSORS.items():
            if hf in shapes:
                mat(f"blk.{i}.{name}", *shapes[hf])
            else:
                norm(f"blk.{i}.{name}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def decode_bytes(bytes_per_weight):
    layer = H * HEADS * HD + 2 * H * KV * HD + HEADS * HD * H + 3 * H * INTER
    return (LAYERS * layer + VOCAB * H) * bytes_per_weight


def llama_bench(bench, model, threads, repeats):
    cmd = [bench, "-m", model, "-p", "128", "-n", "64", "-t", str(threads), "-r", str(repeats), "-o", "json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode == -4:
        # SIGILL: a native build uses AMX tiles for Q8_0 on CPUs that list AMX, but a virtual machine may
        # not grant the tile state. `--repack 0` keeps llama.cpp on its AVX-512 kernels instead.
        print(f"note: llama-bench died with SIGILL on {os.path.basename(model)}; rerun with --repack 0", flush=True)
        run = subprocess.run(cmd + ["--repack", "0"], capture_output=True, text=True)
    run.check_returncode()
    out = run.stdout
    res = {}
    for r in json.loads(out):
        res["prefill" if r["n_prompt"] > 0 else "decode"] = r["avg_ts"]
    return res


def muninn_bench(build, threads):
    env = dict(os.environ, MUNINN_NUM_THREADS=str(threads))
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([os.path.join(build, "benchmarks", "bench_host_llama"), "--benchmark_format=json",
                          "--benchmark_min_time=0.5"], env=env, capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"]
        fmt = "bf16" if "Bf16" in name else "q8" if "Q8" in name else "f32"  # BM_LlamaDecodeBf16, ...Q8
        res[(fmt, "prefill" if "Prefill" in name else "decode")] = b["tok_s"]
    return res


def stream_bandwidth(build, threads):
    out = subprocess.run([os.path.join(build, "benchmarks", "bench_host_ops"), f"--benchmark_filter=BM_stream_read/threads:{threads}",
                          "--benchmark_format=json", "--benchmark_min_time=0.5"], capture_output=True, text=True,
                         check=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return 2**29 / (b["real_time"] * 1e-3) / 1e9  # 512 MiB per iteration, wall time in ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-src", required=True)
    ap.add_argument("--llama-build", default=None)
    ap.add_argument("--build", default="build/host")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="/tmp/muninn_llamacpp")
    a = ap.parse_args()
    bench = build_llama(a.llama_src, a.llama_build or os.path.join(a.out, "llama.cpp-build"))
    os.makedirs(a.out, exist_ok=True)
    models = {}
    for ftype in ("F32", "BF16", "Q8_0"):
        models[ftype] = os.path.join(a.out, f"smollm135m-shape-{ftype}.gguf")
        if not os.path.exists(models[ftype]):
            write_gguf(a.llama_src, models[ftype], ftype)
    print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    bpw = {"F32": 4.0, "BF16": 2.0, "Q8_0": 34 / 32, "f32": 4.0, "bf16": 2.0, "q8": 34 / 32}
    pair = {"F32": "f32", "BF16": "bf16", "Q8_0": "q8"}
    print("| threads | precision | work | llama.cpp tok/s | Muninn tok/s | Muninn / llama.cpp | "
          "weight GB/s llama.cpp / Muninn | stream GB/s |")
    print("|---|---|---|---|---|---|---|---|")
    for t in a.threads:
        stream = stream_bandwidth(a.build, t)
        ours = muninn_bench(a.build, t)
        for ftype, path in models.items():
            theirs = llama_bench(bench, path, t, a.repeats)
            for work in ("prefill", "decode"):
                m = ours.get((pair[ftype], work))
                ratio = f"{m / theirs[work]:.2f}" if m else "not measured"
                gbs = ""
                if work == "decode":
                    g_l = decode_bytes(bpw[ftype]) * theirs[work] / 1e9
                    gbs = f"{g_l:.1f} / " + (f"{decode_bytes(bpw[pair[ftype]]) * m / 1e9:.1f}" if m else "-")
                print(f"| {t} | {ftype} / {pair[ftype]} | {work} | {theirs[work]:.1f} | "
                      f"{m:.1f} | {ratio} | {gbs} | {stream:.1f} |" if m else
                      f"| {t} | {ftype} / {pair[ftype]} | {work} | {theirs[work]:.1f} | - | {ratio} | {gbs} | "
                      f"{stream:.1f} |", flush=True)
    print("uptime after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
