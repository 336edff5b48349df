"""The package list, which pyproject.toml cannot glob: the repository's root is the package `cdnajit`,
and every folder below it with an `__init__.py` is one of its subpackages (tests/, benchmarks/ and
examples/ have none), so a new stage or library under libs/ needs no entry here."""
from setuptools import find_packages, setup

setup(packages=["cdnajit"] + [f"cdnajit.{name}" for name in find_packages(".", exclude=["tests*", "benchmarks*", "examples*"])])
