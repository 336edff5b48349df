"""Settings every stage reads from the environment.

CDNAJIT_CACHE_DIR is the folder of the persistent compile cache (runtime/cache.py) and of the GEMM
tuning database (libs/blas/tuning.py); unset, it is the user's cache folder.
"""
import os

CACHE_DIR_ENV = "CDNAJIT_CACHE_DIR"


def cache_directory() -> str:
    """$CDNAJIT_CACHE_DIR, else $XDG_CACHE_HOME/cdnajit, else ~/.cache/cdnajit (read at each call,
    so a program may point it elsewhere at any time)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cdnajit")
