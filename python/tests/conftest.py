"""Paths of the repository's fixtures (tests/data: tiny checkpoints of every family with the
outputs of our PyTorch references) and of the CLI tests' data files (tests/cli/data)."""
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CLI_DATA = ROOT / "tests" / "cli" / "data"
EXAMPLES = ROOT / "examples" / "models"


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def muninn():
    import muninn as m

    return m


@pytest.fixture(scope="session")
def huginn(muninn):
    return muninn.load(DATA / "huginn" / "tiny_f32")


@pytest.fixture(scope="session")
def llama(muninn):
    return muninn.load(DATA / "llama" / "tiny_text")


@pytest.fixture(scope="session")
def mor(muninn):
    return muninn.load(DATA / "mor" / "expert_mcyc_r3_linear_sigmoid")


@pytest.fixture(scope="session")
def calm(muninn):
    return muninn.load(DATA / "calm" / "calm", ae=str(DATA / "calm" / "ae"))


@pytest.fixture(scope="session")
def trm(muninn):
    return muninn.load(DATA / "trm" / "trm_mlpt_f32")
