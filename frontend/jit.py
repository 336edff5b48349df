"""`jit`, `make_graph` and the `Lowered`/`Compiled` stages, in the manner of jax.jit.

A jitted function is traced once per signature: the argument tree structure, each dynamic
leaf's shape, dtype and weak type, and the static arguments' values. Calls with a known
signature reuse the compiled executable without retracing. The executables of the most recently
used signatures are kept (frontend/lru_cache.py; `cache_size`, by default $CDNAJIT_JIT_CACHE_SIZE
or 256): a function called with ever new shapes frees the native code of the oldest ones, and
compiles them again (from the persistent cache) when they come back.

Backends: "compiled" (the default) runs the pass pipeline and the kernels of
runtime/executable.py; "interpret" runs the graph with the reference interpreter (the oracle).
A call whose arguments are all numpy arrays (no keywords, no static arguments) looks its
executable up by the arrays' shapes and dtype numbers alone, the common case made cheap.

`target` (ir/targets.py, default gfx942) is the AMDGPU target the kernels are tiled for and
reported on. A `Compiled` program's reports (`kernels`, `report()`, `cost_analysis()`, the AMDGPU
stages of `as_text`, `code_object`, `save_report`) come from runtime/report.py's ProgramReport,
made on first use: the AMDGPU backend runs only when one of them is asked for, or when
CDNAJIT_DUMP_DIR asks for the dumps.
"""
from __future__ import annotations

import functools
import inspect
import os

import numpy as np

from ..errors import TracingError, TracingTypeError
from ..ir.core import Module, Value
from ..ir.interpreter import interpret
from ..ir.targets import TARGETS, Target, get_target
from ..ir.types import TensorType, dtype_name
from ..runtime import html_report
from ..runtime.executable import Executable
from ..runtime.report import STAGES, KernelReport, ProgramReport
from .dtypes import float0, is_float0
from .lru_cache import LRUCache
from .pytree import tree_flatten, tree_unflatten
from .sharding import ShardedArray
from .tracing import (Tracer, as_tracer, check_array_like, current_trace, is_python_scalar, located, new_trace,
                      python_scalar_dtype)

BACKENDS = ("compiled", "interpret")
DUMP_DIR_ENV = "CDNAJIT_DUMP_DIR"


def targets() -> list[str]:
    """The AMDGPU targets `jit(..., target=)` accepts, the default first."""
    return list(TARGETS)


def leaf_signature(leaf) -> tuple[TensorType | None, bool | tuple]:
    """The (type, weak_type) a dynamic argument leaf is traced as; (None, shape) for a float0 leaf,
    which is no parameter of the program (it holds no data): the function sees float0 zeros."""
    if is_float0(leaf):
        return None, tuple(leaf.shape)
    if is_python_scalar(leaf):
        dtype = python_scalar_dtype(leaf)
        return TensorType(dtype, ()), dtype != "bool"
    array = leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)
    return TensorType(dtype_name(array.dtype), tuple(array.shape)), False


def unflattener(out_tree, float0_outputs=None):
    """`leaves -> output pytree`, short-cut for the common trees (one array, a flat tuple). `float0_outputs`
    (position -> array) are the outputs of dtype float0, which the program does not compute: they are
    put back among its outputs."""
    if float0_outputs:
        def with_float0(leaves):
            leaves = iter(leaves)
            return tree_unflatten(out_tree, [float0_outputs[i] if i in float0_outputs else next(leaves)
                                             for i in range(out_tree.num_leaves)])
        return with_float0
    if out_tree.kind == "leaf":
        return lambda leaves: leaves[0]
    if out_tree.kind == "tuple" and all(child.kind == "leaf" for child in out_tree.children):
        return tuple
    return lambda leaves: tree_unflatten(out_tree, leaves)


class Compiled:
    """An executable for one signature: runs flat argument arrays, returns the output pytree."""

    def __init__(self, module: Module, out_tree, backend: str, executable: Executable | None = None,
                 float0_outputs=None, float0_inputs=frozenset()):
        self.module = module
        self.out_tree = out_tree
        self.backend = backend
        self.executable = executable
        self.unflatten = unflattener(out_tree, float0_outputs)
        self.run = executable if executable is not None else functools.partial(interpret, module)
        if float0_inputs:   # argument leaves of dtype float0 are no parameters of the program
            run = self.run
            self.run = lambda *leaves: run(*(leaf for i, leaf in enumerate(leaves) if i not in float0_inputs))
        self._program_report: ProgramReport | None = None

    def call_flat(self, leaves) -> list[np.ndarray]:
        return self.run(*leaves)

    def program_report(self, what: str) -> ProgramReport:
        """The executable's reports; `what` names what was asked for, for the interpreter's error."""
        if self.executable is None:
            raise ValueError(f"the {self.backend} backend has no {what}; compile with backend='compiled'")
        if self._program_report is None:
            self._program_report = ProgramReport(self.executable)
        return self._program_report

    def as_text(self, stage: str = "graph") -> str:
        """The program at one stage: "graph" (traced), "optimized" (after the passes), "kernel"
        (kernel IR), "llvm-host", "llvm-amdgpu" or "asm" (gfx9 assembly), each kernel headed by its name,
        or "schedule" (the steps that run the kernels: launches, native loops, in-place updates)."""
        if stage == "graph":
            return str(self.module)
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
        return self.program_report(f"{stage!r} stage").stage_text(stage)

    @property
    def target(self) -> Target | None:
        return self.executable.target if self.executable is not None else None

    @property
    def kernels(self) -> list[KernelReport]:
        """One report per kernel: origin, launch, registers, LDS, occupancy, roofline, host time once profiled."""
        return self.program_report("kernels").kernels

    def report(self) -> str:
        """The kernel table, as text."""
        return self.program_report("kernels").table()

    def cost_analysis(self) -> dict:
        """FLOPs, transcendentals, bytes accessed and modelled time, in the manner of JAX's."""
        return self.program_report("kernels").cost_analysis()

    def code_object(self, name: str) -> bytes:
        """The HSA code object (linked ELF) of the kernel `name`, for hipModuleLoadData."""
        return self.program_report("kernels").code_object(name)

    def save_report(self, path: str | os.PathLike) -> None:
        """Write the HTML report (kernel table, fused graph, roofline chart) to `path`."""
        html_report.save(self.program_report("kernels"), path)

    def profile(self, *args, **kwargs):
        """Call the program once with each kernel launch timed; `kernels` then holds host times."""
        report = self.program_report("kernels")
        leaves, _ = tree_flatten((args, kwargs))
        outputs, report.profile = self.executable.profile(*leaves)
        return self.unflatten(outputs)

    def __call__(self, *args, **kwargs):
        leaves, _ = tree_flatten((args, kwargs))
        return self.unflatten(self.run(*leaves))


class Lowered:
    """A traced function, before compilation: `.as_text()` is its graph IR."""

    def __init__(self, module: Module, out_tree, backend: str, target: Target | None = None, float0_outputs=None,
                 float0_inputs=frozenset()):
        self.module = module
        self.out_tree = out_tree
        self.backend = backend
        self.target = target
        self.float0_outputs = float0_outputs or {}   # output position -> float0 array (see `unflattener`)
        self.float0_inputs = float0_inputs           # argument leaf positions of dtype float0 (not parameters)

    def as_text(self) -> str:
        return str(self.module)

    def compile(self) -> Compiled:
        from .sharded_jit import compile_constrained, constraint_mesh
        mesh = constraint_mesh(self.module)   # lax.with_sharding_constraint: partitioned over its mesh
        if mesh is not None:
            return compile_constrained(self, mesh)
        if self.backend == "interpret":
            return Compiled(self.module, self.out_tree, self.backend, float0_outputs=self.float0_outputs,
                            float0_inputs=self.float0_inputs)
        compiled = Compiled(self.module, self.out_tree, self.backend,
                            Executable.compile(self.module, target=self.target), self.float0_outputs,
                            self.float0_inputs)
        dump_dir = os.environ.get(DUMP_DIR_ENV)
        if dump_dir:
            compiled.program_report("dumps").write_dumps(dump_dir)
        return compiled


def function_name(fn) -> str:
    """A name for a traced callable: its own, the wrapped function's for a functools.partial, or the
    class name of a callable object (neither of which has a __name__)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", type(fn).__name__)


def resolve_static_args(fn, static_argnums, static_argnames) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """jax.jit's rules: given only numbers (or only names), the other is inferred from fn's signature,
    so a static parameter is static whether passed by position or by keyword. Numbers beyond fn's
    positional parameters and names it does not take are a ValueError, as in JAX."""
    nums_given = static_argnums is not None and static_argnums != ()
    names_given = static_argnames is not None and static_argnames != ()
    argnums = () if static_argnums is None else (
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
    argnames = () if static_argnames is None else (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # some builtins have no signature: nothing to infer or check
        return argnums, argnames
    either = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if nums_given and not names_given:
        argnames = tuple(k for i, (k, p) in enumerate(parameters.items()) if p.kind == either and i in argnums)
    elif names_given and not nums_given:
        argnums = tuple(i for i, (k, p) in enumerate(parameters.items()) if p.kind == either and k in argnames)
    kinds = [p.kind for p in parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY, either) for k in kinds)
        if argnums and (-min(argnums) > positional or max(argnums) >= positional):
            raise ValueError(f"jit of {function_name(fn)}: static_argnums={argnums}, but the function only "
                             f"accepts {positional} positional arguments")
    positional_only = {k for k, p in parameters.items()
                       if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)}
    if positional_only & set(argnames):
        raise ValueError(f"jit of {function_name(fn)}: static_argnames {sorted(positional_only & set(argnames))} "
                         f"are positional-only parameters")
    keywords = {k for k, p in parameters.items() if p.kind in (either, inspect.Parameter.KEYWORD_ONLY)}
    if inspect.Parameter.VAR_KEYWORD not in kinds and set(argnames) - keywords:
        raise ValueError(f"jit of {function_name(fn)}: static_argnames {sorted(set(argnames) - keywords)} "
                         f"are not parameters of the function")
    return argnums, argnames


def resolve_donated_args(fn, donate_argnums, static_argnums) -> tuple[int, ...]:
    """donate_argnums as a tuple, checked: ints, not static, within the positional parameters."""
    argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums or ())
    if not all(isinstance(i, int) for i in argnums):
        raise TypeError(f"jit of {function_name(fn)}: donate_argnums must be ints, got {argnums!r}")
    if set(argnums) & set(static_argnums):
        raise ValueError(f"jit of {function_name(fn)}: arguments {sorted(set(argnums) & set(static_argnums))} "
                         f"are both static and donated")
    try:
        kinds = [p.kind for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return argnums
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                         for k in kinds)
        if argnums and (-min(argnums) > positional or max(argnums) >= positional):
            raise ValueError(f"jit of {function_name(fn)}: donate_argnums={argnums}, but the function only "
                             f"accepts {positional} positional arguments")
    return argnums


class Jitted:
    def __init__(self, fn, static_argnums=(), static_argnames=(), backend="compiled", target=None,
                 donate_argnums=(), in_shardings=None, out_shardings=None):
        if not callable(fn):
            raise TypeError(f"jit expects a callable, got {type(fn).__name__}")
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        self.fn = fn
        self.name = function_name(fn)
        self.target = target if isinstance(target, Target) else get_target(target)
        self.static_argnums, self.static_argnames = resolve_static_args(fn, static_argnums, static_argnames)
        self.donate_argnums = resolve_donated_args(fn, donate_argnums, self.static_argnums)
        self.backend = backend
        self.in_shardings, self.out_shardings = in_shardings, out_shardings  # frontend/sharded_jit.py
        self.trace_count = 0
        self._cache = LRUCache()        # signature -> Compiled
        self._array_cache = LRUCache()  # array_key -> Compiled, for calls on numpy arrays and ShardedArrays only
        functools.update_wrapper(self, fn)

    @property
    def cache_size(self) -> int:
        """How many signatures' executables this function keeps, the least recently used forgotten first."""
        return self._cache.size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"cache_size must be a positive int, got {size!r}")
        self._cache.size = self._array_cache.size = size

    def _split(self, args, kwargs):
        """(static key, dynamic args with static ones replaced by None, dynamic kwargs)."""
        nargs = len(args)
        # As in JAX, a static position past the call's positional arguments is skipped: that
        # argument was passed by keyword (static by its inferred name) or left to its default.
        for i in self.static_argnums:
            if i < -nargs:
                raise TracingError(located(f"static_argnums {i} is out of range for {nargs} positional arguments"))
        static_positions = sorted({i % nargs for i in self.static_argnums if i < nargs})
        static = [(i, args[i]) for i in static_positions]
        static += [(name, kwargs[name]) for name in sorted(self.static_argnames) if name in kwargs]
        try:
            key = tuple(static)
            hash(key)
        except TypeError:
            raise TracingTypeError(located(
                f"static arguments must be hashable; got {[type(v).__name__ for _, v in static]}")) from None
        dynamic_args = tuple(None if i in static_positions else a for i, a in enumerate(args))
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return key, dynamic_args, dynamic_kwargs

    def _flatten(self, args, kwargs):
        """(static key, the dynamic arguments' leaves, their tree)."""
        static_key, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        return static_key, leaves, in_tree

    def _signature(self, args, kwargs, flat=None):
        static_key, leaves, in_tree = flat if flat is not None else self._flatten(args, kwargs)
        for leaf in leaves:
            if not is_float0(leaf):
                check_array_like(leaf, f"argument of {self.name}")
        types = tuple(leaf_signature(leaf) for leaf in leaves)
        return (in_tree, types, static_key), leaves

    def _trace(self, args, kwargs, signature) -> Lowered:
        in_tree, types, static_key = signature
        static_positions = {k for k, _ in static_key if isinstance(k, int)}
        self.trace_count += 1
        float0_inputs = frozenset(i for i, (t, _) in enumerate(types) if t is None)
        with new_trace() as trace:
            params = [Tracer(Value(t), trace, weak) for t, weak in types if t is not None]
            trace.region.params = [p.value for p in params]
            param_iter = iter(params)
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, [np.zeros(shape, float0) if t is None else next(param_iter)
                                                            for t, shape in types])
            call_args = [args[i] if i in static_positions else a for i, a in enumerate(dyn_args)]
            call_kwargs = {**dyn_kwargs, **{k: v for k, v in static_key if isinstance(k, str)}}
            out = self.fn(*call_args, **call_kwargs)
            out_leaves, out_tree = tree_flatten(out)
            float0_outputs = {i: leaf for i, leaf in enumerate(out_leaves) if is_float0(leaf)}
            outputs = [as_tracer(leaf, f"output of {self.name}") for i, leaf in enumerate(out_leaves)
                       if i not in float0_outputs]
            trace.region.outputs = [o.value for o in outputs]
        parameter_of = {leaf: k for k, leaf in enumerate(i for i in range(len(types)) if i not in float0_inputs)}
        donated = frozenset(parameter_of[i] for i in self.donated_leaves(dyn_args) if i in parameter_of)
        return Lowered(Module(self.name, trace.region, donated), out_tree, self.backend, self.target, float0_outputs,
                       float0_inputs)

    def donated_leaves(self, dyn_args) -> frozenset:
        """The flat argument positions (module parameters) of the donated arguments' leaves: each
        positional argument's leaves come in order, before the keyword arguments'."""
        nargs = len(dyn_args)
        positions = {i % nargs for i in self.donate_argnums if -nargs <= i < nargs}
        donated, start = set(), 0
        for i, arg in enumerate(dyn_args):
            count = len(tree_flatten(arg)[0])
            if i in positions:
                donated.update(range(start, start + count))
            start += count
        return frozenset(donated)

    def sharded(self, leaves) -> bool:
        """Whether a call with these argument leaves is partitioned over devices (frontend/sharded_jit.py)."""
        if self.in_shardings is not None or self.out_shardings is not None:
            return True
        from .sharded_jit import is_sharded
        return is_sharded(leaves)

    def lower(self, *args, **kwargs) -> Lowered:
        flat = self._flatten(args, kwargs)
        if self.sharded(flat[1]):
            from .sharded_jit import lower_sharded
            return lower_sharded(self, args, kwargs)
        signature, _ = self._signature(args, kwargs, flat)
        return self._trace(args, kwargs, signature)

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:  # called from another traced function: inline
            return self.fn(*args, **kwargs)
        key = None if kwargs or self.static_argnums else array_key(args)
        compiled = self._array_cache.get(key) if key is not None else None
        if compiled is not None:  # the leaves are `args` themselves
            return compiled.unflatten(compiled.run(*args))
        flat = self._flatten(args, kwargs)   # flattened once: the sharding test and the signature read it
        if self.sharded(flat[1]):
            return self.call_sharded(args, kwargs, key)
        signature, leaves = self._signature(args, kwargs, flat)
        compiled = self._cache.get(signature)
        if compiled is None:
            compiled = self._trace(args, kwargs, signature).compile()
            self._cache.put(signature, compiled)
        if key is not None:
            self._array_cache.put(key, compiled)
        return compiled.unflatten(compiled.run(*leaves))

    def call_sharded(self, args, kwargs, key=None):
        """A call partitioned over devices; its program kept under its signature and, given one,
        under the arguments' array_key (whose calls then take `__call__`'s first path)."""
        from .sharded_jit import lower_sharded, signature_key
        signature, leaves = signature_key(self, args, kwargs)
        compiled = self._cache.get(signature)
        if compiled is None:
            compiled = lower_sharded(self, args, kwargs).compile()
            self._cache.put(signature, compiled)
        if key is not None:
            self._array_cache.put(key, compiled)
        return compiled.unflatten(compiled.call_flat(leaves))

    def __get__(self, instance, owner):  # decorating a method binds like a function
        return self if instance is None else functools.partial(self, instance)


def array_key(args) -> tuple | None:
    """(shape, dtype number) of each argument when all are numpy arrays or ShardedArrays (a
    ShardedArray's sharding too), else None.

    Arrays alike but for byte order share a key, as they share a signature. Unsupported dtypes
    never get here: they fail the full signature check, so no executable is stored under them.
    """
    key = []
    for arg in args:
        kind = type(arg)
        if kind is ShardedArray:
            key.append(arg.sharding)
        elif kind is not np.ndarray:
            return None
        key.append(arg.shape)
        key.append(arg.dtype.num)
    return tuple(key)


def jit(fn=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), backend="compiled", target=None,
        in_shardings=None, out_shardings=None):
    """Trace `fn` once per signature and run it compiled for `target` (a name of `targets()`,
    default gfx942); usable bare or with arguments.

    `donate_argnums`, as in JAX: the arrays of these positional arguments may be written over by
    the call (an update such as `x.at[i].set(v)` of a donated `x` writes into the caller's array,
    and may be returned as the result): the caller must not use them afterwards. A donated
    array that is read-only, or shares memory with another argument, is copied first.

    `in_shardings` (a NamedSharding for every argument, or one per positional argument) and
    `out_shardings` (one for every result, or one per result), as in JAX: the program is
    partitioned over the devices of their mesh (frontend/sharding.py), as it is when an argument is
    a sharded array."""
    options = (static_argnums, static_argnames, backend, target, donate_argnums, in_shardings, out_shardings)
    if fn is None:
        return lambda f: Jitted(f, *options)
    return Jitted(fn, *options)


def make_graph(fn, *, static_argnums=(), static_argnames=()):
    """Like jax.make_jaxpr: `make_graph(f)(*args)` returns the traced graph-IR module."""
    jitted = fn if isinstance(fn, Jitted) else Jitted(fn, static_argnums, static_argnames)

    @functools.wraps(jitted.fn)
    def graph(*args, **kwargs) -> Module:
        return jitted.lower(*args, **kwargs).module
    return graph
