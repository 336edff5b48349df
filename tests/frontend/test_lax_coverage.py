"""Every public jax.lax function (the stored list, from JAX 0.10.2) is in cdnajit.lax: implemented, or
listed as not supported (frontend/lax_unsupported.py) with its reason in README.md, and raising a
NotImplementedError that names it."""
import pathlib
import re

import pytest

import cdnajit.lax as lax
from cdnajit.frontend.lax_unsupported import NOT_SUPPORTED

ROOT = pathlib.Path(__file__).resolve().parents[2]
JAX_LAX_NAMES = [line for line in (ROOT / "tests/frontend/data/jax_lax_names.txt").read_text().split("\n")
                 if line and not line.startswith("#")]


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n", text.index("### jax.lax"))
    following = re.search(r"^#{1,3} ", text[start:], re.M)   # the next heading ends the section
    return text[start:start + following.start()] if following else text[start:]


def test_every_jax_lax_function_is_present():
    missing = [name for name in JAX_LAX_NAMES if not callable(getattr(lax, name, None))]
    assert not missing, f"jax.lax functions absent from cdnajit.lax: {missing}"


def test_unsupported_list_is_the_readme_list():
    listed = set(re.findall(r"`([a-z0-9_]+)`", "\n".join(
        line for line in readme_section().split("\n") if line.startswith(("- ", "  ")))))
    assert listed == set(NOT_SUPPORTED)
    assert set(NOT_SUPPORTED) <= set(JAX_LAX_NAMES)
    assert f"{len(NOT_SUPPORTED)} of jax.lax's {len(JAX_LAX_NAMES)} public functions" in readme_section()


@pytest.mark.parametrize("name", sorted(NOT_SUPPORTED))
def test_unsupported_functions_raise_with_their_reason(name):
    with pytest.raises(NotImplementedError, match=f"lax.{name} is not supported: "):
        getattr(lax, name)()
