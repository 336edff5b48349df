"""The GPU tier: the kernel corpus (tests/gpu/corpus.py) and random programs of the
random-program tester run on an NVIDIA GPU through the NVPTX backend and agree bit for bit with
the CPU (corpus.py's docstring says why bitwise); the corpus runs clean under compute-sanitizer's
racecheck (shared-memory hazards), synccheck (barriers) and memcheck (out-of-bounds and misaligned
accesses). `make test-gpu`; skipped where no CUDA driver is present, never part of CI or `make test`."""
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import corpus  # noqa: E402

pytestmark = pytest.mark.gpu
RANDOM_PROGRAMS = int(os.environ.get("CDNAJIT_GPU_PROGRAMS", "300"))
SANITIZER_SUMMARY = {"racecheck": r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)",
                     "synccheck": r"ERROR SUMMARY: (\d+) errors?", "memcheck": r"ERROR SUMMARY: (\d+) errors?"}


@pytest.mark.parametrize("name", [*corpus.PROGRAMS, *corpus.KERNELS])
def test_corpus_agrees_with_the_cpu(name):
    assert corpus.check_case(name) is None


@pytest.mark.parametrize("part", range(10))
def test_random_programs_agree_with_the_cpu(part):
    problems = {}
    for i in range(part, RANDOM_PROGRAMS, 10):
        seed = 3232 * 1_000_003 + i
        problem = corpus.check_random_program(seed)
        if problem:
            problems[seed] = problem
    assert not problems, problems


def sanitized(tool, *corpus_args):
    """(exit status, output) of corpus.py run under compute-sanitizer's `tool`."""
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(sanitizer):
        pytest.skip("compute-sanitizer is not installed")
    extra = ["--racecheck-report", "all"] if tool == "racecheck" else []
    result = subprocess.run([sanitizer, "--tool", tool, *extra, "--print-limit", "20", sys.executable,
                             os.path.join(os.path.dirname(__file__), "corpus.py"), *corpus_args],
                            capture_output=True, text=True, timeout=3600)
    return result.returncode, result.stdout + result.stderr


def test_racecheck_reports_the_planted_race():
    """The control: the tree sum without its barriers is reported (so a clean run means something)."""
    _, output = sanitized("racecheck", "--planted-race")
    summary = re.search(SANITIZER_SUMMARY["racecheck"], output)
    assert summary and int(summary.group(1)) > 0, output[-3000:]


@pytest.mark.parametrize("tool", sorted(SANITIZER_SUMMARY))
def test_corpus_is_clean_under_compute_sanitizer(tool):
    returncode, output = sanitized(tool)
    summary = re.search(SANITIZER_SUMMARY[tool], output)
    assert summary, output[-3000:]
    assert all(int(count) == 0 for count in summary.groups()), output[-6000:]
    assert returncode == 0 and " 0 failures" in output, output[-3000:]
