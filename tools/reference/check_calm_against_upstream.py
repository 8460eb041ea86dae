#!/usr/bin/env python3
"""Cross-checks calm_ref.py and the fixtures in tests/data/calm/ against the authors' CALM code
(github.com/shaochenze/calm, models/*.py) on CPU. Optional: CI does not run it.

    pip install --target /tmp/tf443 transformers==4.43.0 tokenizers==0.19.1   # the pinned version
    git clone https://github.com/shaochenze/calm /tmp/calm_upstream
    python3 tools/reference/check_calm_against_upstream.py --upstream /tmp/calm_upstream \\
        --site /tmp/tf443 [--fixtures tests/data/calm]

What it does (prints the max |difference| of every comparison, exits non-zero on a failure):
* loads the fixture folders with the upstream classes (EnergyTransformer.from_pretrained with
  ae_path overridden to the fixture's ae/, Autoencoder.from_pretrained) and asserts no missing or
  unexpected keys;
* re-saves them with upstream save_pretrained(safe_serialization=False) and compares config.json /
  generation_config.json text and the pytorch_model.bin keys, order, storage sharing and values
  (and whether the files are byte-identical);
* compares, on the same weights: AE mean / log_std, decoder logits, embed_proj output, backbone
  hidden states, head outputs (upstream torch.rand patched to hand over calm_ref's noise);
* runs upstream generate for the fixture's generation cases of Algorithm 2 (T = 1 and T = 1/n)
  with torch.rand patched to calm_ref's kind-1 noise and random.choices patched to the
  deterministic kind-2 rule (and num_samples set to the case's N; upstream generate always passes
  its default 200), and compares with expected.json;
* runs the upstream eval forward (BrierLM) with the kind-4 noise and compares Brier-1..4.
The exact sampler (Algorithm 1) is not in the upstream code and is not compared.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, help="checkout of shaochenze/calm (holds models/)")
    ap.add_argument("--site", default=None, help="directory with transformers 4.43.0 (pip --target)")
    ap.add_argument("--fixtures", default=os.path.join(HERE, "..", "..", "tests", "data", "calm"))
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    if args.site:
        sys.path.insert(0, args.site)
    sys.path.insert(0, args.upstream)
    sys.path.insert(0, HERE)
    import torch
    import transformers
    torch.set_num_threads(1)
    if transformers.__version__ != "4.43.0":
        print(f"warning: transformers {transformers.__version__}, the reference pins 4.43.0")
    from models.configuration_autoencoder import AutoencoderConfig
    from models.configuration_calm import CALMConfig
    from models.modeling_autoencoder import Autoencoder
    from models.modeling_energy import EnergyTransformer
    import calm_ref as C

    fx = os.path.abspath(args.fixtures)
    ae_dir, calm_dir = os.path.join(fx, "ae"), os.path.join(fx, "calm")
    E = json.load(open(os.path.join(fx, "expected.json")))
    failures = []
    report = {}

    def compare(name, a, b, tol=args.tol):
        d = float((torch.as_tensor(a).double() - torch.as_tensor(b).double()).abs().max())
        report[name] = d
        ok = d <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {name}: max |diff| {d:.3g}")
        if not ok:
            failures.append(name)

    def same(name, a, b):
        ok = a == b
        report[name] = ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        if not ok:
            failures.append(name)

    # -- load with the upstream classes
    cfg = CALMConfig.from_pretrained(calm_dir)
    same("upstream CALMConfig reads no model_type from config.json (falls back to 'energy')",
         cfg.model_type, "energy")
    fixture_ae_path = cfg.ae_path
    cfg.ae_path = ae_dir
    up, info = EnergyTransformer.from_pretrained(calm_dir, config=cfg, attn_implementation="eager",
                                                 output_loading_info=True)
    up.eval()
    same("calm/ loads in upstream with no missing / unexpected keys",
         (info["missing_keys"], info["unexpected_keys"]), ([], []))
    # the AE's config class must be given: Autoencoder.config_class is LlamaConfig
    up_ae, info = Autoencoder.from_pretrained(ae_dir, config=AutoencoderConfig.from_pretrained(ae_dir),
                                              output_loading_info=True)
    up_ae.eval()
    same("ae/ loads in upstream with no missing / unexpected keys",
         (info["missing_keys"], info["unexpected_keys"]), ([], []))
    mine = C.CALM.load(calm_dir)
    mine_st = C.CALM.load(os.path.join(fx, "calm_safetensors"), ae_dir=ae_dir)

    # -- re-save with upstream save_pretrained and compare the files
    with tempfile.TemporaryDirectory() as tmp:
        up.config.ae_path = fixture_ae_path
        up.save_pretrained(os.path.join(tmp, "calm"), safe_serialization=False)
        up.config.ae_path = ae_dir
        up_ae.save_pretrained(os.path.join(tmp, "ae"), safe_serialization=False)
        for sub, files in (("calm", ("config.json", "generation_config.json")), ("ae", ("config.json",))):
            for f in files:
                # a model loaded from a folder saves that folder as _name_or_path; a model built
                # from a config (the training scripts' case) writes none
                a = json.load(open(os.path.join(tmp, sub, f)))
                a.pop("_name_or_path", None)
                same(f"{sub}/{f} == upstream save_pretrained's (but _name_or_path)",
                     json.dumps(a, indent=2, sort_keys=True) + "\n", open(os.path.join(fx, sub, f)).read())
            same(f"{sub}/ file list == upstream save_pretrained's",
                 sorted(os.listdir(os.path.join(tmp, sub))), sorted(os.listdir(os.path.join(fx, sub))))
            a = torch.load(os.path.join(tmp, sub, "pytorch_model.bin"), weights_only=True)
            b = torch.load(os.path.join(fx, sub, "pytorch_model.bin"), weights_only=True)
            same(f"{sub}/pytorch_model.bin keys and order == upstream's", list(a), list(b))
            same(f"{sub}/pytorch_model.bin values == upstream's",
                 all(torch.equal(a[k], b[k]) for k in a), True)

            def groups(sd):
                by = {}
                for k, v in sd.items():
                    by.setdefault(v.untyped_storage().data_ptr(), []).append(k)
                return sorted(tuple(g) for g in by.values())
            same(f"{sub}/pytorch_model.bin storage sharing == upstream's", groups(a), groups(b))
            with zipfile.ZipFile(os.path.join(tmp, sub, "pytorch_model.bin")) as za, \
                    zipfile.ZipFile(os.path.join(fx, sub, "pytorch_model.bin")) as zb:
                same(f"{sub}/pytorch_model.bin zip record names == upstream's",
                     sorted(za.namelist()), sorted(zb.namelist()))
                same(f"{sub}/pytorch_model.bin data.pkl == upstream's (byte for byte)",
                     za.read("pytorch_model/data.pkl"), zb.read("pytorch_model/data.pkl"))
            ba = open(os.path.join(tmp, sub, "pytorch_model.bin"), "rb").read()
            bb = open(os.path.join(fx, sub, "pytorch_model.bin"), "rb").read()
            print(f"info {sub}/pytorch_model.bin byte-identical to upstream's save: {ba == bb}")

    # -- numerics on the same weights
    ids = torch.tensor(E["ids"])[None]
    K = cfg.patch_size
    L = ids.shape[1] // K
    with torch.no_grad():
        lat = up.ae_model.encoder(input_ids=ids)
        mu, ls = torch.chunk(lat, 2, dim=-1)
        m_mu, m_ls = mine.ae.encode(E["ids"])
        compare("AE mean (upstream encoder vs calm_ref)", mu[0], m_mu)
        compare("AE log_std", ls[0], m_ls)
        compare("AE mean, standalone upstream Autoencoder",
                torch.chunk(up_ae.encoder(input_ids=ids), 2, -1)[0][0], m_mu)
        lg = up.ae_model.decoder(latent_states=mu)
        compare("decoder logits from the means", lg[0], mine.ae.decode(m_mu))
        compare("decoder logits vs expected.json", lg.reshape(-1),
                torch.tensor(E["ae"]["decoded_logits"]), 1e-4)
        emb = up.transformer.embed_tokens(ids).reshape(1, L, -1)
        x = up.embed_proj(emb)
        compare("embed_proj output", x[0], mine.embed_chunks(E["ids"]))
        hid = up.transformer(inputs_embeds=x).last_hidden_state
        m_hid = mine.backbone(E["ids"])
        compare("backbone final hidden", hid[0], m_hid)
        compare("backbone hidden, calm_safetensors/", hid[0], mine_st.backbone(E["ids"]))
        compare("backbone hidden vs expected.json", hid.reshape(-1), torch.tensor(E["hidden"]), 1e-4)

        queue = []
        orig_rand = torch.rand

        class _Noise:
            """torch.rand(...) - 0.5 in the upstream head returns exactly this fp32 tensor."""

            def __init__(self, u):
                self.u = u

            def __sub__(self, other):
                assert other == 0.5
                return self.u

        def fake_rand(*shape, **kw):
            if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
                shape = tuple(shape[0])
            u = queue.pop(0)
            assert tuple(u.shape) == shape, (u.shape, shape)
            assert kw.get("dtype") in (None, torch.float32)
            return _Noise(u)

        torch.rand = fake_rand
        try:
            nz = cfg.noise_size
            u = torch.tensor(E["head_noise"]).view(L, 3, nz)
            queue.append(u)
            z = up.generative_head.sample(hid[0][:, None, :].expand(L, 3, -1).contiguous())
            m_z = torch.stack([mine.head(m_hid[p], u[p]) for p in range(L)])
            compare("head samples, explicit noise (upstream sample() vs calm_ref)", z, m_z)
            compare("head samples vs expected.json", z.reshape(-1), torch.tensor(E["head_samples"]), 1e-4)
            s = E["head_stream"]["seed"]
            un = torch.stack([C.head_noise(s, p, 0, 2, nz) for p in range(L)])
            compare("kind-1 noise vs expected.json head_stream.noise", un.reshape(-1),
                    torch.tensor(E["head_stream"]["noise"]), 0)
            queue.append(un)
            z = up.generative_head.sample(hid[0][:, None, :].expand(L, 2, -1).contiguous())
            compare("head samples, kind-1 stream noise", z.reshape(-1),
                    torch.tensor(E["head_stream"]["samples"]), 1e-4)

            # generate: Algorithm 2 cases (T = 1 and 1/n)
            step = {"p": None, "seed": None}
            orig_choices = random.choices

            def fake_choices(patches, weights=None, k=1):
                v = C.alg2_uniform(step["seed"], step["p"])
                order = sorted(range(len(patches)), key=lambda i: patches[i])
                W = 0.0
                for i in order:
                    W += float(weights[i])
                cum = 0.0
                for i in order:
                    cum += float(weights[i])
                    if v * W < cum:
                        return [patches[i]]
                return [patches[order[-1]]]

            random.choices = fake_choices
            orig_ts = type(up).temperature_sampling
            try:
                for case in E["generate"]:
                    if case["sampler"] != "approx":
                        continue
                    N = case.get("num_samples") or 1
                    T = case["temperature"]

                    def ts(self, h, temperature=0.5, num_samples=200, _N=N):
                        # one call per step: hand over the step's noise, then run upstream's code
                        p = step["p"] = step["next"]
                        step["next"] += 1
                        # upstream draws noise [1, nz] at T = 1 (hidden [1, d]), else [1, N, nz]
                        if temperature == 1.0:
                            queue.append(C.head_noise(case["seed"], p, 0, 1, nz))
                        else:
                            queue.append(C.head_noise(case["seed"], p, 0, _N, nz)[None])
                        return orig_ts(self, h, temperature=temperature, num_samples=_N)

                    type(up).temperature_sampling = ts
                    step["seed"] = case["seed"]
                    step["next"] = len(case["padded_prompt"]) // K - 1
                    out = up.generate(torch.tensor(case["prompt"])[None], max_length=case["max_length"],
                                      temperature=T)
                    got = [t for t in out[0].tolist() if t != cfg.pad_token_id]
                    same(f"generate {case['name']} (upstream, patched RNG) == expected output", got,
                         case["output"])
                    first = len(case["padded_prompt"]) // K - 1
                    same(f"generate {case['name']}: steps", step["next"] - first, len(case["steps"]))
            finally:
                type(up).temperature_sampling = orig_ts
                random.choices = orig_choices

            # BrierLM: upstream eval forward, num_samples = 8 head draws per position, kind-4 noise
            s4 = C.brier_seed(E["brier"]["seed"])
            ns = cfg.num_samples
            un = torch.stack([C.head_noise(s4, p, 0, ns, nz) for p in range(L - 1)])   # [P, ns, nz]
            queue.append(un.transpose(0, 1).contiguous())
            out = up(input_ids=ids, labels=ids)
            for n in range(1, 5):
                compare(f"brier{n} (upstream eval forward vs expected.json)",
                        float(getattr(out, f"brier{n}")), E["brier"][f"brier{n}"], 1e-6)
            b = [float(getattr(out, f"brier{n}")) for n in range(1, 5)]
            compare("BrierLM", 100 * max(b[0] * b[1] * b[2] * b[3], 0) ** 0.25, E["brier"]["brierlm"], 1e-4)
            assert not queue
        finally:
            torch.rand = orig_rand

    print(json.dumps({k: v for k, v in report.items() if isinstance(v, float)}, indent=1))
    if failures:
        print("FAILED:", failures)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
