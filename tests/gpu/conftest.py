"""The GPU tier (`make test-gpu`): every test here is marked `gpu` and skipped where no CUDA driver
and device are present (CI, `make test`)."""
import pytest

from cdnajit.runtime import nvptx_runner


def pytest_collection_modifyitems(config, items):
    present = None
    for item in items:
        if "gpu" not in item.keywords:
            continue
        if present is None:
            present = nvptx_runner.available()
        if not present:
            item.add_marker(pytest.mark.skip(reason="no CUDA driver or device here"))
