#!/usr/bin/env python3
"""Writes the torch.save fixtures in tests/data/torch/ (a few KB in all).

    python3 tools/reference/make_torch_fixtures.py --out tests/data/torch

Valid files come from torch.save itself; expected.json records, per file and key, the dtype,
shape and every value as torch reads it back (torch.load(weights_only=True) of the written file).

  hf/pytorch_model.bin  state_dict() of a small module as the HF Trainer saves it: OrderedDict with
                        a `_metadata` attribute (set by BUILD), a shared submodule (two keys on one
                        storage, as in Mixture-of-Recursions), f32 weights
  mixed.pt              f32, bf16 and f16 tensors, a slice at a storage offset, aliased keys
  step_3                a training snapshot without extension: `_orig_mod.` keys, storages tagged
                        `cuda:0` (torch.serialization.location_tag patched while saving)
  buffer.pt             saved through a BytesIO, so its top folder is "archive"
  zip64.pt              mixed.pt rewritten as a ZIP64 archive (64-bit sizes and offsets everywhere)
  noncontig.pt          a transposed tensor: Muninn refuses it
  int64.pt              an int64 tensor next to a float one
  llama_bin/            a tiny tied LlamaForCausalLM (transformers) as config.json + pytorch_model.bin
                        (torch.save of its state_dict: lm_head.weight aliases the embedding); its
                        fp32 logits for a few ids, from the model reloaded from that file

Hostile files, hostile/*: written byte by byte and NEVER loaded in Python. Each must give one
clear error: os_system.pt (GLOBAL os.system + REDUCE), eval.pt (STACK_GLOBAL builtins.eval),
truncated.pt, compressed.pt (a deflated entry), short_storage.pt (entry shorter than its numel),
past_storage.pt (tensor reaches past its storage), huge_numel.pt, memo.pt (BINGET of an index never
PUT), marks.pt (deeply nested MARKs), cd_outside.pt (central directory offset past the file).
"""
import argparse
import collections
import io
import json
import os
import struct
import zipfile
import zlib

import torch


def values(t):
    return [float(x) for x in t.detach().to(torch.float64).flatten().tolist()]


def describe(path):
    """What torch reads back from the file (the safe loader: no code runs)."""
    sd = torch.load(path, weights_only=True, map_location="cpu")
    out = {}
    owner = {}  # storage address -> first key on it: aliased keys name the same owner
    for k, t in sd.items():
        first = owner.setdefault(t.untyped_storage().data_ptr(), k)
        out[k] = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                  "storage_offset": t.storage_offset(), "shares_storage_with": first}
        if t.is_floating_point():
            out[k]["values"] = values(t)
    return out


def entries_of(path):
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


# ---- a hand-written ZIP writer (stored entries), with an optional ZIP64 form of every record
def write_zip(path, entries, zip64=False, method=0, cd_offset_override=None):
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        name_b = name.encode()
        crc = zlib.crc32(data)
        body = data if method == 0 else zlib.compress(data)[2:-4]  # raw deflate
        offset = len(out)
        if zip64:
            extra = struct.pack("<HHQQ", 1, 16, len(data), len(body))
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                               len(name_b), len(extra)) + name_b + extra + body
            cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(body), offset)
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0, crc, 0xFFFFFFFF,
                                   0xFFFFFFFF, len(name_b), len(cextra), 0, 0, 0, 0, 0xFFFFFFFF) + name_b + cextra
        else:
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(body), len(data),
                               len(name_b), 0) + name_b + body
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc, len(body),
                                   len(data), len(name_b), 0, 0, 0, 0, 0, offset) + name_b
    cd_offset = len(out)
    out += central
    n = len(entries)
    if zip64:
        z64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd_offset)
        out += struct.pack("<IIQI", 0x07064B50, 0, z64, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        off = cd_offset if cd_offset_override is None else cd_offset_override
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), off, 0)
    with open(path, "wb") as f:
        f.write(out)


# ---- a pickle assembler for hostile state dicts (protocol 2, the opcodes torch.save uses)
def uni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pint(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(b)]) + b


def tup(items):
    return b"(" + b"".join(items) + b"t"


def tensor_pickle(key, storage_cls, storage_key, numel, offset, size, stride):
    storage = b"(" + uni("storage") + b"ctorch\n" + storage_cls.encode() + b"\n" + uni(storage_key) + uni("cpu") + pint(numel) + b"tQ"
    args = b"(" + storage + pint(offset) + tup([pint(x) for x in size]) + tup([pint(x) for x in stride]) + \
        b"\x89ccollections\nOrderedDict\n)Rt"
    return uni(key) + b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R"


def state_dict_pickle(*items):
    return b"\x80\x02ccollections\nOrderedDict\n)R(" + b"".join(items) + b"u."


def write_archive(path, top, pkl, storages):
    entries = [(f"{top}/data.pkl", pkl), (f"{top}/byteorder", b"little")]
    entries += [(f"{top}/data/{k}", v) for k, v in storages]
    entries += [(f"{top}/version", b"3\n")]
    write_zip(path, entries)


@torch.no_grad()
def make_llama(folder):
    """A family loader end to end: Muninn's llama family must load pytorch_model.bin unchanged."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                      tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None)
    torch.manual_seed(1)
    model = LlamaForCausalLM(cfg).eval()
    for p in model.parameters():
        p.normal_(0, 0.5)  # norm weights too, so a norm that is not loaded shows
    os.makedirs(folder, exist_ok=True)
    cfg.to_json_file(os.path.join(folder, "config.json"))
    sd = model.state_dict()
    assert sd["lm_head.weight"].data_ptr() == sd["model.embed_tokens.weight"].data_ptr()
    torch.save(sd, os.path.join(folder, "pytorch_model.bin"))
    fresh = LlamaForCausalLM(cfg).eval()
    fresh.load_state_dict(torch.load(os.path.join(folder, "pytorch_model.bin"), weights_only=True))
    ids = [1, 5, 7, 3, 30]
    logits = fresh(torch.tensor([ids]), use_cache=False).logits[0].float()
    return {"ids": ids, "logits": values(logits), "transformers_version": __import__("transformers").__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data/torch")
    out = ap.parse_args().out
    os.makedirs(os.path.join(out, "hf"), exist_ok=True)
    os.makedirs(os.path.join(out, "hostile"), exist_ok=True)
    torch.manual_seed(0)
    expected = {}

    def record(rel, **notes):
        p = os.path.join(out, rel)
        storages = sum(1 for n, _ in entries_of(p) if n.split("/")[1] == "data")
        expected[rel] = {"tensors": describe(p), "storages": storages, **notes}

    # HF-style state_dict(): _metadata via BUILD, a submodule shared by two "recursions"
    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            shared = torch.nn.Linear(3, 2, bias=True)
            self.rec0 = shared
            self.rec1 = shared
            self.norm = torch.nn.LayerNorm(2)

    m = Tiny()
    with torch.no_grad():
        m.norm.weight.copy_(torch.tensor([0.5, -1.25]))
    torch.save(m.state_dict(), os.path.join(out, "hf/pytorch_model.bin"))
    record("hf/pytorch_model.bin")

    base = torch.arange(10, dtype=torch.float32) * 0.25 - 1
    mixed = collections.OrderedDict()
    mixed["w_f32"] = torch.randn(2, 3)
    mixed["w_bf16"] = torch.randn(3, 2).to(torch.bfloat16)
    mixed["w_f16"] = torch.randn(4).to(torch.float16)
    mixed["base"] = base
    mixed["tail"] = base[6:]              # storage offset 6
    mixed["row"] = base.view(2, 5)[1]     # offset 5, shares the storage as well
    mixed["alias"] = mixed["w_f32"]       # a second key for one tensor
    mixed["scalar"] = torch.tensor(3.5)
    torch.save(mixed, os.path.join(out, "mixed.pt"))
    record("mixed.pt")

    snap = collections.OrderedDict()
    snap["_orig_mod.inner.embed"] = torch.randn(4, 2).to(torch.bfloat16)
    snap["_orig_mod.inner.H_init"] = torch.randn(2)
    real_tag = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: "cuda:0"
    try:
        torch.save(snap, os.path.join(out, "step_3"))
    finally:
        torch.serialization.location_tag = real_tag
    assert b"cuda:0" in dict(entries_of(os.path.join(out, "step_3")))["step_3/data.pkl"]
    record("step_3")

    buf = io.BytesIO()
    torch.save({"x": torch.linspace(-1, 1, 5)}, buf)
    with open(os.path.join(out, "buffer.pt"), "wb") as f:
        f.write(buf.getvalue())
    assert entries_of(os.path.join(out, "buffer.pt"))[0][0].startswith("archive/")
    record("buffer.pt", top="archive")

    # ZIP64: the same entries as mixed.pt, every size and offset in 64-bit fields
    z64 = [(n.replace("mixed/", "zip64/"), d) for n, d in entries_of(os.path.join(out, "mixed.pt"))]
    write_zip(os.path.join(out, "zip64.pt"), z64, zip64=True)
    assert [i.filename for i in zipfile.ZipFile(os.path.join(out, "zip64.pt")).infolist()] == [n for n, _ in z64]
    record("zip64.pt")
    assert expected["zip64.pt"]["tensors"] == expected["mixed.pt"]["tensors"]

    torch.save({"ok": torch.ones(2), "wt": torch.arange(6, dtype=torch.float32).view(2, 3).t()},
               os.path.join(out, "noncontig.pt"))
    torch.save({"f": torch.ones(2), "ids": torch.arange(3)}, os.path.join(out, "int64.pt"))
    record("int64.pt")

    # ---- hostile files: bytes only, never unpickled here
    h = lambda name: os.path.join(out, "hostile", name)
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    write_archive(h("os_system.pt"), "os_system",
                  b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.", [])
    write_archive(h("eval.pt"), "eval",
                  b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93X\x01\x00\x00\x001\x85R.", [])
    good = entries_of(os.path.join(out, "mixed.pt"))
    with open(os.path.join(out, "mixed.pt"), "rb") as f:
        whole = f.read()
    with open(h("truncated.pt"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    write_zip(h("compressed.pt"), [(n.replace("mixed/", "compressed/"), d) for n, d in good], method=8)
    one = state_dict_pickle(tensor_pickle("w", "FloatStorage", "0", 4, 0, [2, 2], [2, 1]))
    write_archive(h("short_storage.pt"), "short_storage", one, [("0", f32[:12])])
    write_archive(h("past_storage.pt"), "past_storage",
                  state_dict_pickle(tensor_pickle("w", "FloatStorage", "0", 4, 2, [2, 2], [2, 1])), [("0", f32)])
    write_archive(h("huge_numel.pt"), "huge_numel",
                  state_dict_pickle(tensor_pickle("w", "FloatStorage", "0", 1 << 62, 0, [2, 2], [2, 1])), [("0", f32)])
    write_archive(h("memo.pt"), "memo", b"\x80\x02ccollections\nOrderedDict\n)Rq\x00(X\x01\x00\x00\x00wh\xc8u.", [])
    write_archive(h("marks.pt"), "marks", b"\x80\x02" + b"(" * 1000 + b"t" * 1000 + b".", [])
    write_zip(h("cd_outside.pt"), [(n.replace("mixed/", "cd_outside/"), d) for n, d in good],
              cd_offset_override=1 << 31)

    llama = make_llama(os.path.join(out, "llama_bin"))

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "files": expected, "llama_bin": llama}, f, indent=1,
                  sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
