"""The executable of a compiled program: its kernels and the host-side schedule that runs them.

    executable = Executable.compile(module)       # a traced graph module
    outputs = executable(*arrays)                 # numpy arrays in, fresh numpy arrays out

Compiling runs the pass pipeline (passes/manager.py), then makes each top-level op of a region one
step of a schedule:
  - `constant`: an array the executable holds;
  - `while` / `cond`: a loop / branch that runs its regions' steps in turn, reading the loop
    condition and the branch index from memory;
  - `reshape`: a view of its operand (every array the schedule holds is C-contiguous), a bitcast
    as in XLA;
  - `host_callback` / `pure_callback`: a call of the user's Python function on its operands'
    values, which writes its results (runtime/native_schedule.py); a program holding one is not
    stored in the persistent cache, whose entries outlive the process's registry of callbacks;
  - any other op: a kernel from `lowering.emitters.emit_kernel`, its arrays bound by the parameter
    contract of lowering/emitters.py (operands, then results, row-major). An op whose results are
    all empty needs no kernel: its step only allocates them.
Each value has a slot, one per SSA value. The schedule is plain data (`plan`, JSON-able); a call
runs it as one native function (runtime/native_schedule.py), its values in a per-call arena, its
results in fresh arrays: a call shares no scratch with another, so concurrent calls take no lock.

The persistent cache (runtime/cache.py) keeps each kernel's object code under its kernel IR text,
and the whole program (plan, constants and the schedule's object code) under the graph module's
text, so a program found there runs without the passes, the emitters or LLVM.

Kernels are tiled for one AMDGPU target (`target`, default gfx942), which the host runs as well:
both execute the very same kernels. `profile(*arrays)` runs a call with each launch timed: it runs
the schedule's steps in Python, one timed launch at a time (the `Block` steps below); the plain
call path has no timer.
"""
from __future__ import annotations

import ctypes
import re
import time

import numpy as np

from .. import libs  # noqa: F401  (registers the built-in libraries)
from ..codegen.host import WRITTEN_BUFFER_ALIGNMENT, is_aligned_buffer, llvm_module
from ..errors import CdnajitError
from ..ir.core import Module, Op, Region, walk
from ..ir.kernel import GlobalBuffer, Kernel, ScalarParam
from ..ir.ops.callback import CALLBACK_OPS
from ..ir.ops.library import cache_stamps
from ..ir.ops.shape import IN_PLACE_OPS
from ..ir.targets import Target, get_target
from ..ir.types import NUMPY_DTYPES
from ..ir.verifier import verify
from ..lowering.emitters import HOST_OPS, emit_kernel
from ..passes.manager import run_pipeline
from .cache import CompileCache, default_cache
from .launch import (CompiledKernel, address, aligned_copy, aligned_empty, allocation_error, object_codes,
                     result_allocator, pool_share, runs_in_parallel)
from .native_schedule import NativeSchedule, run_callback
from .schedule import ALIAS_OPS, needs_kernel


def schedule_ops(region: Region):
    """The ops the schedule runs, in order: a region's ops, each host op followed by its regions' ops."""
    for op in region.ops:
        yield op
        if op.name in HOST_OPS:
            for inner in op.regions:
                yield from schedule_ops(inner)


def dims(shape) -> list[int]:
    """A shape as JSON stores it."""
    return [int(d) for d in shape]


def op_source(op: Op) -> str:
    """The op's name and the user's line that made it; for a fusion, its last op that has a line."""
    if op.location:
        return f"{op.name} (at {op.location})"
    inner = next((inner for region in op.regions for inner in reversed(region.ops) if inner.location), None)
    return f"{inner.name} (in a {op.name}, at {inner.location})" if inner is not None else op.name


def kernel_name(module: Module, index: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_]', '_', module.name)}_{index}"


def kernel_ops(module: Module) -> list[Op]:
    """The ops of an optimized module that run as kernels, in schedule order."""
    return [op for op in schedule_ops(module.body) if needs_kernel(op)]


def emit_kernels(module: Module, target: Target | None = None) -> list[Kernel]:
    """The kernel of every kernel op of an optimized module, in schedule order."""
    return [emit_kernel(op, kernel_name(module, i), target) for i, op in enumerate(kernel_ops(module))]


def check_contract(op: Op, kernel: Kernel) -> None:
    """The kernel's parameters are one global buffer per operand, then per result, of their bytes
    (at the kernel's arguments), then any scalar parameters, each bound by the kernel's arguments."""
    values = list(op.operands) + list(op.results)
    buffers, scalars = kernel.params[:len(values)], kernel.params[len(values):]
    bound = dict(kernel.arguments)
    problem = None
    if len(buffers) != len(values) or not all(isinstance(p, GlobalBuffer) for p in buffers) \
            or any(isinstance(p, GlobalBuffer) for p in scalars):
        problem = f"{len(kernel.params)} parameters for {len(values)} operands and results"
    elif unbound := [p.name for p in scalars if p.name not in bound]:
        problem = f"scalar parameters {', '.join(unbound)} have no value in the kernel's arguments"
    else:
        for param, value in zip(buffers, values):
            # A buffer of a static count holds at least one element; a runtime count is the value's own.
            elements = max(value.type.size, 1) if isinstance(param.count, int) else value.type.size
            nbytes = elements * value.type.numpy_dtype.itemsize
            held = kernel.launch_count(param) * NUMPY_DTYPES[param.dtype].itemsize
            if held != nbytes:
                problem = f"parameter {param.name} holds {held} bytes, the value {value.type} {nbytes}"
                break
    if problem:
        raise CdnajitError(f"the kernel of {op.name} ({kernel.name}) breaks the parameter contract of "
                           f"lowering/emitters.py: {problem}")


# ---- planning: optimized module -> plan ---------------------------------------------------

class Planner:
    """Builds the plan of an optimized module, compiling its kernels (through the cache), all at
    once after the plan is built, so that they compile in parallel (launch.object_codes)."""

    def __init__(self, module: Module, cache: CompileCache, target: Target | None = None):
        self.module, self.cache, self.target = module, cache, target
        self.slots: dict[int, int] = {}
        self.kernels: list[Kernel] = []
        self.kernel_plans: list[dict] = []
        self.object_codes: list[bytes] = []
        self.constants: list[dict] = []
        self.constant_data = bytearray()
        self.llvm_seconds = self.emit_seconds = 0.0

    def slot(self, value) -> int:
        return self.slots.setdefault(id(value), len(self.slots))

    def plan(self) -> dict:
        body = self.block(self.module.body)
        start = time.perf_counter()
        for kernel_plan, (key, code) in zip(self.kernel_plans, object_codes(self.kernels, self.cache)):
            kernel_plan["key"] = key
            self.object_codes.append(code)
        self.llvm_seconds += time.perf_counter() - start
        return {"name": self.module.name, "slots": len(self.slots), "kernels": self.kernel_plans,
                "donated": sorted(self.module.donated),
                "param_types": [[p.type.dtype, dims(p.type.shape)] for p in self.module.params],
                "constants": self.constants, "body": body,
                "outputs": [[self.slot(v), v.type.dtype, dims(v.type.shape)] for v in self.module.body.outputs]}

    def block(self, region: Region) -> dict:
        params = [self.slot(p) for p in region.params]
        steps = [step for step in map(self.step, region.ops) if step is not None]
        return {"params": params, "steps": steps, "outputs": [self.slot(v) for v in region.outputs]}

    def step(self, op: Op) -> dict | None:
        if op.name == "constant":
            self.add_constant(op)
            return None
        if op.name == "while":
            cond, body = op.regions
            return {"op": "while", "operands": [self.slot(v) for v in op.operands], "cond": self.block(cond),
                    "body": self.block(body), "results": [self.slot(v) for v in op.results],
                    "types": [[v.type.dtype, dims(v.type.shape)] for v in op.results], "source": op_source(op)}
        if op.name == "cond":
            index, *operands = op.operands
            return {"op": "cond", "index": self.slot(index), "index_dtype": index.type.dtype,
                    "operands": [self.slot(v) for v in operands],
                    "branches": [self.block(r) for r in op.regions], "results": [self.slot(v) for v in op.results]}
        if op.name in CALLBACK_OPS:
            return {"op": "callback", "callback": op.attrs["callback"], "pure": op.name != "host_callback",
                    "inputs": [self.slot(v) for v in op.operands],
                    "types": [[v.type.dtype, dims(v.type.shape)] for v in op.operands],
                    "results": [[self.slot(v), v.type.dtype, dims(v.type.shape)] for v in op.results],
                    "source": op_source(op)}
        if op.name in ALIAS_OPS:
            return {"op": "reshape", "input": self.slot(op.operands[0]), "result": self.slot(op.result),
                    "shape": dims(op.result.type.shape)}
        results = [[self.slot(v), v.type.dtype, dims(v.type.shape)] for v in op.results]
        if not needs_kernel(op):
            return {"op": "allocate", "results": results, "source": op_source(op)}
        return {"op": "kernel", "kernel": self.add_kernel(op), "inputs": [self.slot(v) for v in op.operands],
                "results": results, "source": op_source(op), "in_place": op.name in IN_PLACE_OPS}

    def add_constant(self, op: Op) -> None:
        array = np.ascontiguousarray(op.attrs["value"], NUMPY_DTYPES[op.result.type.dtype])
        array = array.reshape(op.result.type.shape)
        self.constant_data += bytes(-len(self.constant_data) % 64)  # keep each constant aligned
        self.constants.append({"slot": self.slot(op.result), "dtype": op.result.type.dtype,
                               "shape": dims(array.shape), "offset": len(self.constant_data)})
        self.constant_data += array.tobytes()

    def add_kernel(self, op: Op) -> int:
        start = time.perf_counter()
        kernel = emit_kernel(op, kernel_name(self.module, len(self.kernels)), self.target)
        check_contract(op, kernel)
        self.emit_seconds += time.perf_counter() - start
        self.kernels.append(kernel)
        self.kernel_plans.append({
            "key": None,   # set with the object code, once every kernel is emitted (`plan`)
            "name": kernel.name, "grid": [int(n) for n in kernel.launch_grid()],
            "workgroup_size": [int(n) for n in kernel.workgroup_size],
            "params": [[p.name, p.dtype, int(kernel.launch_count(p)), bool(p.readonly)] for p in kernel.buffers],
            "scalars": [[p.name, p.dtype] for p in kernel.params if not isinstance(p, GlobalBuffer)],
            "arguments": [[name, value] for name, value in kernel.arguments],
            # Decided from the body, which a cached plan does not keep.
            "parallel": runs_in_parallel(kernel), "pool_share": pool_share(kernel)})
        return len(self.kernels) - 1


# ---- running a profile: plan -> steps run in Python, each launch timed ---------------------

class Allocate:
    """The results of an op, uninitialised: all that an op whose results are all empty does.
    `source` (the op and its user's line) names the op when the machine cannot hold a result."""
    __slots__ = ("results", "types", "source")

    def __init__(self, results, source: str):
        self.results = tuple(slot for slot, _, _ in results)
        self.types = tuple((tuple(shape), NUMPY_DTYPES[dtype]) for _, dtype, shape in results)
        self.source = source

    def run(self, env: list) -> None:
        for slot, (shape, dtype) in zip(self.results, self.types):
            try:
                env[slot] = np.empty(shape, dtype)
            except MemoryError:
                raise allocation_error(self.source, shape, dtype) from None


class Launch(Allocate):
    """One kernel launch: allocates the results (aligned where the kernel ABI asks), binds every
    array by address, then the kernel's bound scalars (CompiledKernel.bound_addresses), runs the grid."""
    __slots__ = ("kernel", "inputs", "block_type", "allocators")

    def __init__(self, kernel: CompiledKernel, inputs, results, source: str):
        super().__init__(results, source)
        self.kernel = kernel
        self.inputs = tuple(inputs)
        self.block_type = ctypes.c_void_p * (len(self.inputs) + len(self.results) + len(kernel.bound_addresses))
        self.allocators = tuple(result_allocator(dtype, shape) for _, dtype, shape in results)

    def run(self, env: list) -> None:
        addresses = [address(env[slot]) for slot in self.inputs]
        for slot, (shape, dtype), allocate in zip(self.results, self.types, self.allocators):
            try:
                env[slot] = array = allocate(shape, dtype)
            except MemoryError:
                raise allocation_error(self.source, shape, dtype) from None
            addresses.append(address(array))
        block = self.block_type(*addresses, *self.kernel.bound_addresses)
        self.kernel.launch(ctypes.addressof(block))


class LaunchInPlace(Launch):
    """The launch of an in-place update (passes/in_place.py): its result is its first operand's
    array, which the kernel writes over. That array came from a launch of the same dtype and size,
    so it has the alignment the ABI asks; were it not, the kernel writes a copy (the pass made sure
    nothing else reads the operand)."""
    __slots__ = ()

    def run(self, env: list) -> None:
        (slot,), (shape, dtype), (allocate,) = self.results, self.types[0], self.allocators
        addresses = [address(env[i]) for i in self.inputs]
        array, result = env[self.inputs[0]], addresses[0]
        if allocate is aligned_empty and result % WRITTEN_BUFFER_ALIGNMENT:
            array = aligned_empty(shape, dtype)
            array[...] = env[self.inputs[0]]
            result = address(array)
        env[slot] = array
        block = self.block_type(*addresses, result, *self.kernel.bound_addresses)
        self.kernel.launch(ctypes.addressof(block))


class Reshape:
    __slots__ = ("input", "result", "shape")

    def __init__(self, input, result, shape):
        self.input, self.result, self.shape = input, result, tuple(shape)

    def run(self, env: list) -> None:
        env[self.result] = env[self.input].reshape(self.shape)


class Callback(Allocate):
    """A host callback step: the user's function called on copies of its inputs, giving its results."""
    __slots__ = ("plan",)

    def __init__(self, plan: dict):
        super().__init__(plan["results"], plan["source"])
        self.plan = plan

    def run(self, env: list) -> None:
        values = run_callback(self.plan, [np.array(env[slot]) for slot in self.plan["inputs"]])
        for slot, value in zip(self.results, values):
            env[slot] = value


class Block:
    """A region's steps; `run(env, args)` binds its parameters, runs it and returns its outputs."""
    __slots__ = ("params", "steps", "outputs")

    def __init__(self, params, steps, outputs):
        self.params, self.steps, self.outputs = tuple(params), tuple(steps), tuple(outputs)

    def run(self, env: list, args) -> list:
        for slot, arg in zip(self.params, args):
            env[slot] = arg
        for step in self.steps:
            step.run(env)
        return [env[slot] for slot in self.outputs]


class WhileLoop:
    __slots__ = ("operands", "cond", "body", "results")

    def __init__(self, operands, cond: Block, body: Block, results):
        self.operands, self.cond, self.body, self.results = tuple(operands), cond, body, tuple(results)

    def run(self, env: list) -> None:
        carry = [env[slot] for slot in self.operands]
        while bool(self.cond.run(env, carry)[0]):
            carry = self.body.run(env, carry)
        for slot, array in zip(self.results, carry):
            env[slot] = array


class Branch:
    __slots__ = ("index", "operands", "branches", "results")

    def __init__(self, index, operands, branches, results):
        self.index, self.operands, self.branches, self.results = index, tuple(operands), tuple(branches), tuple(results)

    def run(self, env: list) -> None:
        chosen = min(max(int(env[self.index]), 0), len(self.branches) - 1)  # clamped, as lax.switch
        outputs = self.branches[chosen].run(env, [env[slot] for slot in self.operands])
        for slot, array in zip(self.results, outputs):
            env[slot] = array


class TimedKernel:
    """A compiled kernel whose launches add up their host time: what `Executable.profile` runs."""
    __slots__ = ("kernel", "launches", "seconds", "bound_addresses")

    def __init__(self, kernel: CompiledKernel):
        self.kernel, self.launches, self.seconds = kernel, 0, 0.0
        self.bound_addresses = kernel.bound_addresses

    def launch(self, address: int) -> None:
        start = time.perf_counter()
        self.kernel.launch(address)
        self.seconds += time.perf_counter() - start
        self.launches += 1


def kernel_interface(plan: dict) -> Kernel:
    """A kernel with a cached kernel's parameters and launch but no body: what loading and
    launching its object code reads."""
    params = tuple(GlobalBuffer(name, dtype, count, readonly) for name, dtype, count, readonly in plan["params"]) \
        + tuple(ScalarParam(name, dtype) for name, dtype in plan["scalars"])
    return Kernel(plan["name"], params=params, grid=tuple(plan["grid"]),
                  workgroup_size=tuple(plan["workgroup_size"]), body=(),
                  arguments=tuple((name, value) for name, value in plan["arguments"]))


class Executable:
    """A compiled program; call it with one array per parameter of the module it was compiled from.

    `timings` lists (stage, seconds) of its compilation: cache lookup, passes, emission, llvm
    (optimisation and code generation of the kernels the cache did not hold, and of the native
    schedule), load.
    """

    def __init__(self, plan: dict, constant_data: bytes, object_codes: list[bytes], graph: Module | None = None,
                 optimized: Module | None = None, kernels: list[Kernel] | None = None, pipeline=None,
                 target: Target | None = None, cache: CompileCache | None = None, schedule_code: bytes | None = None,
                 library_stamps: str | None = None):
        """`schedule_code`: the native schedule's object code, where the cache held it (else it is
        compiled, from the kernels' IR); `library_stamps`: the libraries' cache_stamps() it was
        compiled under, where the caller has them."""
        self.plan = plan
        self.cache = cache if cache is not None else default_cache()
        self.target = target or get_target()
        self.graph = graph
        self._optimized = optimized
        # The libraries' state (forced solvers, tuning databases) the passes ran under: a program
        # loaded from the cache runs them again on demand, and must do so under the same state.
        self.library_stamps = None if optimized is not None else \
            library_stamps if library_stamps is not None else cache_stamps()
        self.pipeline = pipeline
        self._kernels = kernels
        self.timings: list[tuple[str, float]] = []
        interfaces = kernels if kernels is not None else [kernel_interface(k) for k in plan["kernels"]]
        self.compiled_kernels = [CompiledKernel(k, code, kernel_plan["parallel"])
                                 for k, code, kernel_plan in zip(interfaces, object_codes, plan["kernels"])]
        self.initial_env: list = [None] * plan["slots"]
        constant_data = bytearray(constant_data)  # writeable, so `address` takes its fast way
        for constant in plan["constants"]:
            dtype = NUMPY_DTYPES[constant["dtype"]]
            count = int(np.prod(constant["shape"], dtype=np.int64))
            array = np.frombuffer(constant_data, dtype, count, constant["offset"]).reshape(constant["shape"])
            self.initial_env[constant["slot"]] = array
        constants = {constant["slot"]: self.initial_env[constant["slot"]] for constant in plan["constants"]}
        self.schedule = NativeSchedule(plan, self.compiled_kernels, constants,
                                       lambda index: str(llvm_module(self.kernels[index])), schedule_code)
        self.param_types = tuple((tuple(shape), NUMPY_DTYPES[dtype]) for dtype, shape in plan["param_types"])
        self.donated = tuple(plan["donated"])

    def block(self, plan: dict, kernels: list) -> Block:
        """The steps of a block, run in Python; its launches run `kernels` (timed, in a profile)."""
        return Block(plan["params"], [self.step(s, kernels) for s in plan["steps"]], plan["outputs"])

    def step(self, plan: dict, kernels: list):
        kind = plan["op"]
        if kind == "kernel":
            launch = LaunchInPlace if plan["in_place"] else Launch
            return launch(kernels[plan["kernel"]], plan["inputs"], plan["results"], plan["source"])
        if kind == "allocate":
            return Allocate(plan["results"], plan["source"])
        if kind == "callback":
            return Callback(plan)
        if kind == "reshape":
            return Reshape(plan["input"], plan["result"], plan["shape"])
        if kind == "while":
            return WhileLoop(plan["operands"], self.block(plan["cond"], kernels), self.block(plan["body"], kernels),
                             plan["results"])
        return Branch(plan["index"], plan["operands"], [self.block(b, kernels) for b in plan["branches"]],
                      plan["results"])

    # -- compiling --

    @classmethod
    def compile(cls, graph: Module, cache: CompileCache | None = None, pipeline=None,
                target: Target | None = None) -> "Executable":
        """Compile a traced graph module, its kernels tiled for `target` (default gfx942); a program
        the cache holds skips passes, emitters and LLVM.

        `pipeline` (default: the pass manager's DEFAULT_PIPELINE) is for tests that bring a module
        already in the optimized form; such programs are not stored in the cache.
        """
        cache = cache if cache is not None else default_cache()
        target = target or get_target()
        start = time.perf_counter()
        # A library's state outside the IR (a tuning database) changes which solutions its calls run.
        stamps = cache_stamps()
        program_key = cache.key("program", f"target {target.name}\nlibraries {stamps}\n{graph}") \
            if pipeline is None and not any(op.name in CALLBACK_OPS for op in walk(graph.body)) else None
        stored = cls.lookup(cache, program_key) if program_key is not None else None
        lookup = time.perf_counter() - start
        if stored is not None:
            plan, constant_data, object_codes, schedule_code = stored
            start = time.perf_counter()
            executable = cls(plan, constant_data, object_codes, graph, target=target, cache=cache,
                             schedule_code=schedule_code, library_stamps=stamps)
            executable.timings = [("cache lookup", lookup), ("load", time.perf_counter() - start)]
            return executable
        start = time.perf_counter()
        verify(graph)  # the passes expect a valid module (IR text may describe anything)
        optimized = run_pipeline(graph, pipeline, target=target).module
        passes = time.perf_counter() - start
        planner = Planner(optimized, cache, target)
        plan = planner.plan()
        constant_data = bytes(planner.constant_data)
        start = time.perf_counter()
        executable = cls(plan, constant_data, planner.object_codes, graph, optimized, planner.kernels, pipeline,
                         target, cache)
        schedule_llvm = executable.schedule.llvm_seconds
        load = time.perf_counter() - start - schedule_llvm
        if program_key is not None:
            cache.store(program_key, {"kind": "program", "plan": plan, "constant_bytes": len(constant_data)},
                        constant_data + executable.schedule.object_code)
        executable.timings = [("cache lookup", lookup), ("passes", passes), ("emission", planner.emit_seconds),
                              ("llvm", planner.llvm_seconds + schedule_llvm), ("load", load)]
        return executable

    @staticmethod
    def lookup(cache: CompileCache, program_key: str) -> tuple[dict, bytes, list[bytes], bytes] | None:
        """(plan, constant data, the kernels' object codes, the schedule's object code) of a stored
        program, or None if any part is missing."""
        entry = cache.load(program_key)
        if entry is None:
            return None
        meta, payload = entry
        kernels = [cache.load(kernel["key"]) for kernel in meta["plan"]["kernels"]]
        if any(kernel is None for kernel in kernels):
            return None
        constant_bytes = meta["constant_bytes"]
        return (meta["plan"], payload[:constant_bytes], [object_code for _, object_code in kernels],
                payload[constant_bytes:])

    @property
    def optimized(self) -> Module:
        """The module after the passes (run again when the program came from the cache, under the
        libraries' state it was compiled under; CdnajitError where that state has changed since)."""
        if self._optimized is None:
            if cache_stamps() != self.library_stamps:
                raise CdnajitError(f"{self.plan['name']}: its optimized program came from the compile cache and "
                                   "the libraries' state has changed since it was compiled (a forced solver or "
                                   "a tuning database: now " + cache_stamps() + f"; then {self.library_stamps}); "
                                   "ask for its stages, kernels or reports under the state it was compiled in")
            self._optimized = run_pipeline(self.graph, self.pipeline, target=self.target).module
        return self._optimized

    @property
    def kernels(self) -> list[Kernel]:
        """The kernel IR of every kernel, in schedule order (emitted again after a cache hit)."""
        if self._kernels is None:
            self._kernels = emit_kernels(self.optimized, self.target)
        return self._kernels

    @property
    def kernel_ops(self) -> list[Op]:
        """The optimized module's op behind each kernel, in the order of `kernels`."""
        return kernel_ops(self.optimized)

    # -- running --

    def __call__(self, *arrays) -> list[np.ndarray]:
        return self.schedule.run(self.inputs(arrays))

    def inputs(self, arrays) -> list[np.ndarray]:
        """The arguments as the schedule reads them: C-contiguous arrays of the parameters' types,
        a donated one writeable, aligned as a kernel writing it wants, and shared with no other."""
        if len(arrays) != len(self.param_types):
            raise CdnajitError(f"{self.plan['name']} takes {len(self.param_types)} arguments, got {len(arrays)}")
        inputs = [as_input(array, shape, dtype) for (shape, dtype), array in zip(self.param_types, arrays)]
        for i in self.donated:
            # The program may write over a donated array: one it cannot write, or that another
            # argument also reads, is replaced by a copy, as is one a kernel may not write where it is.
            donated = inputs[i]
            if not donated.flags.writeable or any(np.may_share_memory(donated, other)
                                                  for j, other in enumerate(arrays) if j != i) \
                    or (is_aligned_buffer(self.plan["param_types"][i][0], donated.size, readonly=False)
                        and address(donated) % WRITTEN_BUFFER_ALIGNMENT):
                inputs[i] = aligned_copy(donated)
        return inputs

    def profile(self, *arrays) -> tuple[list[np.ndarray], list[tuple[int, float]]]:
        """Run one call with every launch timed: (outputs, (launches, host seconds) per kernel).
        The call runs the schedule's steps in Python (`Block`), each launch a timed kernel."""
        timed = [TimedKernel(kernel) for kernel in self.compiled_kernels]
        body = self.block(self.plan["body"], timed)
        outputs = body.run(self.initial_env.copy(), self.inputs(arrays))
        return [np.array(output) for output in outputs], [(kernel.launches, kernel.seconds) for kernel in timed]


def as_input(value, shape, dtype) -> np.ndarray:
    """`value` as a C-contiguous array of `dtype` in native byte order, copied only when it is not one."""
    if type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
        array = value
    else:
        array = np.asarray(value, dtype=dtype, order="C")
    if array.shape != shape:
        raise CdnajitError(f"argument of shape {array.shape} where the executable takes {shape}")
    return array
