"""The DNN find mode and its find-db: a round trip (find, then a compile that uses the winner), and files
that must not break a compile (corrupt, foreign, naming a solver that does not exist or apply)."""
import json

import numpy as np
import pytest

import cdnajit as cj
from cdnajit import lax
from cdnajit.libs.dnn import find_db


@pytest.fixture
def database(tmp_path, monkeypatch):
    location = tmp_path / find_db.FILE_NAME
    monkeypatch.setattr(find_db, "path", lambda: str(location))
    return location


def depthwise(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=4)


ARGS = (np.random.default_rng(0).standard_normal((1, 6, 5, 4)).astype(np.float32),
        np.random.default_rng(1).standard_normal((3, 3, 1, 4)).astype(np.float32))


def test_find_records_the_winner_and_later_compiles_use_it(database):
    [result] = cj.libs.dnn.find(depthwise, *ARGS, repeats=2, progress=False)
    assert set(result.times_us) == {"depthwise", "implicit_gemm", "direct"} and not result.rejected
    data = json.loads(database.read_text())
    assert data["version"] == find_db.VERSION and data["entries"][result.key]["solver"] == result.winner
    assert result.key.startswith("gfx942:1-4-6x5-4-3x3-1_1x1_1-1x1-1x1-l1x1-g4-bg1-NHWC-HWIO-NHWC-f32-F")
    # Edit the database by hand, as a user may: the compile follows it.
    data["entries"][result.key]["solver"] = "direct"
    database.write_text(json.dumps(data))
    report = cj.jit(depthwise).lower(*ARGS).compile().report()
    assert "direct (find-db: the fastest measured" in report


@pytest.mark.parametrize("contents", ["{not json", json.dumps([1, 2]), json.dumps({"format": "other", "version": 1}),
                                      json.dumps({"format": find_db.FORMAT, "version": 99, "entries": {}})])
def test_an_unusable_file_is_ignored_with_a_warning(database, contents):
    database.write_text(contents)
    with pytest.warns(UserWarning, match="DNN find-db"):
        report = cj.jit(depthwise).lower(*ARGS).compile().report()
    assert "(heuristic: least modelled time" in report


def test_entries_naming_no_usable_solver_are_ignored(database):
    [result] = cj.libs.dnn.find(depthwise, *ARGS, repeats=1, progress=False)
    for solver in ("winograd_9000", "gemm_1x1", 7):  # unknown, not applicable (3x3 window), not a name
        data = {"format": find_db.FORMAT, "version": find_db.VERSION, "entries": {result.key: {"solver": solver}}}
        database.write_text(json.dumps(data))
        assert "(heuristic: least modelled time" in cj.jit(depthwise).lower(*ARGS).compile().report()
