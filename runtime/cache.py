"""The persistent compile cache: compiled work on disk, keyed by what it was compiled from.

    cache = default_cache()                       # $CDNAJIT_CACHE_DIR, else $XDG_CACHE_HOME/cdnajit
    key = cache.key("kernel", kernel_text)        # or ~/.cache/cdnajit
    entry = cache.load(key)                       # (metadata dict, payload bytes), or None
    cache.store(key, {"kind": "object"}, object_code)

A key is the SHA-256 of the entry's kind, the text it was compiled from (kernel IR, graph IR), the
host target (triple, CPU, CPU features) and the compiler version. The version is the cdnajit and
llvmlite versions plus a digest of the compiler's own sources (ir/, passes/, codegen/, runtime/,
libs/), so object code made by an older checkout of the compiler is never reused.

An entry is one file `<key>.bin`: a fixed binary header (magic, metadata length, payload length,
SHA-256 of metadata and payload), the metadata as JSON, then the payload (raw bytes: object code,
constant data). Nothing is unpickled. Files are written to a temporary file in the cache folder
and renamed over the entry (os.replace), so a reader sees a whole entry or none. An entry whose
header or hash does not check out is reported with a warning naming the file and treated as a
miss; the caller compiles again and its store replaces the entry.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import tempfile
import warnings
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..codegen.fork_safe import ForkSafeLock
from ..environment import cache_directory

MAGIC = b"cdnajit1"                      # the file format's name and version
HEADER = struct.Struct("<8sQQ32s")       # magic, metadata bytes, payload bytes, sha256(metadata + payload)
COMPILER_FOLDERS = ("ir", "passes", "codegen", "runtime", "libs")

_counts_lock = ForkSafeLock()  # counts and warnings of every cache, for a moment


@functools.cache
def compiler_version() -> str:
    from .. import __version__
    root = Path(__file__).resolve().parent.parent
    sources = hashlib.sha256()
    for folder in COMPILER_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            sources.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"cdnajit {__version__}; llvmlite {llvmlite.__version__}; sources {sources.hexdigest()[:16]}"


@functools.cache
def host_target() -> str:
    """The target the host object code is compiled for: triple, CPU name and CPU features."""
    llvm.initialize_native_target()
    return f"{llvm.get_process_triple()}; {llvm.get_host_cpu_name()}; {llvm.get_host_cpu_features().flatten()}"


class CompileCache:
    """Entries in one folder; `hits`, `misses` and `corrupt` count this object's loads."""

    def __init__(self, directory: str | os.PathLike, target: str | None = None, version: str | None = None):
        self.directory = Path(directory)
        self.target = target if target is not None else host_target()
        self.version = version if version is not None else compiler_version()
        self.hits = self.misses = self.corrupt = 0
        self._warned: set[str] = set()   # "read", "write": folder problems are reported once

    def key(self, kind: str, text: str) -> str:
        digest = hashlib.sha256()
        for part in (kind, self.target, self.version, text):
            encoded = part.encode()
            digest.update(len(encoded).to_bytes(8, "little") + encoded)
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.bin"

    def load(self, key: str) -> tuple[dict, bytes] | None:
        """The entry stored under `key`, or None (a miss; a corrupt entry warns and is a miss too)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no such entry
            data = None
        except OSError as error:
            self.warn_once("read", f"cannot read {path}: {error}")
            data = None
        entry = None if data is None else self.decode(data)
        with _counts_lock:
            if entry is not None:
                self.hits += 1
                return entry
            self.misses += 1
            if data is not None:
                self.corrupt += 1
        if data is not None:
            warnings.warn(f"cdnajit compile cache: corrupt entry {path}; compiling again and replacing it",
                          RuntimeWarning, stacklevel=2)
        return None

    @staticmethod
    def decode(data: bytes) -> tuple[dict, bytes] | None:
        if len(data) < HEADER.size:
            return None
        magic, meta_size, payload_size, digest = HEADER.unpack_from(data)
        body = data[HEADER.size:]
        if magic != MAGIC or len(body) != meta_size + payload_size or hashlib.sha256(body).digest() != digest:
            return None
        try:
            meta = json.loads(body[:meta_size])
        except ValueError:
            return None
        return meta, body[meta_size:]

    def store(self, key: str, meta: dict, payload: bytes) -> None:
        """Write the entry atomically; a cache that cannot be written warns once and is skipped."""
        meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
        body = meta_bytes + payload
        data = HEADER.pack(MAGIC, len(meta_bytes), len(payload), hashlib.sha256(body).digest()) + body
        temporary = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temporary, self.path(key))
        except OSError as error:
            if temporary is not None and os.path.exists(temporary):
                os.unlink(temporary)
            self.warn_once("write", f"cannot write to {self.directory}: {error}; "
                                    "compiled code is not kept across processes")

    def warn_once(self, problem: str, message: str) -> None:
        with _counts_lock:
            if problem in self._warned:
                return
            self._warned.add(problem)
        warnings.warn(f"cdnajit compile cache: {message}", RuntimeWarning, stacklevel=3)


_caches: dict[str, CompileCache] = {}
_caches_lock = ForkSafeLock()


def default_cache() -> CompileCache:
    """The cache of the folder the environment names now (one object per folder, so counts add up)."""
    directory = cache_directory()
    with _caches_lock:
        if directory not in _caches:
            _caches[directory] = CompileCache(directory)
        return _caches[directory]
