"""The graph IR's text format: exact round trips (one per op, every dtype and attribute kind,
random modules) and parse errors with line:column."""
import textwrap

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdnajit as cj
from cdnajit.ir import opdef
from cdnajit.ir.core import Module, Region, make_op, walk
from cdnajit.ir.types import COMPLEX_PART, FLOATS, INTS, NUMPY_DTYPES, TensorType

# ---- one explicit round trip per op ---------------------------------------------------------

UNARY = {  # operand dtype -> ops
    "f32": "neg abs sign floor ceil round trunc exp exp2 log log2 log10 log1p expm1 sqrt rsqrt cbrt tanh sinh cosh "
           "sin cos tan asin acos atan asinh acosh atanh logistic erf is_finite lgamma digamma erfc erf_inv "
           "bessel_i0e bessel_i1e",
    "c64": "real imag conj",
    "i16": "not",
}
BINARY = {
    "f64": "add sub mul div rem pow max min atan2 eq ne lt le gt ge complex zeta",
    "u8": "and or xor shift_left shift_right_logical shift_right_arithmetic",
}


def elementwise_text(name, dtype, arity):
    operand = TensorType(dtype, (2, 3))
    (result,) = opdef.infer_types(name, [operand] * arity, {})
    params = ", ".join(f"%{i}: {operand}" for i in range(arity))
    operands = ", ".join(f"%{i}" for i in range(arity))
    return (f"func @{name}_{dtype}({params}) -> ({result}) {{\n"
            f"  %{arity} = {name}({operands}) : {result}\n"
            f"  return %{arity}\n}}\n")


def ir(text):
    return textwrap.dedent(text).lstrip("\n") + "\n"


STRUCTURED = {
    "select": """
        func @select(%0: bool[2,3], %1: f32[2,3], %2: f32[2,3]) -> (f32[2,3]) {
          %3 = select(%0, %1, %2) : f32[2,3]
          return %3
        }""",
    "clamp": """
        func @clamp(%0: f32[], %1: f32[2,3], %2: f32[2,3]) -> (f32[2,3]) {
          %3 = clamp(%0, %1, %2) : f32[2,3]
          return %3
        }""",
    "fma": """
        func @fma(%0: f64[2,3], %1: f64[2,3], %2: f64[2,3]) -> (f64[2,3]) {
          %3 = fma(%0, %1, %2) : f64[2,3]
          return %3
        }""",
    "fft": """
        func @rfft(%0: f64[2,8]) -> (c128[2,5]) {
          %1 = fft(%0) {fft_type = "RFFT", fft_length = [8]} : c128[2,5]
          return %1
        }""",
    "sort": """
        func @sort(%0: f32[3,4], %1: i32[3,4]) -> (f32[3,4], i32[3,4]) {
          %2, %3 = sort(%0, %1) {dimension = 1, is_stable = true, num_keys = 1} : (f32[3,4], i32[3,4])
          return %2, %3
        }""",
    "optimization_barrier": """
        func @barrier(%0: f32[3,4], %1: c64[]) -> (f32[3,4], c64[]) {
          %2, %3 = optimization_barrier(%0, %1) : (f32[3,4], c64[])
          return %2, %3
        }""",
    "host_callback": """
        func @printed(%0: f32[3,4], %1: c64[]) -> (f32[3,4]) {
          %2 = host_callback(%0, %1) {callback = 7} : bool[]
          return %0
        }""",
    "pure_callback": """
        func @called(%0: f32[3,4]) -> (f32[4,3], i32[]) {
          %1, %2 = pure_callback(%0) {callback = 7, vmap_method = "expand_dims", num_results = 2, result0_dtype = f32, result0_shape = [4, 3], result1_dtype = i32, result1_shape = []} : (f32[4,3], i32[])
          return %1, %2
        }""",
    "io_callback": """
        func @sent(%0: f32[3,4]) -> (f32[3,4]) {
          %1 = io_callback(%0) {callback = 7, num_results = 1, result0_dtype = f32, result0_shape = [3, 4]} : f32[3,4]
          return %1
        }""",
    "library_call": """
        func @gemm(%0: f16[2,5,4], %1: f16[2,3,5], %2: f32[2,4,3], %3: f32[3]) -> (f32[2,4,3]) {
          %4 = library_call(%0, %1, %2, %3) {library = "blas", routine = "strided_batched_gemm", solution = "", trans_a = true, trans_b = true, alpha = -0.5, beta = 1.0, epilogue = "bias_gelu_tanh", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[2,4,3]
          return %4
        }""",
    "fusion": """
        func @fused(%0: f32[3], %1: f32[3]) -> (f32[3], f32[]) {
          %2, %3 = fusion(%0, %1) {kind = "loop"} : (f32[3], f32[]) {
            ^(%4: f32[3], %5: f32[3]):
              %6 = mul(%4, %5) : f32[3]
              %7 = reduce(%6) {reducer = "sum", axes = [0]} : f32[]
              yield %6, %7
          }
          return %2, %3
        }""",
    "shard_map": """
        func @per_device(%0: f32[8,3]) -> (f32[8,3], f32[2,3]) {
          %1, %2 = shard_map(%0) {mesh = "i=4", in_specs = "i;", out_specs = "i;|;"} : (f32[8,3], f32[2,3]) {
            ^(%3: f32[2,3]):
              %4 = neg(%3) : f32[2,3]
              %5 = library_call(%4) {library = "ccl", routine = "all_reduce", solution = "", axes = "i", group_size = 4, reducer = "sum"} : f32[2,3]
              yield %4, %5
          }
          return %1, %2
        }""",
    "convert": """
        func @convert(%0: f32[4]) -> (bf16[4]) {
          %1 = convert(%0) {dtype = bf16} : bf16[4]
          return %1
        }""",
    "constant": """
        func @constant() -> (f32[2,2], c128[], u64[0,3]) {
          %0 = constant() {value = dense<[[0.1, -0.0], [nan, -inf]]>} : f32[2,2]
          %1 = constant() {value = dense<(1e-300, -2.5)>} : c128[]
          %2 = constant() {value = dense<[]>} : u64[0,3]
          return %0, %1, %2
        }""",
    "iota": """
        func @iota() -> (i64[2,3]) {
          %0 = iota() {dtype = i64, shape = [2, 3], dimension = 1} : i64[2,3]
          return %0
        }""",
    "dot_general": """
        func @batched_matmul(%0: f16[2,3,4], %1: f16[2,4,5]) -> (f32[2,3,5]) {
          %2 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [1], lhs_batch = [0], rhs_batch = [0], preferred_element_type = f32} : f32[2,3,5]
          return %2
        }""",
    "conv_general_dilated": """
        func @conv(%0: f32[1,2,5,5], %1: f32[3,2,3,3]) -> (f32[1,3,3,3]) {
          %2 = conv_general_dilated(%0, %1) {window_strides = [1, 1], padding = [[0, 0], [0, 0]], lhs_dilation = [1, 1], rhs_dilation = [1, 1], lhs_spec = [0, 1, 2, 3], rhs_spec = [0, 1, 2, 3], out_spec = [0, 1, 2, 3], feature_group_count = 1, batch_group_count = 1, preferred_element_type = none} : f32[1,3,3,3]
          return %2
        }""",
    "reduce": """
        func @reduce(%0: i32[2,0,3]) -> (i32[3]) {
          %1 = reduce(%0) {reducer = "sum", axes = [0, 1]} : i32[3]
          return %1
        }""",
    "argmax": """
        func @argmax(%0: f32[2,3]) -> (i32[2]) {
          %1 = argmax(%0) {axis = 1, index_dtype = i32} : i32[2]
          return %1
        }""",
    "argmin": """
        func @argmin(%0: u16[4]) -> (i64[]) {
          %1 = argmin(%0) {axis = 0, index_dtype = i64} : i64[]
          return %1
        }""",
    "cumulative": """
        func @cumsum(%0: f64[3,4]) -> (f64[3,4]) {
          %1 = cumulative(%0) {reducer = "sum", axis = 1, reverse = true} : f64[3,4]
          return %1
        }""",
    "reduce_window": """
        func @pool(%0: f32[4,5]) -> (f32[2,5]) {
          %1 = reduce_window(%0) {reducer = "max", window_dimensions = [2, 2], window_strides = [2, 1], padding = [[0, 1], [1, 0]], base_dilation = [1, 1], window_dilation = [1, 1]} : f32[2,5]
          return %1
        }""",
    "broadcast_in_dim": """
        func @broadcast(%0: f32[3]) -> (f32[2,3]) {
          %1 = broadcast_in_dim(%0) {shape = [2, 3], broadcast_dimensions = [1]} : f32[2,3]
          return %1
        }""",
    "reshape": """
        func @reshape(%0: i8[2,3]) -> (i8[3,1,2]) {
          %1 = reshape(%0) {new_sizes = [3, 1, 2]} : i8[3,1,2]
          return %1
        }""",
    "transpose": """
        func @transpose(%0: bool[2,3,4]) -> (bool[4,2,3]) {
          %1 = transpose(%0) {permutation = [2, 0, 1]} : bool[4,2,3]
          return %1
        }""",
    "slice": """
        func @slice(%0: f32[7]) -> (f32[3]) {
          %1 = slice(%0) {start_indices = [1], limit_indices = [7], strides = [2]} : f32[3]
          return %1
        }""",
    "dynamic_slice": """
        func @dynamic_slice(%0: f32[5,6], %1: i32[], %2: i64[]) -> (f32[2,3]) {
          %3 = dynamic_slice(%0, %1, %2) {slice_sizes = [2, 3]} : f32[2,3]
          return %3
        }""",
    "dynamic_update_slice": """
        func @dynamic_update_slice(%0: f32[5,6], %1: f32[2,3], %2: i32[], %3: i32[]) -> (f32[5,6]) {
          %4 = dynamic_update_slice(%0, %1, %2, %3) : f32[5,6]
          return %4
        }""",
    "concatenate": """
        func @concatenate(%0: c64[2,3], %1: c64[2,0], %2: c64[2,1]) -> (c64[2,4]) {
          %3 = concatenate(%0, %1, %2) {dimension = 1} : c64[2,4]
          return %3
        }""",
    "pad": """
        func @pad(%0: f32[3], %1: f32[]) -> (f32[7]) {
          %2 = pad(%0, %1) {low = [-1], high = [1], interior = [2]} : f32[7]
          return %2
        }""",
    "rev": """
        func @rev(%0: u32[2,3]) -> (u32[2,3]) {
          %1 = rev(%0) {dimensions = [0, 1]} : u32[2,3]
          return %1
        }""",
    "bitcast_convert": """
        func @bitcast_convert(%0: f32[2,3], %1: u8[3,2]) -> (u16[2,3,2], f16[3], i32[2,3]) {
          %2 = bitcast_convert(%0) {dtype = u16} : u16[2,3,2]
          %3 = bitcast_convert(%1) {dtype = f16} : f16[3]
          %4 = bitcast_convert(%0) {dtype = i32} : i32[2,3]
          return %2, %3, %4
        }""",
    "gather": """
        func @gather(%0: f32[5,3], %1: i32[4,1]) -> (f32[4,3]) {
          %2 = gather(%0, %1) : f32[4,3]
          return %2
        }""",
    "scatter": """
        func @scatter(%0: f32[5,3], %1: i32[4,1], %2: f32[4,3]) -> (f32[5,3]) {
          %3 = scatter(%0, %1, %2) {reduction = "add"} : f32[5,3]
          return %3
        }""",
    "in place": """
        func @in_place(%0: f32[5,3], %1: i32[4,1], %2: f32[4,3], %3: f32[2,3], %4: i32[]) -> (f32[5,3]) {
          %5 = copy(%0) : f32[5,3]
          %6 = scatter_in_place(%5, %1, %2) {reduction = "set"} : f32[5,3]
          %7 = dynamic_update_slice_in_place(%6, %3, %4, %4) : f32[5,3]
          return %7
        }""",
    "while": """
        func @count(%0: f32[3]) -> (i32[], f32[3]) {
          %1 = constant() {value = dense<0>} : i32[]
          %2, %3 = while(%1, %0) : (i32[], f32[3]) {
            ^(%4: i32[], %5: f32[3]):
              %6 = constant() {value = dense<3>} : i32[]
              %7 = lt(%4, %6) : bool[]
              yield %7
            ^(%8: i32[], %9: f32[3]):
              %10 = constant() {value = dense<1>} : i32[]
              %11 = add(%8, %10) : i32[]
              %12 = mul(%9, %0) : f32[3]
              yield %11, %12
          }
          return %2, %3
        }""",
    "cond": """
        func @branch(%0: i32[], %1: f32[3]) -> (f32[3]) {
          %2 = cond(%0, %1) : f32[3] {
            ^(%3: f32[3]):
              %4 = neg(%3) : f32[3]
              yield %4
            ^(%5: f32[3]):
              yield %5
            ^(%6: f32[3]):
              %7 = exp(%1) : f32[3]
              yield %7
          }
          cond(%0) : () {
            ^():
              yield
          }
          return %2
        }""",
}

OP_CASES = {f"{name}-{dtype}": elementwise_text(name, dtype, 1) for dtype, names in UNARY.items() for name in names.split()}
OP_CASES |= {f"{name}-{dtype}": elementwise_text(name, dtype, 2) for dtype, names in BINARY.items() for name in names.split()}
OP_CASES |= {name: ir(text) for name, text in STRUCTURED.items()}


@pytest.mark.parametrize("text", OP_CASES.values(), ids=OP_CASES.keys())
def test_op_round_trip(text):
    module = cj.ir.parse(text)
    assert str(module) == text
    cj.ir.verify(module)


def test_op_cases_cover_the_op_table():
    covered = {op.name for text in OP_CASES.values() for op in walk(cj.ir.parse(text).body)}
    assert covered == set(cj.ir.OPS), f"ops without a text test: {sorted(set(cj.ir.OPS) - covered)}"


def test_hand_written_text_reads():
    """Any value names, free layout and comments; printing renumbers and re-indents."""
    text = """
        func @"my fn"(%x: f32[2]) -> (f32[2]) {  // a comment
          %y = neg(%x) : f32[2]   %z = add(%y,
                                           %x) : f32[2]
          return %z
        }"""
    assert str(cj.ir.parse(text)) == ir("""
        func @"my fn"(%0: f32[2]) -> (f32[2]) {
          %1 = neg(%0) : f32[2]
          %2 = add(%1, %0) : f32[2]
          return %2
        }""")


# ---- constants of every dtype, and every attribute kind --------------------------------------

def special_values(dtype_name):
    dtype = NUMPY_DTYPES[dtype_name]
    if dtype_name == "bool":
        return [True, False]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [int(info.min), int(info.max), 0, 1, int(info.max) // 3]
    real = COMPLEX_PART.get(dtype_name, dtype_name)
    info = ml_dtypes.finfo(NUMPY_DTYPES[real])
    floats = [0.1, -0.0, 0.0, np.nan, np.inf, -np.inf, float(info.max), float(info.min), float(info.tiny),
              float(info.smallest_subnormal), 1 / 3, 65504.0, 1e16]
    if dtype.kind == "c":
        return [complex(a, b) for a, b in zip(floats, floats[3:] + floats[:3])]
    return floats


def same_bits(a, b):
    """Bitwise equality that counts any NaN equal to any NaN (the text prints every NaN as `nan`)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    a, b = a.reshape(-1), b.reshape(-1)
    name = cj.ir.dtype_name(a.dtype)
    if name in COMPLEX_PART:
        a, b = (x.view(NUMPY_DTYPES[COMPLEX_PART[name]]) for x in (a, b))
    if name in ("f16", "bf16", "f32", "f64", "c64", "c128"):
        nan_a, nan_b = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
        return np.array_equal(nan_a, nan_b) and a[~nan_a].tobytes() == b[~nan_b].tobytes()
    return a.tobytes() == b.tobytes()


def constant_module(array):
    op = make_op("constant", [], {"value": array}, [TensorType(cj.ir.dtype_name(array.dtype), array.shape)])
    return Module("constants", Region([], [op], [op.result]))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (0, 3), (5,), (2, 3)])
def test_constant_round_trip(dtype, shape):
    values = special_values(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    flat = [values[i % len(values)] for i in range(size)]
    with np.errstate(all="ignore"):  # f64 extremes overflow to inf in narrower dtypes, as intended
        array = np.array(flat, dtype=np.complex128 if dtype in COMPLEX_PART else object).astype(
            NUMPY_DTYPES[dtype]).reshape(shape)
    module = constant_module(array)
    parsed = cj.ir.parse(str(module))
    assert str(parsed) == str(module)
    (parsed_array,) = cj.ir.interpret(parsed)
    assert same_bits(parsed_array, array)


@pytest.mark.parametrize("dtype, value, text", [
    ("f32", 0.1, "0.1"), ("f32", 100.0, "100.0"), ("f16", 65504.0, "65504.0"), ("bf16", 0.1, "0.1"),
    ("f64", 0.1, "0.1"), ("f32", 1e16, "1e+16"), ("f16", -0.0, "-0.0"), ("c64", 0.1 - 2j, "(0.1, -2.0)"),
])
def test_floats_print_shortest_in_their_dtype(dtype, value, text):
    module = constant_module(np.array(value).astype(NUMPY_DTYPES[dtype]))
    assert f"dense<{text}>" in str(module)


def attr_kinds_op(types, attrs, regions):
    return [TensorType("f32", (2,))]


ALL_KINDS_TEXT = ir("""
    func @kinds() -> (f32[2]) {
      %0 = all_kinds() {i = -3, ints = [0, 9223372036854775807], f = 2.5, f_int = 7, b = false, s = "a \\"quoted\\" f32", d = bf16, a = dense<[1.5, -inf]>, pairs = [[1, 2], [-3, 4]], sc_bool = true, sc_int = 18446744073709551615, sc_float = nan, sc_complex = (1.0, -0.5), maybe_int = none, maybe_dtype = none, maybe_ints = [2]} : f32[2]
      return %0
    }""")


def test_every_attribute_kind_reads_by_its_declared_kind(monkeypatch):
    kinds = {"i": "int", "ints": "ints", "f": "float", "f_int": "float", "b": "bool", "s": "str", "d": "dtype",
             "a": "array", "pairs": "int_pairs", "sc_bool": "scalar", "sc_int": "scalar", "sc_float": "scalar",
             "sc_complex": "scalar", "maybe_int": "int?", "maybe_dtype": "dtype?", "maybe_ints": "ints?"}
    assert {k.rstrip("?") for k in kinds.values()} == opdef.ATTR_KINDS
    monkeypatch.setitem(opdef.OPS, "all_kinds", opdef.OpDef("all_kinds", attr_kinds_op, None, kinds, 0))
    module = cj.ir.parse(ALL_KINDS_TEXT)
    assert str(module) == ALL_KINDS_TEXT
    cj.ir.verify(module)
    attrs = module.body.ops[0].attrs
    a = attrs.pop("a")
    assert a.dtype == np.float32 and a.shape == (2,) and a.tolist() == [1.5, -np.inf]
    assert attrs["sc_float"] != attrs["sc_float"]  # nan
    attrs.pop("sc_float")
    assert attrs == {"i": -3, "ints": (0, 2**63 - 1), "f": 2.5, "f_int": 7, "b": False, "s": 'a "quoted" f32',
                     "d": "bf16", "pairs": ((1, 2), (-3, 4)), "sc_bool": True, "sc_int": 2**64 - 1,
                     "sc_complex": 1 - 0.5j, "maybe_int": None, "maybe_dtype": None, "maybe_ints": (2,)}
    assert [type(v) for v in (attrs["f"], attrs["f_int"], attrs["sc_bool"], attrs["sc_complex"])] == [
        float, int, bool, complex]


# ---- parse errors ------------------------------------------------------------------------------

GOOD = """func @f(%0: f32[3], %1: i32[]) -> (f32[3]) {
  %2 = neg(%0) : f32[3]
  return %2
}
"""


def replace_line2(new_line):
    lines = GOOD.splitlines()
    lines[1] = new_line
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, line, column, message", [
    ("", 1, 1, "unexpected end of the text"),
    ("func @f() -> () {", 1, 18, "unexpected end of the text; expected"),
    (GOOD.replace("neg(%0)", "neg(%0"), 2, 15, "unexpected ':'"),
    (GOOD.replace("neg(%0)", "neg(%0) ~"), 2, 16, "unexpected character '~'"),
    (GOOD + "}", 5, 1, "unexpected '}'; expected the end of the text"),
    (replace_line2("  %2 = negate(%0) : f32[3]"), 2, 8, "unknown op 'negate'"),
    (replace_line2("  %2 = neg(%7) : f32[3]"), 2, 12, "unknown value %7"),
    (replace_line2("  %1 = neg(%0) : f32[3]"), 2, 3, "redefinition of %1"),
    (replace_line2("  %2 = neg(%0) : f33[3]"), 2, 18, "unknown dtype 'f33'"),
    (replace_line2("  %2 = neg(%0) : f32[-3]"), 2, 22, "a dimension must be in"),
    (replace_line2("  %2 = neg(%0) : f64[3]"), 2, 18, "neg: the result types (f64[3]) differ from the op's type rule (f32[3])"),
    (replace_line2("  %2 = exp(%1) : f32[3]"), 2, 8, "exp: operand of type i32[] has dtype i32"),
    (replace_line2("  %2 = neg(%0, %0) : f32[3]"), 2, 8, "neg takes 1 operands, got 2"),
    (replace_line2("  %2, %3 = neg(%0) : f32[3]"), 2, 22, "2 result names but 1 result types"),
    (replace_line2("  %2 = neg(%0) {axis = 1} : f32[3]"), 2, 17, "neg has no attribute 'axis'"),
    (replace_line2("  %2 = rev(%0) {dimensions = 0} : f32[3]"), 2, 30,
     "rev: attribute dimensions must be a list of integers, like [0, 1], got '0'"),
    (replace_line2("  %2 = rev(%0) {dimensions = [0], dimensions = [0]} : f32[3]"), 2, 35, "attribute dimensions is given twice"),
    (replace_line2("  %2 = rev(%0) : f32[3]"), 2, 8, "rev: missing attributes ['dimensions']"),
    (replace_line2("  %2 = convert(%0) {dtype = \"f32\"} : f32[3]"), 2, 29, "must be a dtype name"),
    (replace_line2("  %2 = constant() {value = dense<[1.0, 2.0]>} : f32[3]"), 2, 34, "does not have the shape of f32[3], at '[1.0, 2.0]'"),
    (replace_line2("  %2 = constant() {value = dense<[1, 2, 300]>} : u8[3]"), 2, 41, "an u8 element must be in [0, 256), got 300"),
    (replace_line2("  %2 = constant() {value = dense<[1, true, 3]>} : f32[3]"), 2, 38, "a dense literal of f32[3] cannot hold 'true'"),
    (replace_line2("  %2 = iota() {dtype = f32, shape = [3], dimension = 99999999999999999999} : f32[3]"), 2, 54,
     "an integer must be in"),
    (GOOD.replace("return %2", "return %0, %2"), 3, 10, "the function returns (f32[3], f32[3]) but declares (f32[3])"),
    (GOOD.replace("return %2", "return %0, %2").replace("(f32[3]) {", "(f32[3], f32[3]) {").replace(
        "neg(%0) : f32[3]", "cond(%1) : f32[3] {\n    ^():\n      %3 = neg(%0) : f32[3]\n      yield %3\n  }\n  %9 = neg(%3) : f32[3]"),
     7, 12, "unknown value %3"),
])
def test_parse_error_position_and_message(text, line, column, message):
    with pytest.raises(cj.ir.ParseError) as info:
        cj.ir.parse(text)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert message in str(info.value)
    assert str(info.value).startswith(f"{line}:{column}: ")
    assert info.value.token is not None and info.value.token in str(info.value)


# ---- random modules: print, parse, print and interpret ---------------------------------------

def accepts(name, types, attrs=None):
    try:
        opdef.infer_types(name, types, attrs or {})
        return True
    except cj.TypeCheckError:
        return False


UNARY_NAMES = [n for names in UNARY.values() for n in names.split()]
BINARY_NAMES = [n for names in BINARY.values() for n in names.split()]
REDUCERS = ["sum", "prod", "max", "min", "and", "or"]


class RandomModule:
    """Builds a random valid module from a table of op generators, drawing every choice from hypothesis."""

    def __init__(self, draw):
        self.draw = draw
        self.regions = []  # the region being filled, innermost last
        self.visible = []  # values visible in each open region

    def tensor_type(self, dtypes=tuple(NUMPY_DTYPES)):
        dtype = self.draw(st.sampled_from(dtypes))
        shape = self.draw(st.lists(st.integers(0, 3), max_size=3))
        return TensorType(dtype, tuple(shape))

    def emit(self, name, operands, attrs=None, regions=()):
        types = opdef.infer_types(name, [v.type for v in operands], attrs or {}, regions)
        op = make_op(name, operands, attrs or {}, types, regions)
        self.regions[-1].ops.append(op)
        self.visible[-1].extend(op.results)
        return op.results

    def pick(self, predicate=lambda v: True):
        candidates = [v for scope in self.visible for v in scope if predicate(v)]
        return self.draw(st.sampled_from(candidates)) if candidates else None

    def elements(self, t):
        """Element values for a constant of type t: the dtype's special values, or any value."""
        special = st.sampled_from(special_values(t.dtype))
        if t.dtype == "bool":
            return special
        if t.dtype in INTS:
            info = np.iinfo(t.numpy_dtype)
            return special | st.integers(int(info.min), int(info.max))
        if t.dtype in COMPLEX_PART:
            return special | st.complex_numbers()
        return special | st.floats()

    def constant(self, t=None):
        t = t or self.tensor_type()
        flat = self.draw(st.lists(self.elements(t), min_size=t.size, max_size=t.size))
        with np.errstate(all="ignore"):  # f64 values overflow to inf in narrower dtypes, as intended
            array = np.array(flat, dtype=np.complex128 if t.dtype in COMPLEX_PART else object)
            array = array.astype(t.numpy_dtype).reshape(t.shape)
        return self.emit("constant", [], {"value": array})[0]

    def literal(self, value, dtype):
        return self.emit("constant", [], {"value": np.array(value, dtype)})[0]

    # The op generators: each draws operands from the visible values and emits one or more ops.

    def gen_constant(self):
        self.constant()

    def gen_iota(self):
        t = self.tensor_type([d for d in NUMPY_DTYPES if d != "bool"])
        if t.shape:
            self.emit("iota", [], {"dtype": t.dtype, "shape": t.shape, "dimension": self.draw(st.integers(0, t.ndim - 1))})

    def gen_unary(self):
        x = self.pick()
        names = [n for n in UNARY_NAMES if accepts(n, [x.type])]
        if names:
            self.emit(self.draw(st.sampled_from(names)), [x])

    def gen_binary(self):
        x = self.pick()
        y = self.pick(lambda v: v.type == x.type)
        names = [n for n in BINARY_NAMES if accepts(n, [x.type, x.type])]
        if names:
            self.emit(self.draw(st.sampled_from(names)), [x, y])

    def gen_select(self):
        x = self.pick()
        pred = self.pick(lambda v: v.type == x.type.with_dtype("bool")) or self.emit("eq", [x, x])[0]
        self.emit("select", [pred, x, self.pick(lambda v: v.type == x.type)])

    def gen_convert(self):
        self.emit("convert", [self.pick()], {"dtype": self.draw(st.sampled_from(list(NUMPY_DTYPES)))})

    def gen_bitcast(self):
        x = self.pick(lambda v: v.type.dtype in INTS + FLOATS)
        if x is not None:
            targets = [d for d in INTS + FLOATS if accepts("bitcast_convert", [x.type], {"dtype": d})]
            self.emit("bitcast_convert", [x], {"dtype": self.draw(st.sampled_from(targets))})

    def gen_shape_op(self):
        x = self.pick()
        n = x.type.ndim
        kind = self.draw(st.sampled_from(["broadcast", "reshape", "transpose", "rev", "slice", "pad", "concat"]))
        if kind == "broadcast":
            self.emit("broadcast_in_dim", [x], {"shape": (2,) + x.type.shape, "broadcast_dimensions": tuple(range(1, n + 1))})
        elif kind == "reshape":
            self.emit("reshape", [x], {"new_sizes": tuple(reversed(x.type.shape))})
        elif kind == "transpose":
            self.emit("transpose", [x], {"permutation": tuple(self.draw(st.permutations(range(n))))})
        elif kind == "rev" and n:
            self.emit("rev", [x], {"dimensions": (self.draw(st.integers(0, n - 1)),)})
        elif kind == "slice":
            starts = tuple(self.draw(st.integers(0, d)) for d in x.type.shape)
            limits = tuple(self.draw(st.integers(s, d)) for s, d in zip(starts, x.type.shape))
            self.emit("slice", [x], {"start_indices": starts, "limit_indices": limits,
                                     "strides": tuple(self.draw(st.integers(1, 2)) for _ in range(n))})
        elif kind == "pad":
            value = self.constant(x.type.with_shape(()))
            self.emit("pad", [x, value], {"low": (1,) * n, "high": (-1,) * n if 0 not in x.type.shape else (0,) * n,
                                          "interior": (1,) * n})
        elif kind == "concat" and n:
            self.emit("concatenate", [x, x], {"dimension": self.draw(st.integers(0, n - 1))})

    def gen_reduction(self):
        x = self.pick()
        n = x.type.ndim
        reducers = [r for r in REDUCERS if accepts("reduce", [x.type], {"reducer": r, "axes": ()})]
        kind = self.draw(st.sampled_from(["reduce", "cumulative", "argmax"]))
        if kind == "reduce" and reducers:
            axes = tuple(sorted(self.draw(st.sets(st.integers(0, n - 1), max_size=n)))) if n else ()
            self.emit("reduce", [x], {"reducer": self.draw(st.sampled_from(reducers)), "axes": axes})
        elif kind == "cumulative" and n and set(reducers) & {"sum", "max"}:
            self.emit("cumulative", [x], {"reducer": self.draw(st.sampled_from(sorted(set(reducers) & {"sum", "max"}))),
                                          "axis": n - 1, "reverse": self.draw(st.booleans())})
        elif kind == "argmax" and n and x.type.shape[0] and accepts("max", [x.type, x.type]):
            self.emit("argmax", [x], {"axis": 0, "index_dtype": "i32"})

    def gen_dot(self):
        x = self.pick(lambda v: accepts("mul", [v.type, v.type]))
        if x is not None:
            n = x.type.ndim
            self.emit("dot_general", [x, x], {"lhs_contracting": tuple(range(n)), "rhs_contracting": tuple(range(n)),
                                              "lhs_batch": (), "rhs_batch": (), "preferred_element_type": None})

    def gen_while(self):
        """A counted loop: carry (i, y), cond i < trips, body i + 1 and random ops on y."""
        x = self.pick()
        trips = self.draw(st.integers(0, 3))
        carry = [self.literal(0, np.int32), x]
        types = [v.type for v in carry]
        cond = self.region(types, lambda i, y: [self.emit("lt", [i, self.literal(trips, np.int32)])[0]])
        body = self.region(types, lambda i, y: [self.emit("add", [i, self.literal(1, np.int32)])[0],
                                                self.random_ops_then_pick(y.type)])
        self.emit("while", carry, regions=[cond, body])

    def gen_cond(self):
        x = self.pick()
        index = self.constant(TensorType(self.draw(st.sampled_from(["i32", "u8", "i64"])), ()))
        branches = [self.region([x.type], lambda y: [self.random_ops_then_pick(y.type)])
                    for _ in range(self.draw(st.integers(1, 3)))]
        self.emit("cond", [index, x], regions=branches)

    def region(self, param_types, fill):
        """A region with parameters of `param_types`; fill(*params) emits its ops and returns its outputs."""
        region = Region([cj.ir.Value(t) for t in param_types])
        self.regions.append(region)
        self.visible.append(list(region.params))
        region.outputs = fill(*region.params)
        self.regions.pop()
        self.visible.pop()
        return region

    def random_ops_then_pick(self, t):
        self.random_ops(self.draw(st.integers(0, 3)))
        return self.pick(lambda v: v.type == t)

    GENERATORS = ["gen_constant", "gen_iota", "gen_unary", "gen_unary", "gen_binary", "gen_binary", "gen_select",
                  "gen_convert", "gen_bitcast", "gen_shape_op", "gen_reduction", "gen_dot", "gen_while", "gen_cond"]

    def random_ops(self, count):
        for _ in range(count):
            generator = self.draw(st.sampled_from(self.GENERATORS))
            if len(self.regions) > 2 and generator in ("gen_while", "gen_cond"):
                continue  # bounded nesting keeps the examples small
            getattr(self, generator)()

    def module(self):
        params = [cj.ir.Value(self.tensor_type()) for _ in range(self.draw(st.integers(1, 3)))]
        body = Region(params)
        self.regions.append(body)
        self.visible.append(list(params))
        self.random_ops(self.draw(st.integers(1, 8)))
        body.outputs = self.draw(st.lists(st.sampled_from(self.visible[0]), min_size=1, max_size=3))
        return Module("random", body)


@st.composite
def random_modules(draw):
    return RandomModule(draw).module()


def random_inputs(module, seed):
    rng = np.random.default_rng(seed)
    inputs = []
    for p in module.params:
        values = rng.normal(scale=4, size=p.type.shape)
        if p.type.dtype in COMPLEX_PART:
            values = values + 1j * rng.normal(scale=4, size=p.type.shape)
        with np.errstate(all="ignore"):  # negative values wrap in unsigned dtypes: any bits will do
            inputs.append(values > 0 if p.type.dtype == "bool" else values.astype(p.type.numpy_dtype))
    return inputs


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(module=random_modules(), seed=st.integers(0, 2**32 - 1))
def test_random_modules_round_trip_and_interpret_alike(module, seed):
    cj.ir.verify(module)
    text = str(module)
    parsed = cj.ir.parse(text)
    assert str(parsed) == text
    cj.ir.verify(parsed)
    inputs = random_inputs(module, seed)
    expected, actual = cj.ir.interpret(module, *inputs), cj.ir.interpret(parsed, *inputs)
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        assert same_bits(e, a), text
