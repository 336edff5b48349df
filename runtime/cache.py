"""The persistent compile cache: compiled work on disk, keyed by what it was compiled from.

    cache = default_cache()                       # $CDNAJIT_CACHE_DIR, else $XDG_CACHE_HOME/cdnajit
    key = cache.key("kernel", kernel_text)        # or ~/.cache/cdnajit
    entry = cache.load(key)                       # (metadata dict, payload bytes), or None
    cache.store(key, {"kind": "object"}, object_code)

A key is the SHA-256 of the entry's kind, the text it was compiled from (kernel IR, graph IR), the
host target (triple, CPU, CPU features) and the compiler version. The version is the cdnajit and
llvmlite versions plus a digest of the compiler's own sources (ir/, passes/, lowering/,
libs/, codegen/, runtime/), so object code made by an older checkout of the compiler is never reused.

An entry is one file `<key>.bin`: a fixed binary header (magic, the entry's own key, metadata
length, payload length, SHA-256 of the rest of the header, the metadata and the payload), the
metadata as JSON, then the payload (raw bytes: object code, constant data). Nothing is unpickled.
A load checks that the file holds the key it is looked up under, so an intact entry copied or
moved to another key's name is not run as that key's code. Only a regular file is read (opened
without following a symbolic link and without blocking, then checked with fstat), and only up to
`max_entry_bytes`, so a link to a device or a FIFO in the folder costs neither memory nor a hang.
Files are written to a temporary file in the cache folder and renamed over the entry (os.replace),
so a reader sees a whole entry or none, and a bad entry of any file type is replaced whole. An
entry that does not check out is reported with a warning naming the file and the problem and
treated as a miss; the caller compiles again and its store replaces the entry.

`library_cache()` is the store of the libraries' prebuilt kernels (`python -m cdnajit warm`): the
same entries under the same keys, in a folder of the installation rather than the user's cache, so
an empty cache still finds them. Its entries record the compiler version that made them, and
`remove_other_versions` clears out those an older checkout left.
"""
from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import stat
import struct
import tempfile
import warnings
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..codegen.fork_safe import ForkSafeLock
from ..environment import cache_directory, library_directory
from ..version import __version__

COMPILER_FOLDERS = ("ir", "passes", "lowering", "libs", "codegen", "runtime")
MAGIC = b"cdnajit2"                      # the file format's name and version
HEADER = struct.Struct("<8s32sQQ32s")    # magic, key, metadata bytes, payload bytes, digest
DIGESTED = struct.calcsize("<8s32sQQ")   # the digest covers the header before it, metadata and payload
MAX_ENTRY_BYTES = 1 << 30                # a program's constant data can be large; a device cannot be read
# A regular file, opened without following a link (O_NOFOLLOW: ELOOP on Linux, EMLINK on BSDs) or
# waiting for a FIFO's writer (O_NONBLOCK).
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
NOT_REGULAR_ERRNOS = {errno.ELOOP, errno.EMLINK, errno.ENXIO}  # ENXIO: a socket

_counts_lock = ForkSafeLock()  # counts and warnings of every cache, for a moment


@functools.cache
def compiler_version() -> str:
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


class CorruptEntry(Exception):
    """An entry file that cannot be used; the message says why."""


class CompileCache:
    """Entries in one folder; `hits`, `misses` and `corrupt` count this object's loads."""

    def __init__(self, directory: str | os.PathLike, target: str | None = None, version: str | None = None,
                 max_entry_bytes: int = MAX_ENTRY_BYTES):
        self.directory = Path(directory)
        self.target = target if target is not None else host_target()
        self.version = version if version is not None else compiler_version()
        self.max_entry_bytes = max_entry_bytes
        self.hits = self.misses = self.corrupt = 0
        self._warned: set[str] = set()   # "read", "write", "size": folder problems are reported once
        self._corrupt_keys: set[str] = set()  # found corrupt and not stored since: a miss, not read again

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
        entry = problem = None
        if key in self._corrupt_keys:
            with _counts_lock:
                self.misses += 1
            return None
        try:
            data = self.read(path)
            if data is not None:
                entry = self.decode(data, key)
        except CorruptEntry as error:
            problem = str(error)
        except OSError as error:
            self.warn_once("read", f"cannot read {path}: {error}")
        with _counts_lock:
            if entry is not None:
                self.hits += 1
                return entry
            self.misses += 1
            if problem is not None:
                self.corrupt += 1
                self._corrupt_keys.add(key)
        if problem is not None:
            warnings.warn(f"cdnajit compile cache: corrupt entry {path} ({problem}); compiling again and replacing it",
                          RuntimeWarning, stacklevel=2)
        return None

    def read(self, path: Path) -> bytes | None:
        """The bytes of the regular file at `path`, or None if there is none."""
        try:
            fd = os.open(path, OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            if error.errno in NOT_REGULAR_ERRNOS:
                raise CorruptEntry("not a regular file") from None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise CorruptEntry("not a regular file")
            if info.st_size > self.max_entry_bytes:
                raise CorruptEntry(f"{info.st_size} bytes, over the limit of {self.max_entry_bytes}")
            chunks, remaining = [], info.st_size
            while remaining:  # a regular file's read returns all unless at its end
                chunk = os.read(fd, remaining)
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    @staticmethod
    def decode(data: bytes, key: str) -> tuple[dict, bytes]:
        """(metadata, payload) of an entry file's bytes, if they are a whole entry of `key`."""
        if len(data) < HEADER.size:
            raise CorruptEntry("shorter than a header")
        magic, stored_key, meta_size, payload_size, digest = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise CorruptEntry("not a cdnajit cache entry of this format")
        if len(data) != HEADER.size + meta_size + payload_size:
            raise CorruptEntry(f"{len(data)} bytes, the header says {HEADER.size + meta_size + payload_size}")
        if stored_key != bytes.fromhex(key):
            raise CorruptEntry(f"it holds the entry of key {stored_key.hex()}")
        hashed = hashlib.sha256(memoryview(data)[:DIGESTED])
        hashed.update(memoryview(data)[HEADER.size:])
        if hashed.digest() != digest:
            raise CorruptEntry("its SHA-256 does not match")
        try:
            meta = json.loads(data[HEADER.size:HEADER.size + meta_size])
        except ValueError:
            raise CorruptEntry("its metadata is not JSON") from None
        return meta, data[HEADER.size + meta_size:]

    @staticmethod
    def encode(key: str, meta: dict, payload: bytes) -> bytes:
        meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
        head = struct.pack("<8s32sQQ", MAGIC, bytes.fromhex(key), len(meta_bytes), len(payload))
        digest = hashlib.sha256(head + meta_bytes + payload).digest()
        return head + digest + meta_bytes + payload

    def store(self, key: str, meta: dict, payload: bytes) -> None:
        """Write the entry atomically; a cache that cannot be written warns once and is skipped."""
        data = self.encode(key, meta, payload)
        if len(data) > self.max_entry_bytes:
            self.warn_once("size", f"an entry of {len(data)} bytes is over the limit of {self.max_entry_bytes}; "
                                   "it is not kept across processes")
            return
        temporary = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temporary, self.path(key))
            self._corrupt_keys.discard(key)
        except OSError as error:
            if temporary is not None and os.path.exists(temporary):
                os.unlink(temporary)
            self.warn_once("write", f"cannot write to {self.directory}: {error}; "
                                    "compiled code is not kept across processes")

    def remove_other_versions(self) -> int:
        """Delete the entries whose metadata names a compiler version other than this one (entries
        that name none, or cannot be read, are not the store's to judge: a folder shared with a
        compile cache keeps them); the number deleted."""
        removed = 0
        for path in self.directory.glob("*.bin"):
            try:
                data = self.read(path)
                meta = self.decode(data, path.stem)[0] if data is not None else {}
            except (CorruptEntry, OSError, ValueError):
                meta = {}
            if meta.get("compiler", self.version) != self.version:
                path.unlink(missing_ok=True)
                removed += 1
        return removed

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
    return cache_at(cache_directory())


def library_cache() -> CompileCache:
    """The store of the libraries' prebuilt kernels (environment.library_directory): entries of the
    same format and keys, written by `python -m cdnajit warm` and read where the cache misses."""
    return cache_at(library_directory())


def cache_at(directory: str) -> CompileCache:
    with _caches_lock:
        if directory not in _caches:
            _caches[directory] = CompileCache(directory)
        return _caches[directory]
