"""Writes expected.json: each template of this folder rendered by transformers' own chat-template renderer
(the sandboxed jinja2 environment with trim_blocks/lstrip_blocks that apply_chat_template uses), for
tests/test_chat_template.cpp. Run from anywhere: python3 make_expected.py"""
import json
import pathlib

from transformers.utils.chat_template_utils import render_jinja_template

HERE = pathlib.Path(__file__).resolve().parent
TINY = HERE.parent / "llama" / "tiny_text" / "tokenizer_config.json"
VARS = {"bos_token": "<s>", "eos_token": "</s>"}

SYSTEM_USER = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": " Hi there! "}]
MULTI = [
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": "What is 2+2?\n"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "And 'quoted' \"text\"\nwith é?"},
]
ALTERNATING = [
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": " Hi! "},
    {"role": "user", "content": "Bye"},
]
BAD_ORDER = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
ONE = [{"role": "user", "content": "only"}]

CASES = {
    "llama3.jinja": [SYSTEM_USER, MULTI, ALTERNATING],
    "chatml.jinja": [SYSTEM_USER, ALTERNATING, MULTI],
    "mistral.jinja": [ALTERNATING, BAD_ORDER, SYSTEM_USER],
    "gemma.jinja": [ALTERNATING, SYSTEM_USER, BAD_ORDER],
    "huginn.jinja": [SYSTEM_USER, MULTI, ALTERNATING],
    "features.jinja": [MULTI, ONE],
}


def render(template, messages, add_generation_prompt, variables):
    try:
        out, _ = render_jinja_template(
            conversations=[messages], chat_template=template, add_generation_prompt=add_generation_prompt, **variables
        )
        return {"text": out[0]}
    except Exception as e:  # the template's raise_exception: the C++ side must fail with this message
        return {"error": str(e)}


def main():
    cases = []
    for name, conversations in CASES.items():
        template = (HERE / name).read_text()
        for messages in conversations:
            for gen in (True, False):
                case = {"template": name, "messages": messages, "add_generation_prompt": gen, "vars": VARS}
                case.update(render(template, messages, gen, VARS))
                cases.append(case)
    config = json.loads(TINY.read_text())
    tiny_vars = {"bos_token": config["bos_token"], "eos_token": config["eos_token"]}
    case = {"template": "../llama/tiny_text/tokenizer_config.json", "messages": SYSTEM_USER,
            "add_generation_prompt": True, "vars": tiny_vars}
    case.update(render(config["chat_template"], SYSTEM_USER, True, tiny_vars))
    cases.append(case)
    (HERE / "expected.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
