#!/usr/bin/env python3
"""Writes the byte-level BPE tokenizer fixtures used by tests/test_tokenizer.cpp.

The oracle is the Hugging Face `tokenizers` package (Rust, Oniguruma regexes). The script trains three
small byte-level BPE tokenizers on a built-in multilingual text, derives a few variants from them by
editing their JSON (other pre-tokenizer settings, merges as "a b" strings, added tokens with
lstrip/rstrip/single_word), and records what `tokenizers` makes of a set of test strings:

  tests/data/tokenizer/<name>.json   tokenizer.json files (compact)
  tests/data/tokenizer/expected.json ids with and without special tokens, decodings, pre-tokenizer pieces,
                                     regex splits, Oniguruma's matches of single-feature patterns,
                                     single-id decodings, chat-template renderings

Usage:
  python3 tools/reference/make_tokenizer_fixtures.py [--out tests/data/tokenizer]
  python3 tools/reference/make_tokenizer_fixtures.py --unicode-table > table.inc
      prints the \\p{L} / \\p{N} range tables that include/muninn/io/unicode_classes.hpp embeds, taken from the
      Oniguruma build inside `tokenizers`, so that the C++ scanner agrees with it code point by code point.

Requires: tokenizers, regex, jinja2. Deterministic: the same package versions give the same files.
"""

import argparse
import json
import os
import random
import sys

import jinja2
import regex
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Split patterns that exercise what the C++ side rewrites for PCRE2 (regex.hpp): lookarounds, general categories,
# case-insensitive groups, possessive and atomic quantifiers, \w, \h, {,n}, \uHHHH, dot-all (?m:...), line anchors.
UNUSUAL_PATTERNS = [
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d|n't)(?=\W|$)|\p{Lu}\p{Ll}+|\p{Lu}{2,}+(?!\p{Ll})|\p{Ll}+|(?>\p{Nd}{1,2})"""
    r"""|\p{P}{1,3}|[\p{S}]+|\r\n|\s+(?!\S)|\s+""",
    r"""(?m:/\*.*?\*/)|^#[^\n]*$|0x\h{,4}|\u00e9+|\v""",
    r"""(?=\p{Lu})""",
    r"""\w+|[^\w\s]+""",
]

LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# The special tokens of Huginn (R:scripts/tokenizer_generation.py, layout "complete"), in order.
HUGINN_SPECIALS = [
    "<|begin_text|>", "<|end_text|>", "<|begin_header|>", "<|end_header|>", "<|end_turn|>", "<|pad|>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|...|>", "<|del|>",
    "<|c_0|>", "<|c_1|>", "<|c_2|>", "<|c_3|>", "<|c_4|>", "<|c_5|>", "<|c_6|>", "<|c_7|>", "<|c_8|>", "<|c_9|>",
    "<|?|>", "<|&|>", "<|!|>", "<|-|>", "<|+|>", "<|interrupt|>", "<|>>-|>", "<|-<<|>", "<|->>|>", "<|<<-|>",
    "<|tool_out|>", "<|end_tool|>", "<|tool_in|>", "<|end_tool_in|>",
]

# The chat template of R:evaluate_raven/checkpoint_to_hf_converter.py; the {% generation %} markers only
# tag assistant spans for training masks and render as nothing, so plain jinja2 renders it without them.
HUGINN_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set start_content = '<|begin_header|>' %}"
    "{% set end_content = message['content'] | trim  + '<|end_turn|>' %}{% if loop.index0 == 0 %}"
    "{% set start_content = bos_token + start_content %}{% endif %}"
    "{% if message['role'] == 'Huginn' or message['role'] == 'assistant' %}"
    "{% set start_content = start_content + 'Huginn<|end_header|>\n\n' %}{{ start_content }}"
    "{% generation %}{{ end_content }}{% endgeneration %}{% else %}"
    "{% set start_content = start_content + message['role'] + '<|end_header|>\n\n' %}{{ start_content }}"
    "{{ end_content }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|begin_header|>Huginn<|end_header|>\n\n' }}{% else %}{{ '<|end_text|>' }}{% endif %}"
)

TRAINING_TEXT = """\
The quick brown fox jumps over the lazy dog. It's a sentence that we've all seen, and they'll see it again;
I'm sure you'd agree that it isn't the most original example. THE QUICK BROWN FOX DIDN'T MIND.
Recurrent-depth models run the same block of layers again and again, so that a small model can think longer
about a hard question. In 2025, a model with 3.5 billion parameters was trained on 800 billion tokens.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 256 1024 65536 3.14159 2.71828 1,000,000 12:30 2024-01-31 -7 +8 1e-6.

def fibonacci(n: int) -> int:
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)

for (int i = 0; i < n; ++i) { sum += x[i] * y[i]; }  // dot product
    std::vector<float> logits(vocab_size, 0.0f);
\tindented with a tab\r\nwindows line end\r\n

Grüße aus München! Die Straße ist schön, und über den Bergen scheint die Sonne. Äpfel, Öl, Übermut.
Ça va très bien, merci. L'élève a répondu à la question ; où est la bibliothèque ? Noël, naïve, façade.
Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю. Москва — столица России.
Καλημέρα κόσμε! Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.
你好，世界！这是一个测试。我们正在训练一个小型的分词器，用来检查实现是否正确。
こんにちは世界。カタカナとひらがなと漢字を混ぜた文章です。東京は日本の首都です。
안녕하세요 세계! 한국어 문장도 조금 넣어 봅니다.
مرحبا بالعالم. هذه جملة باللغة العربية. שלום עולם, זה משפט בעברית. नमस्ते दुनिया, यह हिंदी में एक वाक्य है।
Emoji: 😀 😃 👍 👍🏽 🎉 ❤️ 👨‍👩‍👧‍👦 🇩🇪 🇫🇷 — and symbols: © ® ™ € £ ¥ § ¶ • … ≈ ≠ ≤ ≥ ± × ÷ ∞ √ ∑ ∫.
Ｆｕｌｌｗｉｄｔｈ　ｆｏｒｍｓ：ＡＢＣ　１２３　ｶﾀｶﾅ. Roman numerals Ⅻ, fractions ½ ¾, superscripts x² y³, digits ٣ ४ ௫.
Whitespace runs:    four spaces,\t\ttwo tabs,\n\n\nthree newlines,   \n  mixed   \n\n   end.
"""

TEST_STRINGS = [
    "",
    "Hello world",
    "Hello, world! How are you?",
    " leading space",
    "  two leading spaces",
    "trailing spaces   ",
    "   ",
    "\n",
    "\n\n\n",
    "a\n\nb",
    "line1\n\n\nline2\r\n\tindented\n    code();\n",
    "x  \n  y",
    "\t\tx = 1\t\t",
    "The year 2024 had 365 days; pi is about 3.14159265358979.",
    "1234567890 12 123 1234 12345",
    "it's I'M we'LL they'Re you'VE he'd 'ſ ſ'S x'ſt x'ST x'Re",
    "don't'' ''s",
    "<|begin_text|>Hello<|end_text|>",
    "text <|begin_header|>user<|end_header|>\n\nHi!<|end_turn|>",
    "<|begin_text|><|begin_text|> <|pad|>",
    "<|end_text partial <|end_text|",
    "a<|end_tool_in|>b<|end_tool|>c<|tool_in|>",
    "<|>>-|><|-|><|<<-|>",
    " <|end_turn|> spaced ",
    "Grüße aus München! Ça va? élève naïve",
    "Привет, мир! Съешь же ещё этих мягких булок.",
    "Καλημέρα κόσμε",
    "你好，世界！这是一个测试。",
    "こんにちは世界、カタカナとひらがな。",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "😀👍🏽 family: 👨‍👩‍👧‍👦 flags 🇩🇪!",
    "ＦＵＬＬＷＩＤＴＨ １２３ ｶﾀｶﾅ",
    "x=[1,2,3]; y = {'a': 0x1F}  # comment",
    "    \n  \n",
    "\u00a0nbsp\u3000ideographic\u2003em\u2028ls",
    "a\x1cb\x1fc\x00d",
    "Ⅻ ½ ² ٣ ४ 123456789",
    "e\u0301 combining, a\u0308b",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "==========----------..........",
    "(hello) [world] {foo}\n\n.bar",
    "!!!\n\n\n???\r\n",
    "tokenizing single ing words <mask> x [R]  y ing.",
    "Mixed: Hello мир 世界 123 😀\n\tend",
    "qĠxyz aĠ b<mask>",
    "q<|pad|> q<|x",
]
UNUSUAL_STRINGS_AT = len(TEST_STRINGS)
TEST_STRINGS += [
    # Multilingual text, emoji, CRLF, digits and contractions in capitals, for the unusual Split patterns.
    "DON'T STOP! It'S HE'LL we'RE can't WON'T I'D",
    "CamelCaseWords and XMLHttpRequest, iPhone 15 Pro",
    "Line one\r\nLine two\r\n\r\n  indented\ttab\x0bvt\x0c",
    "0xDEADBEEF 0x1f 0xZZ0 \u00e9\u00e9 e\u0301e",
    "/* block\ncomment */ code # note\n#line start\n# last",
    "\u00c7a co\u00fbte 12,50 \u20ac \u2014 \u00abtr\u00e8s\u00bb cher!!! \u00bfQu\u00e9? \u00a1S\u00ed!",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u041c\u0418\u0420! \u00dcn\u00efc\u00f6d\u00e9 \u00c0\u00c9\u00ce",
    "\u6771\u4eac\u30bf\u30ef\u30fc 2024\u5e7412\u670831\u65e5 \U0001F600\U0001F44D\U0001F3FD\U0001F389 \u2764\ufe0f",
    "tie\u203fbreak snake_case x\u2040y \u24b6\u24b7 \u2160\u2161",
    "\uff11\uff12\uff13 \u216b \u00bd \u00b2 \u0663\u096a 12345678",
    "   \u00a0\u1680\u180e\u2000 spaces\u3000\u0085end",
    "\u00df STRASSE stra\u00dfe \u017f '\u017f \u212a 'S",
    "\U00011380\U00011381 \U00031350",
    # A capital between letters no alternative of the first pattern takes: the empty match before it splits.
    "\u6771A\u4eac\u01c5B\u01c5 x\u02b0C\u02b0",
]


def bytes_to_unicode():
    """The GPT-2 byte <-> printable-character table, written out from its definition."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table = {}
    extra = 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def train(pre_tokenizer, vocab_size, ignore_merges=False):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Repeating lines with small variations gives the trainer pair counts worth merging.
    lines = TRAINING_TEXT.splitlines(keepends=True)
    corpus = [TRAINING_TEXT] + lines * 3
    tok.train_from_iterator(corpus, trainer=trainer)
    # Huginn puts its specials at the end of the vocabulary; adding them after training does the same.
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in HUGINN_SPECIALS])
    return tok


def merges_as_strings(d):
    d["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in d["model"]["merges"]]
    return d


def special(tok, name):
    return (name, tok.token_to_id(name))


def build_tokenizers():
    out = {}

    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), 700)
    eos = special(gpt2, "<|end_text|>")
    # Like Huginn: encode(add_special_tokens=True) appends the EOS token.
    gpt2.post_processor = processors.TemplateProcessing(single="$A <|end_text|>", pair="$A $B <|end_text|>",
                                                        special_tokens=[eos])
    out["gpt2"] = json.loads(gpt2.to_str())

    llama3 = train(
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]),
        700,
        ignore_merges=True,
    )
    bos = special(llama3, "<|begin_text|>")
    llama3.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_text|> $A", pair="<|begin_text|> $A <|begin_text|> $B:1",
                                      special_tokens=[bos]),
    ])
    out["llama3"] = merges_as_strings(json.loads(llama3.to_str()))

    # Variants made by editing the JSON: what a loader must handle, without another training run.
    v = json.loads(json.dumps(out["gpt2"]))
    v["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    v["post_processor"] = None
    next_id = max(t["id"] for t in v["added_tokens"]) + 1
    extra = [
        {"content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False, "special": True},
        {"content": "[R]", "single_word": False, "lstrip": False, "rstrip": True, "normalized": False, "special": True},
        {"content": "ing", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
        # Contents the ByteLevel decoder maps back to bytes ("Ġ" is a space) or, with a plain space, keeps as is.
        {"content": "Ġxyz", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
        {"content": "aĠ b", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
        # Normalised tokens are looked for only after the non-normalised ones: "q<|pad|>" is q, <|pad|>.
        {"content": "q<|", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
    ]
    for t in extra:
        t["id"] = next_id
        next_id += 1
        v["added_tokens"].append(t)
    out["gpt2_prefix"] = merges_as_strings(v)

    v = json.loads(json.dumps(out["llama3"]))
    # The layout bpeasy (which made Huginn's tokenizer) exports: keep the regex matches, drop the rest.
    v["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"
    v["pre_tokenizer"]["pretokenizers"][0]["invert"] = True
    v["model"]["ignore_merges"] = False
    v["post_processor"] = None
    out["llama3_removed"] = v

    unusual = train(
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(UNUSUAL_PATTERNS[0]), behavior="isolated", invert=False),
            pre_tokenizers.Split(Regex(UNUSUAL_PATTERNS[1]), behavior="isolated", invert=False),
            # Empty matches: they separate pieces under "contiguous".
            pre_tokenizers.Split(Regex(UNUSUAL_PATTERNS[2]), behavior="contiguous", invert=False),
            # invert: the matches are kept, the white space between them joins the piece before it.
            pre_tokenizers.Split(Regex(UNUSUAL_PATTERNS[3]), behavior="merged_with_previous", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]),
        420,
    )
    out["unusual"] = json.loads(unusual.to_str())

    v = json.loads(json.dumps(out["gpt2"]))
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        # add_prefix_space applies to every piece the Digits step made, not only to the first one.
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    ]}
    out["digits"] = v
    return out


def regex_splits(strings):
    rng = random.Random(1234)
    pool = (list("abcXYZsStTdDmMlLrReEvV'ſ") + list("éüßçñøÆ") + list("мирΣλ你好カナ한글") + list("0123456789٣४½Ⅻ²") +
            list(" \t\r\n\u00a0\u3000\u2028\x0b\x0c\x85") + list(".,;:!?()[]{}<>|/\\-_=+*&^%$#@~`\"") + ["😀", "👍🏽", "\u0301"])
    fuzz = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 40))) for _ in range(200)]
    # A lot of whitespace shapes, where the lookahead and the [\r\n] alternatives interact.
    ws = [" ", "\t", "\n", "\r", "\r\n", "\u00a0"]
    fuzz += ["".join(rng.choice(ws + ["a", "1", "."]) for _ in range(rng.randint(1, 12))) for _ in range(150)]
    texts = strings + fuzz
    return {
        "gpt2": {"pattern": GPT2_PATTERN, "cases": [[t, regex.findall(GPT2_PATTERN, t)] for t in texts]},
        "llama3": {"pattern": LLAMA3_PATTERN, "cases": [[t, regex.findall(LLAMA3_PATTERN, t)] for t in texts]},
    }


# Single features, each matched by Oniguruma inside tokenizers; the C++ side must find the same matches.
ONIG_FEATURE_PATTERNS = [
    r"\s+", r"\S+", r"\w+", r"\W+", r"\h+", r"\H+", r"\v", r"x{,2}", r"\u00e9", r"(?m:.)+", r".+", r"^\p{Lu}",
    r"\p{Ll}+$", r"(?i:stra|k)", r"[[:alpha:]]+", r"\p{^L}+", r"\P{N}+", r"[^\s\p{L}]+", r"\d+", r"\p{Nd}+",
    r"\p{P}+", r"\p{S}+", r"(?<=\p{L})\p{N}+", r"\p{L}++(?!\d)", r"(?>\s+)\S", r"\R", r"[\w\s]+", r"[\h\s]+",
    r"\pL+\pN*", r"\p{Letter}+", r"[[:alnum:]]+", r"[[:upper:][:digit:]]+", r"[\W]+", r"[^\W\d_]+", r"[\s\S]+", r"(?i)'S|'T", r"[\p{L}\p{N}]+", r"\A\s*\S", r"\S\s*\z", r"\b.", r".\b", r"\B.",
]


def onig_matches(strings):
    """Non-empty matches of single-feature patterns, as tokenizers' Oniguruma finds them (on a subset of the
    strings, to keep the fixture small: the multilingual ones at the end and a few with white space and digits)."""
    strings = [s for s in strings[:UNUSUAL_STRINGS_AT] if any(w in s for w in ("line1", "it's", "nbsp", "Ⅻ", "combining", "Mixed"))] + \
        strings[UNUSUAL_STRINGS_AT:]
    out = []
    for p in ONIG_FEATURE_PATTERNS:
        sp = pre_tokenizers.Split(Regex(p), behavior="removed", invert=True)
        out.append({"pattern": p, "cases": [[t, [x for x, _ in sp.pre_tokenize_str(t)]] for t in strings]})
    return out


def split_behaviors():
    """Pieces of the Split pre-tokenizer with a String pattern, for every behavior and invert setting."""
    texts = ["a-b--c-", "--x", "abc", "-", "x-y-z"]
    out = []
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
        for invert in (False, True):
            sp = pre_tokenizers.Split("-", behavior=behavior.lower() if behavior in ("Removed", "Isolated", "Contiguous")
                                      else {"MergedWithPrevious": "merged_with_previous",
                                            "MergedWithNext": "merged_with_next"}[behavior], invert=invert)
            for t in texts:
                out.append({"behavior": behavior, "invert": invert, "text": t,
                            "pieces": [p for p, _ in sp.pre_tokenize_str(t)]})
    digits = []
    for individual in (False, True):
        d = pre_tokenizers.Digits(individual_digits=individual)
        for t in ["ab123c4½x", "2024-01-31", "x"]:
            digits.append({"individual_digits": individual, "text": t, "pieces": [p for p, _ in d.pre_tokenize_str(t)]})
    return {"split": out, "digits": digits}


def chat_cases(tok):
    env = jinja2.Environment()
    template = env.from_string(HUGINN_CHAT_TEMPLATE.replace("{% generation %}", "").replace("{% endgeneration %}", ""))
    conversations = [
        [{"role": "user", "content": "What is 2+2?"}],
        [{"role": "system", "content": "  You are Huginn.\n"}, {"role": "user", "content": "\tHi there!  "}],
        [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi! How can I help?\n\n"},
         {"role": "user", "content": "Tell me a joke."}],
        [{"role": "user", "content": "Bonjour"}, {"role": "Huginn", "content": " Salut "}],
        [{"role": "user", "content": "\u3000全角スペース\u00a0"}],
    ]
    out = []
    for msgs in conversations:
        for gen in (True, False):
            text = template.render(messages=msgs, bos_token="<|begin_text|>", add_generation_prompt=gen)
            out.append({"messages": msgs, "add_generation_prompt": gen, "text": text,
                        "gpt2_ids": tok.encode(text, add_special_tokens=False).ids})
    return out


def onig_members(cls, cps):
    """The code points among `cps` that Oniguruma (inside tokenizers) matches with the character class `cls`."""
    sp = pre_tokenizers.Split(Regex(cls), behavior="removed", invert=True)
    found = set()
    for i in range(0, len(cps), 20000):
        chunk = cps[i:i + 20000]
        for _, (a, b) in sp.pre_tokenize_str("".join(map(chr, chunk))):
            found.update(chunk[a:b])
    return found


def class_samples():
    """Every 61st code point below U+32000 classified L / N / S (\\s) / O (other), as one string."""
    cps = [c for c in range(0, 0x32000, 61) if not (0xD800 <= c <= 0xDFFF)]
    sets = {k: onig_members(cls, cps) for k, cls in (("L", r"\p{L}"), ("N", r"\p{N}"), ("S", r"\s"))}
    classes = "".join(next((k for k in "LNS" if c in sets[k]), "O") for c in cps)
    word = onig_members(r"\w", cps)
    return {"step": 61, "end": 0x32000, "skips_surrogates": True, "classes": classes,
            "word": "".join("W" if c in word else "-" for c in cps)}


def unicode_table():
    """Prints the code-point ranges Oniguruma (inside tokenizers) puts in \\p{L} and \\p{N}."""
    cps = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]

    def members(cls):
        return onig_members(cls, cps)

    def ranges(found):
        out, start, prev = [], None, None
        for c in sorted(found):
            if start is None:
                start = prev = c
            elif c == prev + 1 or (prev < 0xD800 and c == 0xE000 and prev == 0xD7FF):
                prev = c
            else:
                out.append((start, prev))
                start = prev = c
        out.append((start, prev))
        return out

    for name, cls in (("letter", r"\p{L}"), ("number", r"\p{N}")):
        rs = ranges(members(cls))
        print(f"// {name}: {len(rs)} ranges")
        print(f"inline constexpr code_point_range {name}_ranges[] = {{")
        for i in range(0, len(rs), 5):
            print("    " + " ".join(f"{{0x{a:X}, 0x{b:X}}}," for a, b in rs[i:i + 5]))
        print("};")
    white = members(r"\s")
    print("// white space:", " ".join(f"0x{c:X}" for c in sorted(white)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tokenizer"))
    ap.add_argument("--unicode-table", action="store_true", help="print the C++ range tables and exit")
    args = ap.parse_args()
    if args.unicode_table:
        unicode_table()
        return

    import tokenizers
    os.makedirs(args.out, exist_ok=True)
    toks = build_tokenizers()
    expected = {"tokenizers_version": tokenizers.__version__, "tokenizers": {}}
    b2u = bytes_to_unicode()
    for name, d in toks.items():
        text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        path = os.path.join(args.out, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        tok = Tokenizer.from_file(path)  # what the C++ side reads, not the in-memory object
        cases = []
        for s in TEST_STRINGS:
            ids = tok.encode(s, add_special_tokens=False).ids
            cases.append({
                "text": s,
                "ids": ids,
                "ids_with_special": tok.encode(s, add_special_tokens=True).ids,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
                "pieces": [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(s)],
            })
        entry = {"file": name + ".json", "vocab_size": tok.get_vocab_size(with_added_tokens=True), "cases": cases}
        if name == "gpt2":
            n = tok.get_vocab_size(with_added_tokens=True)
            # One id at a time: partial UTF-8 sequences decode to U+FFFD the way Rust's from_utf8_lossy does.
            entry["single_id_decodes"] = [tok.decode([i], skip_special_tokens=False) for i in range(n)]
            entry["byte_tokens"] = [tok.token_to_id(b2u[b]) for b in range(256)]
        expected["tokenizers"][name] = entry
    expected["regex_splits"] = regex_splits(TEST_STRINGS)
    expected["onig_matches"] = onig_matches(TEST_STRINGS)
    expected["chat"] = chat_cases(Tokenizer.from_file(os.path.join(args.out, "gpt2.json")))
    expected["classes"] = class_samples()
    expected["pre_tokenizers"] = split_behaviors()
    with open(os.path.join(args.out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))
    total = sum(os.path.getsize(os.path.join(args.out, p)) for p in os.listdir(args.out))
    print(f"wrote {len(toks) + 1} files to {os.path.normpath(args.out)} ({total / 1024:.0f} KiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
