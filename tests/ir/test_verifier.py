"""The verifier on hand-broken modules: each error names the op, its line in str(module), and the problem."""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.ir.core import Module, Region, Value, make_op
from cdnajit.ir.types import TensorType

F32 = TensorType("f32", (3,))
I32 = TensorType("i32", ())
BOOL = TensorType("bool", ())

LOOP = """func @loop(%0: f32[3]) -> (i32[], f32[3]) {
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
}
"""


def loop():
    """The LOOP module and its ops by printed name: a fresh valid module for each test to break."""
    module = cj.ir.parse(LOOP)
    (constant, loop_op) = module.body.ops
    cond, body = loop_op.regions
    return module, {"%1": constant, "while": loop_op, "cond": cond, "body": body,
                    "%6": cond.ops[0], "%7": cond.ops[1], "%10": body.ops[0], "%11": body.ops[1], "%12": body.ops[2]}


def line_of(module, text):
    """The 1-based line of str(module) that contains `text`."""
    return next(i for i, line in enumerate(str(module).splitlines(), 1) if text in line)


def assert_verify_error(module, line, *fragments):
    with pytest.raises(cj.ir.VerifyError) as info:
        cj.ir.verify(module)
    message = str(info.value)
    assert message.startswith(f"line {line}: "), message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_valid_modules_verify():
    module, _ = loop()
    cj.ir.verify(module)
    cj.ir.verify(Module("empty", Region()))


def test_use_of_undefined_value():
    module, ops = loop()
    ops["%12"].operands[1] = Value(F32)  # never defined anywhere
    assert_verify_error(module, 11, "line 11: mul: operand 1 (f32[3]) is not defined anywhere in the module")
    assert "mul(%9, %undefined)" in str(module)


def test_use_before_definition():
    module, ops = loop()
    body = ops["body"]
    body.ops = [ops["%11"], ops["%10"], ops["%12"]]  # add(%8, %10) now comes before %10's constant
    assert_verify_error(module, 9, "line 9: add: operand 1 %11 (i32[]) is not visible here: it is defined later")


def test_wrong_result_type():
    module, ops = loop()
    ops["%11"].results[0].type = TensorType("i64", ())
    assert_verify_error(module, 10, "add: the result types (i64[]) differ from the op's type rule (i32[])")


def test_region_signature_mismatch():
    module, ops = loop()
    ops["cond"].params[1].type = TensorType("f32", (4,))  # unused in cond, so only the signature is wrong
    assert_verify_error(module, 3, "while: cond and body parameters (i32[], f32[4]; i32[], f32[3]) "
                                   "must match the initial values (i32[], f32[3])")


def test_region_yields_wrong_type():
    module, ops = loop()
    ops["cond"].outputs[0] = ops["cond"].params[0]
    assert_verify_error(module, 3, "while: cond must yield one bool[], got (i32[])")


def test_value_escaping_its_region():
    module, ops = loop()
    outer = make_op("neg", [ops["%12"].result], {}, [F32])  # %12 lives inside the loop's body
    module.body.ops.append(outer)
    module.body.outputs[1] = outer.result
    line = line_of(module, "neg(%12)")
    assert line == 14
    assert_verify_error(module, 14, "line 14: neg: operand 0 %12 (f32[3]) is not visible here")


def test_region_parameter_is_not_visible_outside():
    module, ops = loop()
    module.body.outputs[0] = ops["cond"].params[0]
    assert_verify_error(module, 14, "return: output 0 %4 (i32[]) is not visible here")


def test_region_yields_a_value_of_a_sibling_region():
    module, ops = loop()
    ops["body"].outputs[0] = ops["%6"].result  # defined in the cond region
    assert_verify_error(module, 3, "while: region 1 yields, as output 0, a value that %6 (i32[]) is not visible")


def test_module_output_undefined():
    module, _ = loop()
    module.body.outputs.append(Value(F32))
    assert_verify_error(module, 14, "return: output 2 (f32[3]) is not defined anywhere")


def test_value_defined_twice():
    module, ops = loop()
    ops["%11"].results[0] = ops["%10"].result
    assert_verify_error(module, 10, "add: result 0 (i32[]) is already defined elsewhere")


def test_unknown_op_and_bad_attributes():
    x = Value(F32)
    for op, message in [
        (make_op("frobnicate", [x], {}, [F32]), "frobnicate: unknown op 'frobnicate'"),
        (make_op("rev", [x], {"dimensions": [0]}, [F32]), "rev: attribute dimensions=[0] is not a ints"),
        (make_op("rev", [x], {}, [F32]), "rev: missing attributes ['dimensions']"),
        (make_op("rev", [x], {"dimensions": (0,), "axis": 1}, [F32]), "rev: unknown attributes ['axis']"),
        (make_op("neg", [x, x], {}, [F32]), "neg takes 1 operands, got 2"),
        (make_op("convert", [x], {"dtype": "f33"}, [F32]), "convert: attribute dtype='f33' is not a dtype"),
        (make_op("while", [x], {}, [F32], [Region([Value(F32)], [], [])]), "while takes 2 regions, got 1"),
    ]:
        module = Module("bad", Region([x], [op], op.results))
        assert_verify_error(module, 2, message)


def test_constant_of_wrong_type():
    op = make_op("constant", [], {"value": np.zeros(3, np.float64)}, [F32])
    assert_verify_error(Module("c", Region([], [op], [op.result])), 2,
                        "constant: the result types (f32[3]) differ from the op's type rule (f64[3])")


def test_cond_branch_signature_mismatch():
    index, x = Value(I32), Value(F32)
    good = Region([Value(F32)])
    good.outputs = list(good.params)
    bad = Region([Value(TensorType("f64", (3,)))])
    bad.outputs = list(bad.params)
    op = make_op("cond", [index, x], {}, [F32], [good, bad])
    assert_verify_error(Module("c", Region([index, x], [op], op.results)), 2,
                        "cond: branch 1 takes (f64[3]) but the operands are (f32[3])")


def test_parsed_module_line_numbers_match_the_text():
    module, ops = loop()
    for name in ("%6", "%7", "%10", "%11", "%12"):
        op = ops[name]
        saved = op.results[0].type
        op.results[0].type = TensorType("u8", (7,))
        assert_verify_error(module, line_of(module, f"{name} = "), op.name)
        op.results[0].type = saved
    cj.ir.verify(module)
