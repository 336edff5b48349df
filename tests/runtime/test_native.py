"""runtime/native.py: the worker pool's spin-wait, which reads a word until it reaches a target or
a number of reads has been made."""
import ctypes
import threading
import time

from cdnajit.runtime.native import native_wait


def test_a_word_already_at_the_target_returns_at_once():
    wait, _ = native_wait()
    word = ctypes.c_int64(7)
    assert wait(ctypes.addressof(word), 5, 4 * 10 ** 8) == 7   # a limit of about 10 s: never reached


def test_a_word_that_never_moves_returns_after_the_limit():
    wait, _ = native_wait()
    word = ctypes.c_int64(3)
    assert wait(ctypes.addressof(word), 4, 1000) == 3


def test_a_word_set_by_another_thread_ends_the_wait():
    wait, _ = native_wait()
    word = ctypes.c_int64(0)

    def set_later():
        time.sleep(0.01)
        word.value = 2
    setter = threading.Thread(target=set_later)
    setter.start()
    # ctypes releases the GIL for the call, so the setter runs while this thread spins.
    assert wait(ctypes.addressof(word), 1, 4 * 10 ** 8) == 2
    setter.join()
