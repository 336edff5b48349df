"""Random programs: drawing, writing as Python source, running on both backends, checking against
the oracle, classifying a failure, and shrinking it to a pasteable repro."""
from __future__ import annotations

import math
import traceback
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax

from .jaxtypes import np_dtype
from .ops import MAX_ELEMENTS, OPS, Block, Gen, Node, evaluate
from .values import compare, literal

WEIGHTS = {name: entry.weight for name, entry in OPS.items() if entry.weight}


@dataclass
class Program:
    nodes: list            # inputs are nodes of op "input"
    outputs: tuple
    vals: list = field(default_factory=list, repr=False)   # the oracle's value of each node

    @property
    def inputs(self):
        return [k for k, n in enumerate(self.nodes) if n.op == "input"]

    def evaluate(self):
        vals = []
        for node in self.nodes:
            vals.append(evaluate(node, vals))
        self.vals = vals
        return vals


def generate(seed: int, quick: bool = False) -> Program:
    """A program of 3 to 30 ops (`quick`: 3 to 10) over 1 to 3 inputs, every value it makes
    evaluated by the oracle."""
    rng = np.random.default_rng(seed)
    g = Gen(rng, [])
    nodes = []

    def add(node):
        val = evaluate(node, g.vals)
        nodes.append(node)
        g.vals.append(val)

    for _ in range(int(rng.integers(1, 3))):
        add(g.input())
    names, weights = zip(*WEIGHTS.items())
    p = np.array(weights) / sum(weights)
    target = int(rng.choice([3, 5, 8, 12, 20, 30], p=[0.2, 0.25, 0.25, 0.15, 0.1, 0.05]))
    if quick:
        target = min(target, 10)
    attempts = 0
    while len(nodes) - len([n for n in nodes if n.op == "input"]) < target and attempts < 200:
        attempts += 1
        drawn = OPS[str(rng.choice(names, p=p))].draw(g)
        if drawn is None:
            continue
        drawn = drawn if isinstance(drawn, list) else [drawn]
        if drawn[-1].op == "contract" and -1 in drawn[-1].args:
            drawn[-1].args = tuple(len(nodes) if a == -1 else a for a in drawn[-1].args)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state = (list(nodes), list(g.vals))
                for node in drawn:
                    add(node)
                if math.prod(g.vals[-1].shape) > MAX_ELEMENTS:
                    raise ValueError("a result past the size limit")
        except (ValueError, IndexError, TypeError, MemoryError, OverflowError):
            nodes[:], g.vals[:] = state   # parameters the oracle refuses (JAX would too)
    made = [k for k, n in enumerate(nodes) if n.op != "input"]
    extra = [int(k) for k in rng.choice(made, min(len(made) - 1, int(rng.integers(0, 3))), replace=False)] if made else []
    program = Program(nodes, tuple(dict.fromkeys([made[-1] if made else 0] + extra)))
    program.vals = g.vals
    return program


# ---- source ------------------------------------------------------------------------------------

def write(program: Program, name="program") -> str:
    params = [f"x{k}" for k in program.inputs]
    lines = [f"def {name}({', '.join(params)}):"]
    names = {k: f"x{k}" for k in program.inputs}
    lines += write_nodes(program.nodes, names, "    ", skip_inputs=True)
    lines.append(f"    return ({''.join(names[k] + ', ' for k in program.outputs)})")
    return "\n".join(lines)


def write_nodes(nodes, names: dict, indent: str, skip_inputs=False, offset=0) -> list:
    lines = []
    for k, node in enumerate(nodes, offset):
        if node.op == "input":
            continue
        out = f"v{k}" if indent == "    " else f"b{indent.count(' ')}_{k}"
        args = [names[a] for a in node.args]
        if node.op == "control":
            lines += write_control(node, args, out, indent, k)
        else:
            lines.append(f"{indent}{out} = {OPS[node.op].source(node, args)}")
        names[k] = out
    return lines


def write_block(block: Block, fname: str, params: list, indent: str) -> list:
    lines = [f"{indent}def {fname}({', '.join(params)}):"]
    names = dict(enumerate(params))
    lines += write_nodes(block.nodes, names, indent + "    ", offset=block.n_params)
    lines.append(f"{indent}    return {names[block.output]}")
    return lines


def write_control(node, args, out, indent, k) -> list:
    p = node.params
    form = p["form"]
    if form == "fori_loop":
        return write_block(p["body"], f"body{k}", ["c", "i"], indent) + [
            f"{indent}{out} = lax.fori_loop(0, {p['trips']}, lambda i, c: body{k}(c, i), {args[0]})"]
    if form == "while_loop":
        return write_block(p["body"], f"body{k}", ["c"], indent) + [
            f"{indent}{out} = lax.while_loop(lambda s: s[0] < {p['trips']}, lambda s: (s[0] + 1, body{k}(s[1])), "
            f"(0, {args[0]}))[1]"]
    if form == "cond":
        lines = write_block(p["body"], f"yes{k}", ["c"], indent) + write_block(p["other"], f"no{k}", ["c"], indent)
        total = (f"cnp.real(cnp.sum({args[0]}.astype(cnp.complex128)))" if p["complex"] else
                 f"cnp.sum({args[0]}.astype(cnp.float64))")
        return lines + [f"{indent}{out} = lax.cond({total} > {p['threshold']}, yes{k}, no{k}, {args[0]})"]
    return write_block(p["body"], f"step{k}", ["c", "x"], indent) + [
        f"{indent}{out} = lax.scan(lambda c, x: (step{k}(c, x), None), {args[0]}[0], {args[0]})[0]"]


def inputs_source(program: Program) -> list:
    lines = []
    for k in program.inputs:
        p = program.nodes[k].params
        if "array" in p:
            lines.append(f"x{k} = {literal(p['array'])}")
        else:
            cuts = "".join(f"[{':, ' * axis}{start or ''}:{stop}]" for axis, start, stop in p.get("cuts", ()))
            lines.append(f"x{k} = make_input({p['shape']!r}, {p['dtype']!r}, seed={p['seed']}, "
                         f"specials={p['specials']}){cuts}")
    return lines


def as_function(program: Program):
    namespace = {"cnp": cnp, "lax": lax, "np": np}
    exec(write(program), namespace)
    return namespace["program"]


def arguments(program: Program):
    return [program.vals[k].ref for k in program.inputs]


# ---- running and checking ------------------------------------------------------------------------

@dataclass
class Failure:
    kind: str        # e.g. "mismatch compiled", "crash compiled: ValueError", "dtype", "mismatch interpret"
    detail: str


def check(program: Program, backends=("compiled", "interpret")) -> Failure | None:
    """Run `program` on each backend and compare every output with the oracle."""
    if not program.vals:
        program.evaluate()
    fn = as_function(program)
    args = arguments(program)
    for backend in backends:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = cj.jit(fn, backend=backend)(*args)
        except Exception as error:   # noqa: BLE001 - every exception is a finding
            frame = traceback.extract_tb(error.__traceback__)[-1]
            where = f"{frame.filename.split('cdnajit/')[-1].split('fuzz/')[-1]}:{frame.lineno}"
            message = str(error).splitlines()[0][:300] if str(error) else ""
            return Failure(f"crash {backend}: {type(error).__name__} at {where}", message)
        dtype_failure = None
        for n, (k, got) in enumerate(zip(program.outputs, results)):
            problem = compare(got, program.vals[k], f"output {n} (v{k})")
            if problem and ": dtype" in problem:
                dtype_failure = dtype_failure or (k, problem)
                problem = compare(got, program.vals[k], f"output {n} (v{k})", check_dtype=False)
            if problem and dtype_failure and dtype_failure[0] == k:
                problem += f" (and {dtype_failure[1].split(': ', 1)[1]})"
            if dtype_failure and not problem and n == len(results) - 1:
                k, problem = dtype_failure
            if problem:
                inner = first_dtype_difference(program)
                if inner and inner[0] != k:
                    k, problem = inner[0], f"{problem}; but first v{inner[0]} {inner[1]}"
            if problem:
                node = program.nodes[k]
                op = node.op + ("." + str(node.params.get("name", node.params.get("form", node.params.get("mode", "")))))
                source = "/".join(sorted({program.vals[a].dtype for a in node.args}))
                kind = f"dtype {op}({source})" if "dtype" in problem else f"mismatch {backend} {op}"
                return Failure(kind, problem)
    return None


def first_dtype_difference(program: Program):
    """(node index, description) of the first value whose dtype under the interpreter differs from
    JAX's: a value mismatch after it may be the dtype defect's consequence (a sum that no longer
    wraps), so it is classified as that dtype defect."""
    made = tuple(k for k, n in enumerate(program.nodes) if n.op != "input")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = cj.jit(as_function(Program(program.nodes, made, program.vals)), backend="interpret")(
                *arguments(program))
    except Exception:   # noqa: BLE001 - reported by the check itself
        return None
    for k, got in zip(made, results):
        if np.asarray(got).dtype != np_dtype(program.vals[k].dtype):
            return k, f"dtype {np.asarray(got).dtype}, JAX gives {program.vals[k].dtype}"
    return None


def same_kind(a: Failure | None, b: Failure) -> bool:
    if a is None:
        return False
    if b.kind.startswith("mismatch"):   # the op where it shows may change as the program shrinks
        return a.kind.split(" ")[:2] == b.kind.split(" ")[:2]
    return a.kind == b.kind


# ---- shrinking -----------------------------------------------------------------------------------

def prune(program: Program) -> Program:
    """Drop nodes no output needs, renumbering the rest."""
    needed = set(program.outputs)
    for k in range(len(program.nodes) - 1, -1, -1):
        if k in needed:
            needed.update(program.nodes[k].args)
    keep = sorted(needed)
    index = {old: new for new, old in enumerate(keep)}
    nodes = [replace(program.nodes[k], args=tuple(index[a] for a in program.nodes[k].args)) for k in keep]
    return Program(nodes, tuple(index[k] for k in program.outputs))


def candidates(program: Program):
    """Smaller variants: fewer outputs; a node replaced by its operand of the same type; a node
    replaced by an input holding its oracle value (small values only, so that the repro stays
    pasteable); an input cut to fewer elements along one axis."""
    for k in program.outputs:
        if len(program.outputs) > 1:
            yield Program(program.nodes, (k,))
    for k, node in enumerate(program.nodes):
        if node.op == "input":
            continue
        for a in node.args:
            if (program.vals[a].shape, program.vals[a].dtype) == (program.vals[k].shape, program.vals[k].dtype):
                yield _substituted(program, k, a)
        val = program.vals[k]
        if math.prod(val.shape) <= 256:
            nodes = list(program.nodes)
            nodes[k] = Node("input", (), {"array": val.ref, "dtype": val.dtype})
            yield Program(nodes, program.outputs)
    for k in program.inputs:
        node = program.nodes[k]
        shape = program.vals[k].shape
        for axis, d in enumerate(shape):
            # one element, either half, all but the last
            for start, stop in dict.fromkeys([(0, 1), (0, d // 2), (d // 2, d), (0, d - 1)]):
                if 0 <= start < stop and stop - start < d:
                    params = dict(node.params)
                    if "array" in params:
                        params["array"] = np.take(params["array"], range(start, stop), axis=axis)
                    else:
                        params["cuts"] = params.get("cuts", ()) + ((axis, start, stop),)
                    nodes = list(program.nodes)
                    nodes[k] = Node("input", (), params)
                    yield Program(nodes, program.outputs)


def _substituted(program: Program, k: int, a: int) -> Program:
    """`program` with node k's uses reading node a instead."""
    nodes = [replace(n, args=tuple(a if x == k else x for x in n.args)) if j > k else n
             for j, n in enumerate(program.nodes)]
    return Program(nodes, tuple(a if x == k else x for x in program.outputs))


def shrink(program: Program, failure: Failure, budget: int = 150) -> tuple[Program, Failure]:
    """Greedy: take the first smaller variant that still fails the same way, until none does."""
    tries = 0
    current = prune(program)
    current.evaluate()
    improved = True
    while improved and tries < budget:
        improved = False
        for candidate in candidates(current):
            tries += 1
            if tries > budget:
                break
            try:
                candidate = prune(candidate)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    candidate.evaluate()
            except Exception:   # noqa: BLE001 - the oracle refuses the variant's shapes
                continue
            result = check(candidate)
            if same_kind(result, failure):
                current, failure, improved = candidate, result, True
                break
    return current, failure


def repro(program: Program, failure: Failure) -> str:
    """Python source that shows the failure when pasted at the repository root."""
    lines = ["import sys; sys.path.insert(0, 'tests/differential')",
             "import ml_dtypes, numpy as np, cdnajit as cj, cdnajit.numpy as cnp",
             "from cdnajit import lax",
             "from fuzzing.values import make_input", "", write(program), ""]
    lines += inputs_source(program)
    args = ", ".join(f"x{k}" for k in program.inputs)
    lines += [f"print(cj.jit(program)({args}))", f"print(cj.jit(program, backend='interpret')({args}))",
              f"# {failure.kind}: {failure.detail}"]
    return "\n".join(lines)
