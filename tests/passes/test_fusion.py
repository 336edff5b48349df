"""fusion: IR text in, IR text out; kernel counts of traced softmax and layernorm; no cycles; and
interpreter equivalence, including random traced programs (hypothesis)."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.frontend.tracing import bind1, constant
from cdnajit.ir.core import walk
from cdnajit.passes import canonicalize, fuse
from cdnajit.passes.fusion import MAX_ROW_ELEMENTS, SMALL_CONSTANT_ELEMENTS, FusionPlan, plan_region
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline


def check_fused(module):
    """Every fusion's region is closed (reads only its parameters) and the module verifies and round-trips."""
    cj.ir.verify(module)
    assert str(cj.ir.parse(str(module))) == str(module)
    for op in walk(module.body):
        if op.name == "fusion":
            defined = {id(p) for p in op.regions[0].params}
            for inner in op.regions[0].ops:
                assert all(id(v) in defined for v in inner.operands), f"fusion region reads an outside value: {inner}"
                defined.update(id(v) for v in inner.results)


def fusions(module):
    return [op for op in module.body.ops if op.name == "fusion"]


# (name, input text, expected text after fuse)
CASES = [
    ("elementwise_chain_with_broadcasts_and_constants", """
func @f(%0: f32[4,8], %1: f32[8]) -> (f16[4,8]) {
  %2 = constant() {value = dense<2.0>} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [4, 8], broadcast_dimensions = []} : f32[4,8]
  %4 = broadcast_in_dim(%1) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
  %5 = mul(%0, %3) : f32[4,8]
  %6 = add(%5, %4) : f32[4,8]
  %7 = tanh(%6) : f32[4,8]
  %8 = convert(%7) {dtype = f16} : f16[4,8]
  return %8
}""", """
func @f(%0: f32[4,8], %1: f32[8]) -> (f16[4,8]) {
  %2 = fusion(%1, %0) {kind = "loop"} : f16[4,8] {
    ^(%3: f32[8], %4: f32[4,8]):
      %5 = broadcast_in_dim(%3) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
      %6 = constant() {value = dense<2.0>} : f32[]
      %7 = broadcast_in_dim(%6) {shape = [4, 8], broadcast_dimensions = []} : f32[4,8]
      %8 = mul(%4, %7) : f32[4,8]
      %9 = add(%8, %5) : f32[4,8]
      %10 = tanh(%9) : f32[4,8]
      %11 = convert(%10) {dtype = f16} : f16[4,8]
      yield %11
  }
  return %2
}"""),
    ("siblings_become_one_multi_output_fusion", """
func @f(%0: f32[16]) -> (f32[16], f32[16]) {
  %1 = exp(%0) : f32[16]
  %2 = sin(%0) : f32[16]
  return %1, %2
}""", """
func @f(%0: f32[16]) -> (f32[16], f32[16]) {
  %1, %2 = fusion(%0) {kind = "loop"} : (f32[16], f32[16]) {
    ^(%3: f32[16]):
      %4 = exp(%3) : f32[16]
      %5 = sin(%3) : f32[16]
      yield %4, %5
  }
  return %1, %2
}"""),
    ("producer_used_outside_is_a_second_result", """
func @f(%0: f32[16]) -> (f32[16], f32[16]) {
  %1 = exp(%0) : f32[16]
  %2 = log(%1) : f32[16]
  return %1, %2
}""", """
func @f(%0: f32[16]) -> (f32[16], f32[16]) {
  %1, %2 = fusion(%0) {kind = "loop"} : (f32[16], f32[16]) {
    ^(%3: f32[16]):
      %4 = exp(%3) : f32[16]
      %5 = log(%4) : f32[16]
      yield %4, %5
  }
  return %1, %2
}"""),
    ("diamond_through_an_unfused_op_makes_no_cycle", """
func @f(%0: f32[4,4], %1: f32[4,4]) -> (f32[4,4]) {
  %2 = exp(%0) : f32[4,4]
  %3 = dot_general(%2, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,4]
  %4 = add(%2, %3) : f32[4,4]
  return %4
}""", """
func @f(%0: f32[4,4], %1: f32[4,4]) -> (f32[4,4]) {
  %2 = fusion(%0) {kind = "loop"} : f32[4,4] {
    ^(%3: f32[4,4]):
      %4 = exp(%3) : f32[4,4]
      yield %4
  }
  %5 = dot_general(%2, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,4]
  %6 = fusion(%2, %5) {kind = "loop"} : f32[4,4] {
    ^(%7: f32[4,4], %8: f32[4,4]):
      %9 = add(%7, %8) : f32[4,4]
      yield %9
  }
  return %6
}"""),
    ("reduction_with_producers_and_consumers", """
func @f(%0: f32[4,8]) -> (f32[4]) {
  %1 = exp(%0) : f32[4,8]
  %2 = reduce(%1) {reducer = "sum", axes = [1]} : f32[4]
  %3 = log(%2) : f32[4]
  return %3
}""", """
func @f(%0: f32[4,8]) -> (f32[4]) {
  %1 = fusion(%0) {kind = "reduction"} : f32[4] {
    ^(%2: f32[4,8]):
      %3 = exp(%2) : f32[4,8]
      %4 = reduce(%3) {reducer = "sum", axes = [1]} : f32[4]
      %5 = log(%4) : f32[4]
      yield %5
  }
  return %1
}"""),
    ("reductions_over_different_axes_stay_apart", """
func @f(%0: f32[4,8]) -> (f32[4], f32[8]) {
  %1 = reduce(%0) {reducer = "sum", axes = [1]} : f32[4]
  %2 = reduce(%0) {reducer = "max", axes = [0]} : f32[8]
  return %1, %2
}""", """
func @f(%0: f32[4,8]) -> (f32[4], f32[8]) {
  %1 = fusion(%0) {kind = "reduction"} : f32[4] {
    ^(%2: f32[4,8]):
      %3 = reduce(%2) {reducer = "sum", axes = [1]} : f32[4]
      yield %3
  }
  %4 = fusion(%0) {kind = "reduction"} : f32[8] {
    ^(%5: f32[4,8]):
      %6 = reduce(%5) {reducer = "max", axes = [0]} : f32[8]
      yield %6
  }
  return %1, %4
}"""),
    ("a_shared_broadcast_is_copied_into_each_kernel_not_written_out", """
func @f(%0: f32[4,8], %1: f32[8]) -> (f32[4], f32[8]) {
  %2 = broadcast_in_dim(%1) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
  %3 = mul(%0, %2) : f32[4,8]
  %4 = reduce(%3) {reducer = "sum", axes = [1]} : f32[4]
  %5 = add(%0, %2) : f32[4,8]
  %6 = reduce(%5) {reducer = "max", axes = [0]} : f32[8]
  return %4, %6
}""", """
func @f(%0: f32[4,8], %1: f32[8]) -> (f32[4], f32[8]) {
  %2 = fusion(%1, %0) {kind = "reduction"} : f32[4] {
    ^(%3: f32[8], %4: f32[4,8]):
      %5 = broadcast_in_dim(%3) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
      %6 = mul(%4, %5) : f32[4,8]
      %7 = reduce(%6) {reducer = "sum", axes = [1]} : f32[4]
      yield %7
  }
  %8 = fusion(%1, %0) {kind = "reduction"} : f32[8] {
    ^(%9: f32[8], %10: f32[4,8]):
      %11 = broadcast_in_dim(%9) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
      %12 = add(%10, %11) : f32[4,8]
      %13 = reduce(%12) {reducer = "max", axes = [0]} : f32[8]
      yield %13
  }
  return %2, %8
}"""),
    ("transpose_of_a_computed_value_starts_a_new_kernel", """
func @f(%0: f32[4,4]) -> (f32[4,4]) {
  %1 = exp(%0) : f32[4,4]
  %2 = transpose(%1) {permutation = [1, 0]} : f32[4,4]
  %3 = neg(%2) : f32[4,4]
  return %3
}""", """
func @f(%0: f32[4,4]) -> (f32[4,4]) {
  %1 = fusion(%0) {kind = "loop"} : f32[4,4] {
    ^(%2: f32[4,4]):
      %3 = exp(%2) : f32[4,4]
      yield %3
  }
  %4 = fusion(%1) {kind = "loop"} : f32[4,4] {
    ^(%5: f32[4,4]):
      %6 = transpose(%5) {permutation = [1, 0]} : f32[4,4]
      %7 = neg(%6) : f32[4,4]
      yield %7
  }
  return %4
}"""),
    ("loop_bodies_are_fused_and_loops_are_not", """
func @f(%0: f32[8], %1: i64[]) -> (f32[8]) {
  %2 = constant() {value = dense<3>} : i64[]
  %3, %4 = while(%1, %0) : (i64[], f32[8]) {
    ^(%5: i64[], %6: f32[8]):
      %7 = lt(%5, %2) : bool[]
      yield %7
    ^(%8: i64[], %9: f32[8]):
      %10 = exp(%9) : f32[8]
      %11 = neg(%10) : f32[8]
      %12 = constant() {value = dense<1>} : i64[]
      %13 = add(%8, %12) : i64[]
      yield %13, %11
  }
  return %4
}""", """
func @f(%0: f32[8], %1: i64[]) -> (f32[8]) {
  %2, %3 = while(%1, %0) : (i64[], f32[8]) {
    ^(%4: i64[], %5: f32[8]):
      %6 = fusion(%4) {kind = "loop"} : bool[] {
        ^(%7: i64[]):
          %8 = constant() {value = dense<3>} : i64[]
          %9 = lt(%7, %8) : bool[]
          yield %9
      }
      yield %6
    ^(%10: i64[], %11: f32[8]):
      %12 = fusion(%11) {kind = "loop"} : f32[8] {
        ^(%13: f32[8]):
          %14 = exp(%13) : f32[8]
          %15 = neg(%14) : f32[8]
          yield %15
      }
      %16 = fusion(%10) {kind = "loop"} : i64[] {
        ^(%17: i64[]):
          %18 = constant() {value = dense<1>} : i64[]
          %19 = add(%17, %18) : i64[]
          yield %19
      }
      yield %16, %12
  }
  return %3
}"""),
    # A bitcast between dtypes of one width is elementwise: it fuses between computed values.
    ("equal_width_bitcast_fuses_as_elementwise", """
func @f(%0: f32[4,8]) -> (i32[4,8]) {
  %1 = exp(%0) : f32[4,8]
  %2 = bitcast_convert(%1) {dtype = i32} : i32[4,8]
  %3 = add(%2, %2) : i32[4,8]
  return %3
}""", """
func @f(%0: f32[4,8]) -> (i32[4,8]) {
  %1 = fusion(%0) {kind = "loop"} : i32[4,8] {
    ^(%2: f32[4,8]):
      %3 = exp(%2) : f32[4,8]
      %4 = bitcast_convert(%3) {dtype = i32} : i32[4,8]
      %5 = add(%4, %4) : i32[4,8]
      yield %5
  }
  return %1
}"""),
    # Between widths it changes the shape: a leaf (index arithmetic on its operand), fused with its readers.
    ("narrowing_bitcast_is_a_leaf", """
func @f(%0: f32[4,8]) -> (u8[4,8,4]) {
  %1 = exp(%0) : f32[4,8]
  %2 = bitcast_convert(%1) {dtype = u8} : u8[4,8,4]
  %3 = add(%2, %2) : u8[4,8,4]
  return %3
}""", """
func @f(%0: f32[4,8]) -> (u8[4,8,4]) {
  %1 = fusion(%0) {kind = "loop"} : f32[4,8] {
    ^(%2: f32[4,8]):
      %3 = exp(%2) : f32[4,8]
      yield %3
  }
  %4 = fusion(%1) {kind = "loop"} : u8[4,8,4] {
    ^(%5: f32[4,8]):
      %6 = bitcast_convert(%5) {dtype = u8} : u8[4,8,4]
      %7 = add(%6, %6) : u8[4,8,4]
      yield %7
  }
  return %4
}"""),
    # A reshape that no kernel reads (a dot or a library call does, or the program returns it) is a
    # view of its operand: it stays a reshape, which the executable runs with no kernel.
    ("a_reshape_read_by_no_kernel_stays_a_view", """
func @f(%0: f32[2,4,8], %1: f32[8,3]) -> (f32[8,3], f32[2,4,3], f32[24]) {
  %2 = exp(%0) : f32[2,4,8]
  %3 = reshape(%2) {new_sizes = [8, 8]} : f32[8,8]
  %4 = dot_general(%3, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[8,3]
  %5 = reshape(%4) {new_sizes = [2, 4, 3]} : f32[2,4,3]
  %6 = reshape(%1) {new_sizes = [24]} : f32[24]
  return %4, %5, %6
}""", """
func @f(%0: f32[2,4,8], %1: f32[8,3]) -> (f32[8,3], f32[2,4,3], f32[24]) {
  %2 = fusion(%0) {kind = "loop"} : f32[2,4,8] {
    ^(%3: f32[2,4,8]):
      %4 = exp(%3) : f32[2,4,8]
      yield %4
  }
  %5 = reshape(%2) {new_sizes = [8, 8]} : f32[8,8]
  %6 = dot_general(%5, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[8,3]
  %7 = reshape(%6) {new_sizes = [2, 4, 3]} : f32[2,4,3]
  %8 = reshape(%1) {new_sizes = [24]} : f32[24]
  return %6, %7, %8
}"""),
    # Reshapes read by no kernel stay views when they are several: siblings of one value (the
    # library matcher's reshapes of an operand for two GEMMs; the rebuilt graph keeps one of the
    # identical two) and a reshape of a reshape.
    ("sibling_reshapes_and_a_reshape_of_a_reshape_stay_views", """
func @f(%0: f32[1,8,8], %1: f32[8,3]) -> (f32[8,3], f32[3,8], f32[24]) {
  %2 = reshape(%0) {new_sizes = [8, 8]} : f32[8,8]
  %3 = reshape(%0) {new_sizes = [8, 8]} : f32[8,8]
  %4 = dot_general(%2, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[8,3]
  %5 = dot_general(%1, %3) {lhs_contracting = [0], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[3,8]
  %6 = reshape(%4) {new_sizes = [1, 24]} : f32[1,24]
  %7 = reshape(%6) {new_sizes = [24]} : f32[24]
  return %4, %5, %7
}""", """
func @f(%0: f32[1,8,8], %1: f32[8,3]) -> (f32[8,3], f32[3,8], f32[24]) {
  %2 = reshape(%0) {new_sizes = [8, 8]} : f32[8,8]
  %3 = dot_general(%2, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[8,3]
  %4 = dot_general(%1, %2) {lhs_contracting = [0], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[3,8]
  %5 = reshape(%3) {new_sizes = [1, 24]} : f32[1,24]
  %6 = reshape(%5) {new_sizes = [24]} : f32[24]
  return %3, %4, %6
}"""),
    # canonicalize's form of a reshape adding 1-sized dimensions, a broadcast, read by no kernel: a view.
    ("a_unit_inserting_broadcast_read_by_no_kernel_becomes_a_view", """
func @f(%0: f32[8,8], %1: f32[1,8,3]) -> (f32[1,8,3]) {
  %2 = broadcast_in_dim(%0) {shape = [1, 8, 8], broadcast_dimensions = [1, 2]} : f32[1,8,8]
  %3 = dot_general(%2, %1) {lhs_contracting = [2], rhs_contracting = [1], lhs_batch = [0], rhs_batch = [0], preferred_element_type = none} : f32[1,8,3]
  return %3
}""", """
func @f(%0: f32[8,8], %1: f32[1,8,3]) -> (f32[1,8,3]) {
  %2 = reshape(%0) {new_sizes = [1, 8, 8]} : f32[1,8,8]
  %3 = dot_general(%2, %1) {lhs_contracting = [2], rhs_contracting = [1], lhs_batch = [0], rhs_batch = [0], preferred_element_type = none} : f32[1,8,3]
  return %3
}"""),
    # A dynamic_slice is a leaf: its reader's kernel reads the operand at the clamped start, and
    # the start scalars' arithmetic (0-d computed values: no iteration shape) joins that kernel.
    ("dynamic_slice_and_its_start_arithmetic_fuse_into_the_reader", """
func @f(%0: f32[8,16], %1: i32[]) -> (f32[16]) {
  %2 = constant() {value = dense<1>} : i32[]
  %3 = sub(%1, %2) : i32[]
  %4 = constant() {value = dense<0>} : i32[]
  %5 = dynamic_slice(%0, %3, %4) {slice_sizes = [1, 16]} : f32[1,16]
  %6 = reshape(%5) {new_sizes = [16]} : f32[16]
  %7 = exp(%6) : f32[16]
  return %7
}""", """
func @f(%0: f32[8,16], %1: i32[]) -> (f32[16]) {
  %2 = fusion(%1, %0) {kind = "loop"} : f32[16] {
    ^(%3: i32[], %4: f32[8,16]):
      %5 = constant() {value = dense<1>} : i32[]
      %6 = sub(%3, %5) : i32[]
      %7 = constant() {value = dense<0>} : i32[]
      %8 = dynamic_slice(%4, %6, %7) {slice_sizes = [1, 16]} : f32[1,16]
      %9 = reshape(%8) {new_sizes = [16]} : f32[16]
      %10 = exp(%9) : f32[16]
      yield %10
  }
  return %2
}"""),
    # Its sliced operand is moved, not computed: a computed one stays the result of its own kernel.
    ("dynamic_slice_of_a_computed_value_starts_the_next_kernel", """
func @f(%0: f32[8,16], %1: u8[], %2: i64[]) -> (f32[4,4]) {
  %3 = exp(%0) : f32[8,16]
  %4 = dynamic_slice(%3, %1, %2) {slice_sizes = [4, 4]} : f32[4,4]
  %5 = neg(%4) : f32[4,4]
  return %5
}""", """
func @f(%0: f32[8,16], %1: u8[], %2: i64[]) -> (f32[4,4]) {
  %3 = fusion(%0) {kind = "loop"} : f32[8,16] {
    ^(%4: f32[8,16]):
      %5 = exp(%4) : f32[8,16]
      yield %5
  }
  %6 = fusion(%3, %1, %2) {kind = "loop"} : f32[4,4] {
    ^(%7: f32[8,16], %8: u8[], %9: i64[]):
      %10 = dynamic_slice(%7, %8, %9) {slice_sizes = [4, 4]} : f32[4,4]
      %11 = neg(%10) : f32[4,4]
      yield %11
  }
  return %6
}"""),
    # A start used outside too is a 0-d result: it cannot share a kernel of results of another shape.
    ("a_start_read_outside_stays_a_result_of_its_own_kernel", """
func @f(%0: f32[8,16], %1: i64[]) -> (f32[16], i64[]) {
  %2 = constant() {value = dense<1>} : i64[]
  %3 = add(%1, %2) : i64[]
  %4 = constant() {value = dense<0>} : i64[]
  %5 = dynamic_slice(%0, %3, %4) {slice_sizes = [1, 16]} : f32[1,16]
  %6 = reshape(%5) {new_sizes = [16]} : f32[16]
  %7 = mul(%6, %6) : f32[16]
  return %7, %3
}""", """
func @f(%0: f32[8,16], %1: i64[]) -> (f32[16], i64[]) {
  %2 = fusion(%1) {kind = "loop"} : i64[] {
    ^(%3: i64[]):
      %4 = constant() {value = dense<1>} : i64[]
      %5 = add(%3, %4) : i64[]
      yield %5
  }
  %6 = fusion(%0, %2) {kind = "loop"} : f32[16] {
    ^(%7: f32[8,16], %8: i64[]):
      %9 = constant() {value = dense<0>} : i64[]
      %10 = dynamic_slice(%7, %8, %9) {slice_sizes = [1, 16]} : f32[1,16]
      %11 = reshape(%10) {new_sizes = [16]} : f32[16]
      %12 = mul(%11, %11) : f32[16]
      yield %12
  }
  return %6, %2
}"""),
    ("a_reduction_reads_a_dynamic_slice", """
func @f(%0: f32[8,16], %1: i32[]) -> (f32[]) {
  %2 = constant() {value = dense<0>} : i32[]
  %3 = dynamic_slice(%0, %1, %2) {slice_sizes = [1, 16]} : f32[1,16]
  %4 = reduce(%3) {reducer = "sum", axes = [0, 1]} : f32[]
  return %4
}""", """
func @f(%0: f32[8,16], %1: i32[]) -> (f32[]) {
  %2 = fusion(%0, %1) {kind = "reduction"} : f32[] {
    ^(%3: f32[8,16], %4: i32[]):
      %5 = constant() {value = dense<0>} : i32[]
      %6 = dynamic_slice(%3, %4, %5) {slice_sizes = [1, 16]} : f32[1,16]
      %7 = reduce(%6) {reducer = "sum", axes = [0, 1]} : f32[]
      yield %7
  }
  return %2
}"""),
    # A loop-carried array, sliced at an index computed from the loop counter in the same kernel.
    ("a_loop_carried_array_is_sliced_in_the_kernel_that_reads_the_slice", """
func @f(%0: f32[3,4], %1: i64[]) -> (f32[3,4]) {
  %2 = constant() {value = dense<0>} : i64[]
  %3, %4 = while(%2, %0) : (i64[], f32[3,4]) {
    ^(%5: i64[], %6: f32[3,4]):
      %7 = lt(%5, %1) : bool[]
      yield %7
    ^(%8: i64[], %9: f32[3,4]):
      %10 = constant() {value = dense<1>} : i64[]
      %11 = sub(%8, %10) : i64[]
      %12 = dynamic_slice(%9, %11, %2) {slice_sizes = [1, 4]} : f32[1,4]
      %13 = broadcast_in_dim(%12) {shape = [3, 4], broadcast_dimensions = [0, 1]} : f32[3,4]
      %14 = add(%9, %13) : f32[3,4]
      %15 = add(%8, %10) : i64[]
      yield %15, %14
  }
  return %4
}""", """
func @f(%0: f32[3,4], %1: i64[]) -> (f32[3,4]) {
  %2 = constant() {value = dense<0>} : i64[]
  %3, %4 = while(%2, %0) : (i64[], f32[3,4]) {
    ^(%5: i64[], %6: f32[3,4]):
      %7 = fusion(%5, %1) {kind = "loop"} : bool[] {
        ^(%8: i64[], %9: i64[]):
          %10 = lt(%8, %9) : bool[]
          yield %10
      }
      yield %7
    ^(%11: i64[], %12: f32[3,4]):
      %13 = fusion(%11, %12) {kind = "loop"} : f32[3,4] {
        ^(%14: i64[], %15: f32[3,4]):
          %16 = constant() {value = dense<1>} : i64[]
          %17 = sub(%14, %16) : i64[]
          %18 = constant() {value = dense<0>} : i64[]
          %19 = dynamic_slice(%15, %17, %18) {slice_sizes = [1, 4]} : f32[1,4]
          %20 = broadcast_in_dim(%19) {shape = [3, 4], broadcast_dimensions = [0, 1]} : f32[3,4]
          %21 = add(%15, %20) : f32[3,4]
          yield %21
      }
      %22 = fusion(%11) {kind = "loop"} : i64[] {
        ^(%23: i64[]):
          %24 = constant() {value = dense<1>} : i64[]
          %25 = add(%23, %24) : i64[]
          yield %25
      }
      yield %22, %13
  }
  return %4
}"""),
    # clamp reads its scalar bounds at the empty index: computed ones join its kernel as well.
    ("computed_scalar_clamp_bounds_fuse_into_the_clamp", """
func @f(%0: f32[300], %1: f32[]) -> (f32[300]) {
  %2 = exp(%1) : f32[]
  %3 = neg(%2) : f32[]
  %4 = clamp(%3, %0, %2) : f32[300]
  return %4
}""", """
func @f(%0: f32[300], %1: f32[]) -> (f32[300]) {
  %2 = fusion(%1, %0) {kind = "loop"} : f32[300] {
    ^(%3: f32[], %4: f32[300]):
      %5 = exp(%3) : f32[]
      %6 = neg(%5) : f32[]
      %7 = clamp(%6, %4, %5) : f32[300]
      yield %7
  }
  return %2
}"""),
    # The library matcher reshapes a sliced operand once per call that reads it: one kernel writes it once.
    ("one_slice_reshaped_for_two_library_calls_is_written_once", """
func @f(%0: f32[1,40,30], %1: f32[30,8]) -> (f32[39,8], f32[39,8]) {
  %2 = slice(%0) {start_indices = [0, 1, 0], limit_indices = [1, 40, 30], strides = [1, 1, 1]} : f32[1,39,30]
  %3 = reshape(%2) {new_sizes = [39, 30]} : f32[39,30]
  %4 = library_call(%3, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[39,8]
  %5 = reshape(%2) {new_sizes = [39, 30]} : f32[39,30]
  %6 = library_call(%5, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 2.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[39,8]
  return %4, %6
}""", """
func @f(%0: f32[1,40,30], %1: f32[30,8]) -> (f32[39,8], f32[39,8]) {
  %2 = fusion(%0) {kind = "loop"} : f32[39,30] {
    ^(%3: f32[1,40,30]):
      %4 = slice(%3) {start_indices = [0, 1, 0], limit_indices = [1, 40, 30], strides = [1, 1, 1]} : f32[1,39,30]
      %5 = reshape(%4) {new_sizes = [39, 30]} : f32[39,30]
      yield %5
  }
  %6 = library_call(%2, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[39,8]
  %7 = library_call(%2, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 2.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[39,8]
  return %6, %7
}"""),
    ("widening_bitcast_of_a_parameter_fuses", """
func @f(%0: u8[4,8,4]) -> (f32[4,8]) {
  %1 = bitcast_convert(%0) {dtype = f32} : f32[4,8]
  %2 = exp(%1) : f32[4,8]
  return %2
}""", """
func @f(%0: u8[4,8,4]) -> (f32[4,8]) {
  %1 = fusion(%0) {kind = "loop"} : f32[4,8] {
    ^(%2: u8[4,8,4]):
      %3 = bitcast_convert(%2) {dtype = f32} : f32[4,8]
      %4 = exp(%3) : f32[4,8]
      yield %4
  }
  return %1
}"""),
]


@pytest.mark.parametrize("name, before, after", CASES, ids=[case[0] for case in CASES])
def test_fusion_text(name, before, after, check_equivalent):
    module = cj.ir.parse(before)
    result = fuse(module)
    assert str(result) == str(cj.ir.parse(after))
    assert str(module) == str(cj.ir.parse(before)), "fuse changed its input"
    check_fused(result)
    check_equivalent(module, result)


def softmax(x):
    e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
    return e / cnp.sum(e, axis=-1, keepdims=True)


def layernorm(x, gamma, beta):
    mean = cnp.mean(x, axis=-1, keepdims=True)
    var = cnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / cnp.sqrt(var + 1e-5) * gamma + beta


@pytest.mark.parametrize("rows, cols", [(8, 16), (1, 1), (5, 1000), (3, MAX_ROW_ELEMENTS + 1)])
@pytest.mark.parametrize("function", [softmax, layernorm])
def test_softmax_and_layernorm_take_at_most_two_kernels(function, rows, cols, check_equivalent):
    args = [np.zeros((rows, cols), np.float32), np.zeros(cols, np.float32), np.zeros(cols, np.float32)]
    module = cj.make_graph(function)(*args[:function.__code__.co_argcount])
    result = fuse(canonicalize(module))
    check_fused(result)
    kernels = [op for op in result.body.ops if op.name != "constant"]
    assert all(op.name == "fusion" for op in kernels)
    if cols <= MAX_ROW_ELEMENTS:
        assert len(kernels) <= 2
    check_equivalent(module, result, trials=1)


def test_rows_longer_than_the_limit_are_not_broadcast_back_inside_a_kernel():
    module = cj.make_graph(softmax)(np.zeros((2, MAX_ROW_ELEMENTS + 1), np.float32))
    result = fuse(canonicalize(module))
    for op in fusions(result):
        inner_reduces = {id(v) for inner in op.regions[0].ops if inner.name == "reduce" for v in inner.results}
        assert not any(inner.name == "broadcast_in_dim" and id(inner.operands[0]) in inner_reduces
                       for inner in op.regions[0].ops)


def test_large_constants_are_operands_and_small_ones_are_copied():
    shape = (SMALL_CONSTANT_ELEMENTS + 1,)

    def f(x):
        big = constant(np.arange(shape[0], dtype=np.float32))
        small = constant(np.float32(3.0))
        return bind1("mul", [bind1("add", [x, big]), bind1("broadcast_in_dim", [small], {
            "shape": shape, "broadcast_dimensions": ()})])

    module = cj.make_graph(f)(np.zeros(shape, np.float32))
    result = fuse(module)
    assert [op.name for op in result.body.ops] == ["constant", "fusion"]
    assert result.body.ops[0].result.type.size == SMALL_CONSTANT_ELEMENTS + 1
    (fusion,) = fusions(result)
    assert len(fusion.operands) == 2
    assert [op.name for op in fusion.regions[0].ops] == ["add", "constant", "broadcast_in_dim", "mul"]


def gauss_seidel(a):
    def row(i, a):
        def point(j, a):
            return a.at[i, j].set(0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]))
        return lax.fori_loop(1, a.shape[1] - 1, point, a)
    return lax.fori_loop(1, a.shape[0] - 1, row, a)


def test_a_loop_body_reads_its_dynamic_slices_in_the_kernel_of_their_arithmetic(check_equivalent):
    # The four neighbour reads, their index arithmetic and the update's value: one kernel; the
    # update's index vector and the scatter are the others.
    module = cj.make_graph(gauss_seidel)(np.zeros((5, 6), np.float32))
    result = fuse(canonicalize(module))
    check_fused(result)
    (innermost,) = [op for op in walk(result.body)
                    if op.name == "while" and not any(inner.name == "while" for inner in walk(op.regions[1]))]
    names = [op.name for op in innermost.regions[1].ops if op.name != "constant"]
    assert names == ["fusion", "fusion", "scatter"]
    (point,) = [op for op in innermost.regions[1].ops if op.name == "fusion" and op.results[-1].type.dtype == "f32"]
    assert [op.name for op in point.regions[0].ops].count("dynamic_slice") == 4
    check_equivalent(module, result, trials=1)


def test_no_cycle_between_groups_on_a_wider_diamond():
    """exp feeds a dot and, through a chain, the add that also reads the dot: exp and add must stay apart."""
    def f(x, w):
        a = cnp.exp(x)
        b = cnp.tanh(a) * 2.0
        return b + cnp.sin(a @ w)

    module = canonicalize(cj.make_graph(f)(np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)))
    result = fuse(module)
    check_fused(result)
    graph = nx.DiGraph()
    producer = {id(v): i for i, op in enumerate(result.body.ops) for v in op.results}
    for j, op in enumerate(result.body.ops):
        graph.add_edges_from((producer[id(v)], j) for v in op.operands if id(v) in producer)
    assert nx.is_directed_acyclic_graph(graph)
    names = [op.name for op in result.body.ops if op.name != "constant"]
    assert names == ["fusion", "dot_general", "fusion"]


# ---- random programs --------------------------------------------------------------------------

UNARY = ["exp", "tanh", "neg", "abs", "sin", "log1p"]
BINARY = ["add", "sub", "mul", "max", "div"]


def random_program(instructions, rows, cols, dtype):
    """A traced function of x: [rows, cols] and v: [cols] built from (kind, a, b) instructions.

    Values are full ([rows, cols]) or reduced over axis 1 (per row) or axis 0 (per column);
    reductions are broadcast back through keepdims-style reshapes, as cnp does.
    """
    def program(x, v):
        full = [x, bind1("broadcast_in_dim", [v], {"shape": (rows, cols), "broadcast_dimensions": (1,)})]
        reduced = {1: [], 0: []}
        for kind, a, b in instructions:
            pick = lambda pool, k: pool[k % len(pool)]
            if kind in UNARY:
                full.append(bind1(kind, [pick(full, a)]))
            elif kind in BINARY:
                full.append(bind1(kind, [pick(full, a), pick(full, b)]))
            elif kind in REDUCTIONS:
                reducer, axis = REDUCTIONS[kind]
                reduced[axis].append(bind1("reduce", [pick(full, a)], {"reducer": reducer, "axes": (axis,)}))
            elif kind in BROADCASTS and reduced[BROADCASTS[kind]]:
                axis = BROADCASTS[kind]
                kept = bind1("reshape", [pick(reduced[axis], a)], {"new_sizes": (rows, 1) if axis else (1, cols)})
                full.append(bind1("broadcast_in_dim", [kept], {"shape": (rows, cols), "broadcast_dimensions": (0, 1)}))
            elif kind == "scale":
                full.append(bind1("mul", [pick(full, a), constant(np.full((rows, cols), 0.5, dtype))]))
        return full[-1], *reduced[1][-2:], *reduced[0][-1:]
    return program


REDUCTIONS = {"row_sum": ("sum", 1), "row_max": ("max", 1), "column_sum": ("sum", 0)}
BROADCASTS = {"row_broadcast": 1, "column_broadcast": 0}
INSTRUCTION = st.tuples(st.sampled_from(UNARY + BINARY + list(REDUCTIONS) + list(BROADCASTS) + ["scale"]),
                        st.integers(0, 50), st.integers(0, 50))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(instructions=st.lists(INSTRUCTION, min_size=1, max_size=14), rows=st.integers(0, 4), cols=st.integers(1, 5),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_random_programs_keep_their_results(instructions, rows, cols, dtype, check_equivalent):
    module = cj.make_graph(random_program(instructions, rows, cols, dtype))(
        np.zeros((rows, cols), dtype), np.zeros(cols, dtype))
    result = fuse(canonicalize(module))
    check_fused(result)
    assert all(op.name in ("fusion", "constant", "reshape") for op in result.body.ops)   # reshape: a view
    read_by_kernels = {id(v) for fusion in fusions(result) for v in fusion.operands}
    for fusion in fusions(result):
        for inner, outer in zip(fusion.regions[0].outputs, fusion.results):
            op = inner.producer
            expanding = (op is not None and op.name == "broadcast_in_dim"
                         and op.result.type.size > op.operands[0].type.size)
            assert not (expanding and id(outer) in read_by_kernels), "a kernel writes out broadcast data for another"
    check_equivalent(module, result, trials=2)


def test_fusing_again_changes_nothing_and_canonicalize_keeps_kernels_closed():
    w = np.full((4, 4), 2.0, np.float32)

    def f(x):  # w is read by a dot (a top-level constant) and by a kernel (a copy inside it): CSE must not merge them
        y = cnp.exp(x) * 2.0
        return y + cnp.sum(y * 1.0, axis=1, keepdims=True), x @ w + w

    fused = fuse(canonicalize(cj.make_graph(f)(np.zeros((4, 4), np.float32))))
    assert str(fuse(fused)) == str(fused)
    canonical = canonicalize(fused)
    check_fused(canonical)
    assert [op.name for op in canonical.body.ops] == [op.name for op in fused.body.ops]


def test_an_op_is_copied_only_with_its_producers(check_equivalent):
    # slice(broadcast(0)) is also read by a cond, so it is materialized; the convert reading it must
    # then not be copied into a kernel scheduled before it (the schedule has no edge through copies).
    text = """
func @f(%0: f32[8], %1: i32[]) -> (f64[4], f32[4]) {
  %5 = slice(%0) {start_indices = [2], limit_indices = [6], strides = [1]} : f32[4]
  %2 = constant() {value = dense<0.0>} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [8], broadcast_dimensions = []} : f32[8]
  %4 = slice(%3) {start_indices = [2], limit_indices = [6], strides = [1]} : f32[4]
  %6 = convert(%4) {dtype = f64} : f64[4]
  %7 = convert(%5) {dtype = f64} : f64[4]
  %8 = add(%6, %7) : f64[4]
  %9 = cond(%1, %4, %5) : f32[4] {
    ^(%10: f32[4], %11: f32[4]):
      yield %10
    ^(%12: f32[4], %13: f32[4]):
      %14 = mul(%12, %13) : f32[4]
      yield %14
  }
  return %8, %9
}"""
    module = cj.ir.parse(text)
    result = fuse(module)
    cj.ir.verify(result)
    check_equivalent(module, result)


def test_a_group_straddling_a_loop_does_not_close_a_cycle():
    """Fuzz seed 4141014152: `eq(x0, x0)` and the final `mul(..., x0)` are siblings, one group
    whose ops straddle the scan; the slice feeding the scan then joins the matmul's group, which
    the first reads. The pruned cycle search missed that path; the plan is made again exactly."""
    def program(x0, x2):
        v3 = (x0 == x0) @ x2
        v4 = lax.scan(lambda c, x: (cnp.broadcast_to(x == (0.5 - 2j), c.shape).astype(c.dtype), None), x2[0], x2)[0]
        return v4 * x0, v3

    x0, x2 = np.array([3, -1, 7]), np.array([True, False, True])
    module = cj.make_graph(program)(x0, x2)
    before_fusion = run_pipeline(module, [p for p in DEFAULT_PIPELINE if p[0] not in ("fusion", "in_place")]).module
    assert not nx.is_directed_acyclic_graph(FusionPlan(before_fusion.body).graph)
    assert nx.is_directed_acyclic_graph(plan_region(before_fusion.body).graph)
    for got, want in zip(cj.jit(program)(x0, x2), cj.ir.interpret(module, x0, x2)):
        np.testing.assert_array_equal(got, want)
