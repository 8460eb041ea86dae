"""Optional: the same logits and greedy tokens as transformers' LlamaForCausalLM on the shipped
Llama fixtures (skipped unless torch and transformers are installed; CI does not install them)."""
import numpy as np
import pytest

from conftest import DATA

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name", ["tiny_tied_mha", "tiny_untied_gqa", "tiny_text"])
def test_llama_matches_transformers(muninn, name):
    folder = DATA / "llama" / name
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32,
                                                            attn_implementation="eager").eval()
    m = muninn.load(folder)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, m.vocab_size, size=(2, 24))
    mask = np.ones_like(ids)
    mask[1, :5] = 0  # the second row left-padded
    with torch.no_grad():
        want = ref(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
        greedy = ref.generate(torch.tensor(ids[:1]), max_new_tokens=10, do_sample=False, eos_token_id=None,
                              pad_token_id=0)[0, 24:].tolist()
    got = m.forward(ids, attention_mask=mask)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(got[1, 5:], want[1, 5:], rtol=0, atol=1e-4)
    np.testing.assert_allclose(m.forward(torch.tensor(ids[0])), want[0], rtol=0, atol=1e-4)  # DLPack in
    assert m.generate(ids[0], max_new_tokens=10, ignore_eos=True).ids.tolist() == greedy
