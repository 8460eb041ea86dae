"""The installed package: version, type stubs, docstrings that list the options."""
import pathlib
import re

from conftest import ROOT


def test_version_is_the_projects(muninn):
    cmake = (ROOT / "CMakeLists.txt").read_text()
    want = re.search(r"project\(muninn VERSION ([0-9.]+)", cmake).group(1)
    assert muninn.__version__ == want
    assert isinstance(muninn.has_cuda, bool)


def test_type_stubs_are_shipped(muninn):
    here = pathlib.Path(muninn.__file__).parent
    assert (here / "py.typed").is_file()
    stub = (here / "_muninn.pyi").read_text()
    for name in ("class Model", "def load(", "def forward(", "def generate(", "class TokenStream", "class Generation",
                 "def solve(", "def ae_encode("):
        assert name in stub, name


def test_docstrings_list_the_options(muninn):
    doc = muninn.Model.generate.__doc__
    assert "max_new_tokens (int, required)" in doc and "exit_threshold (float)" in doc and "[huginn]" in doc
    # The CLI's printing options (--output, --show-depths) are no keyword arguments.
    kwargs = muninn.Model.forward.__doc__.split("Keyword arguments")[1]
    assert "\n    output (" not in kwargs and "show_depths" not in kwargs and "    routing (" in kwargs
    assert issubclass(muninn.UsageError, muninn.Error) and issubclass(muninn.UsageError, ValueError)
    assert issubclass(muninn.ConfigError, muninn.Error) and issubclass(muninn.CheckpointError, muninn.Error)
