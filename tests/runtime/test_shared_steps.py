"""runtime/shared_steps.py's native driver in one process: the test plays process 1 of 2, writing its
flags, identity and slot into a segment of its own, and runs process 0's ops."""
import ctypes
import time

import numpy as np

from cdnajit.frontend.distributed import ReductionStep
from cdnajit.runtime import shared_steps as shared
from cdnajit.runtime.launch import address, aligned_empty
from cdnajit.libs.ccl.kernels import ITEMS

HALF = 4096            # the bytes of a half: the 2 identities, then the slots at SLOT
SLOT = 2 * shared.IDENTITY_BYTES


class Segment:
    """Two processes' flags and two halves, as SharedSegment lays them out (small slots)."""

    def __init__(self):
        self.words = aligned_empty(((shared.CONTROL_BYTES * 2 + 2 * HALF) // 8,), np.int64)
        self.words[:] = 0
        self.base = address(self.words)
        self.halves = self.base + 2 * shared.CONTROL_BYTES

    def flag(self, process: int, flag: int) -> int:
        return int(self.words[(process * shared.CONTROL_BYTES + flag * shared.FLAG_BYTES) // 8])

    def set_flag(self, process: int, flag: int, value: int):
        self.words[(process * shared.CONTROL_BYTES + flag * shared.FLAG_BYTES) // 8] = value

    def half(self, sequence: int, offset: int, count: int, dtype) -> np.ndarray:
        start = 2 * shared.CONTROL_BYTES + sequence % 2 * HALF + offset
        return self.words.view(np.uint8)[start:start + count * np.dtype(dtype).itemsize].view(dtype)


def run(segment: Segment, ops: list, sequence: int, timeout_s: float = 5.0, run_address: int = 0,
        input_address: int = 0):
    """Process 0's ops (rows of KIND, A, B, C, COUNT, WORKGROUPS, PARALLEL); (status, STEP)."""
    counter = ctypes.c_int64(0)
    plan = np.zeros(shared.HEADER_WORDS + shared.OP_WORDS * len(ops), np.int64)
    plan[:shared.HEADER_WORDS] = [run_address, ctypes.addressof(counter), 0, 0, 2, 0, segment.base, segment.halves,
                                  HALF, int(timeout_s * 1e9), len(ops), sequence, 0, 0, 0, input_address, 0]
    plan[shared.HEADER_WORDS:] = np.array(ops, np.int64).reshape(-1)
    status = shared.shared_steps_function()[0](address(plan))
    return status, int(plan[shared.STEP])


def identity(signature: int) -> list:
    """Process 0's identity: a COPY of `signature` (kept alive by the caller) into the call's half."""
    return [shared.COPY, shared.ABSOLUTE, address(signature), 0, 0, shared.SHARED, 0, 8, 0, 0]


def test_a_call_signals_waits_checks_and_copies_from_the_other_process_in_the_calls_half():
    segment, mine = Segment(), np.array([1234], np.int64)
    out = np.zeros(3, np.float32)
    for sequence in (1, 2):          # the two halves
        segment.half(sequence, shared.IDENTITY_BYTES, 1, np.int64)[0] = 1234        # process 1's signature
        segment.half(sequence, SLOT, 3, np.float32)[:] = [sequence, 2, 3]            # and message
        segment.set_flag(1, shared.READY, sequence)
        ops = [identity(mine), [shared.SIGNAL, 0, shared.READY] + [0] * 7, [shared.WAIT, 0, shared.READY] + [0] * 7,
               [shared.CHECK] + [0] * 9, [shared.COPY, shared.SHARED, SLOT, 0, 0, shared.ABSOLUTE, address(out), 12, 0, 0]]
        assert run(segment, ops, sequence) == (shared.FINISHED, len(ops))
        assert segment.flag(0, shared.READY) == sequence
        assert segment.half(sequence, 0, 1, np.int64)[0] == 1234
        np.testing.assert_array_equal(out, [sequence, 2, 3])


def test_a_wait_for_a_process_behind_times_out_and_a_different_signature_is_a_mismatch():
    segment, mine = Segment(), np.array([1234], np.int64)
    segment.set_flag(1, shared.READY, 4)           # process 1 still at call 4
    ops = [identity(mine), [shared.SIGNAL, 0, shared.READY] + [0] * 7, [shared.WAIT, 0, shared.READY] + [0] * 7]
    start = time.monotonic()
    assert run(segment, ops, 5, timeout_s=0.05) == (shared.TIMED_OUT, 2)
    assert 0.05 <= time.monotonic() - start < 5
    segment.set_flag(1, shared.READY, 5)
    segment.half(5, shared.IDENTITY_BYTES, 1, np.int64)[0] = 4321
    assert run(segment, ops + [[shared.CHECK] + [0] * 9], 5) == (shared.MISMATCH, 3)


def test_a_reduction_runs_the_ccl_kernel_on_the_two_slots_operand_a_first():
    segment, mine = Segment(), np.array([7], np.int64)
    kernel = ReductionStep.get("sum", np.dtype(np.float32)).kernel
    count = 37
    a, b = segment.half(3, SLOT, count, np.float32), segment.half(3, SLOT + 256, count, np.float32)
    a[:], b[:] = np.arange(count), 0.5
    out = aligned_empty((count,), np.float32)
    ops = [[shared.REDUCE, shared.SHARED, SLOT, shared.SHARED, SLOT + 256, shared.ABSOLUTE, address(out), count,
            -(-count // ITEMS), 0]]
    assert run(segment, ops, 3, run_address=kernel.run_address) == (shared.FINISHED, 1)
    np.testing.assert_array_equal(out, np.arange(count) + np.float32(0.5))


def test_input_operands_read_the_callers_message_at_the_input_base():
    # A reduce_scatter's ops: the part the other process reduces copied from the input into this
    # process's slot, its own part reduced from the other's slot and its input, the other's first.
    segment = Segment()
    kernel = ReductionStep.get("sum", np.dtype(np.float32)).kernel
    count = 37
    message = aligned_empty((2 * count,), np.float32)
    message[:] = np.arange(2 * count)
    theirs = segment.half(2, SLOT + 512, count, np.float32)          # the other process's slot
    theirs[:] = 0.25
    out = aligned_empty((count,), np.float32)
    ops = [[shared.COPY, shared.INPUT, 4 * count, 0, 0, shared.SHARED, SLOT + 4 * count, 4 * count, 0, 0],
           [shared.REDUCE, shared.SHARED, SLOT + 512, shared.INPUT, 0, shared.ABSOLUTE, address(out), count,
            -(-count // ITEMS), 0]]
    assert run(segment, ops, 2, run_address=kernel.run_address, input_address=address(message)) == \
        (shared.FINISHED, 2)
    np.testing.assert_array_equal(segment.half(2, SLOT + 4 * count, count, np.float32), message[count:])
    np.testing.assert_array_equal(out, np.float32(0.25) + message[:count])
