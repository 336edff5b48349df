"""canonicalize: IR text in, IR text out, one case per rule; and interpreter equivalence."""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.passes import canonicalize, eliminate_common_subexpressions, eliminate_dead_code, fold_constants
from cdnajit.passes.rules import RULES, is_lossless

# (name, input text, expected text after canonicalize)
CASES = [
    ("add_int_zero", """
func @f(%0: i32[2,3]) -> (i32[2,3]) {
  %1 = constant() {value = dense<0>} : i32[]
  %2 = broadcast_in_dim(%1) {shape = [2, 3], broadcast_dimensions = []} : i32[2,3]
  %3 = add(%2, %0) : i32[2,3]
  return %3
}""", """
func @f(%0: i32[2,3]) -> (i32[2,3]) {
  return %0
}"""),
    ("dot_of_vectors_batched_is_a_sum_of_products_in_f32", """
func @f(%0: f16[3,5], %1: f16[5,3]) -> (f16[3]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [0], rhs_batch = [1], preferred_element_type = none} : f16[3]
  return %2
}""", """
func @f(%0: f16[3,5], %1: f16[5,3]) -> (f16[3]) {
  %2 = convert(%0) {dtype = f32} : f32[3,5]
  %3 = transpose(%1) {permutation = [1, 0]} : f16[3,5]
  %4 = convert(%3) {dtype = f32} : f32[3,5]
  %5 = mul(%2, %4) : f32[3,5]
  %6 = reduce(%5) {reducer = "sum", axes = [1]} : f32[3]
  %7 = constant() {value = dense<0.0>} : f32[]
  %8 = broadcast_in_dim(%7) {shape = [3], broadcast_dimensions = []} : f32[3]
  %9 = add(%6, %8) : f32[3]
  %10 = convert(%9) {dtype = f16} : f16[3]
  return %10
}"""),
    ("dot_of_a_row_and_a_column_is_a_sum_of_products", """
func @f(%0: f32[1,5], %1: f32[5,1]) -> (f32[1,1]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[1,1]
  return %2
}""", """
func @f(%0: f32[1,5], %1: f32[5,1]) -> (f32[1,1]) {
  %2 = transpose(%0) {permutation = [1, 0]} : f32[5,1]
  %3 = reshape(%2) {new_sizes = [5]} : f32[5]
  %4 = reshape(%1) {new_sizes = [5]} : f32[5]
  %5 = mul(%3, %4) : f32[5]
  %6 = reduce(%5) {reducer = "sum", axes = [0]} : f32[]
  %7 = constant() {value = dense<0.0>} : f32[]
  %8 = add(%6, %7) : f32[]
  %9 = broadcast_in_dim(%8) {shape = [1, 1], broadcast_dimensions = []} : f32[1,1]
  return %9
}"""),
    ("dot_of_a_matrix_stays", """
func @f(%0: f32[2,5], %1: f32[5]) -> (f32[2]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[2]
  return %2
}""", """
func @f(%0: f32[2,5], %1: f32[5]) -> (f32[2]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[2]
  return %2
}"""),
    ("add_float_positive_zero_kept", """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = constant() {value = dense<[0.0, 0.0, 0.0]>} : f32[3]
  %2 = add(%0, %1) : f32[3]
  return %2
}""", """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = constant() {value = dense<[0.0, 0.0, 0.0]>} : f32[3]
  %2 = add(%0, %1) : f32[3]
  return %2
}"""),
    ("add_float_negative_zero", """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = constant() {value = dense<[-0.0, -0.0, -0.0]>} : f32[3]
  %2 = add(%0, %1) : f32[3]
  return %2
}""", """
func @f(%0: f32[3]) -> (f32[3]) {
  return %0
}"""),
    ("sub_zero_mul_one_div_one_pow_one", """
func @f(%0: f64[4]) -> (f64[4]) {
  %1 = constant() {value = dense<0.0>} : f64[]
  %2 = broadcast_in_dim(%1) {shape = [4], broadcast_dimensions = []} : f64[4]
  %3 = constant() {value = dense<1.0>} : f64[]
  %4 = broadcast_in_dim(%3) {shape = [4], broadcast_dimensions = []} : f64[4]
  %5 = sub(%0, %2) : f64[4]
  %6 = mul(%4, %5) : f64[4]
  %7 = div(%6, %4) : f64[4]
  %8 = pow(%7, %4) : f64[4]
  return %8
}""", """
func @f(%0: f64[4]) -> (f64[4]) {
  return %0
}"""),
    ("one_div_x_kept", """
func @f(%0: f32[]) -> (f32[]) {
  %1 = constant() {value = dense<1.0>} : f32[]
  %2 = div(%1, %0) : f32[]
  return %2
}""", """
func @f(%0: f32[]) -> (f32[]) {
  %1 = constant() {value = dense<1.0>} : f32[]
  %2 = div(%1, %0) : f32[]
  return %2
}"""),
    ("mul_int_zero", """
func @f(%0: i64[2]) -> (i64[2]) {
  %1 = constant() {value = dense<[0, 0]>} : i64[2]
  %2 = mul(%0, %1) : i64[2]
  return %2
}""", """
func @f(%0: i64[2]) -> (i64[2]) {
  %1 = constant() {value = dense<[0, 0]>} : i64[2]
  return %1
}"""),
    ("mul_float_zero_kept", """
func @f(%0: f32[]) -> (f32[]) {
  %1 = constant() {value = dense<0.0>} : f32[]
  %2 = mul(%0, %1) : f32[]
  return %2
}""", """
func @f(%0: f32[]) -> (f32[]) {
  %1 = constant() {value = dense<0.0>} : f32[]
  %2 = mul(%0, %1) : f32[]
  return %2
}"""),
    ("sub_and_xor_self_int", """
func @f(%0: u8[2,2], %1: i32[]) -> (u8[2,2], i32[]) {
  %2 = sub(%0, %0) : u8[2,2]
  %3 = xor(%1, %1) : i32[]
  return %2, %3
}""", """
func @f(%0: u8[2,2], %1: i32[]) -> (u8[2,2], i32[]) {
  %2 = constant() {value = dense<0>} : u8[]
  %3 = broadcast_in_dim(%2) {shape = [2, 2], broadcast_dimensions = []} : u8[2,2]
  %4 = constant() {value = dense<0>} : i32[]
  return %3, %4
}"""),
    ("sub_self_float_kept", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = sub(%0, %0) : f32[2]
  return %1
}""", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = sub(%0, %0) : f32[2]
  return %1
}"""),
    ("idempotent_and_or_max_min", """
func @f(%0: i32[3], %1: f32[3]) -> (i32[3], f32[3]) {
  %2 = and(%0, %0) : i32[3]
  %3 = or(%2, %2) : i32[3]
  %4 = max(%1, %1) : f32[3]
  %5 = min(%4, %4) : f32[3]
  return %3, %5
}""", """
func @f(%0: i32[3], %1: f32[3]) -> (i32[3], f32[3]) {
  return %0, %1
}"""),
    ("bool_identities", """
func @f(%0: bool[2]) -> (bool[2]) {
  %1 = constant() {value = dense<true>} : bool[]
  %2 = broadcast_in_dim(%1) {shape = [2], broadcast_dimensions = []} : bool[2]
  %3 = constant() {value = dense<false>} : bool[]
  %4 = broadcast_in_dim(%3) {shape = [2], broadcast_dimensions = []} : bool[2]
  %5 = and(%2, %0) : bool[2]
  %6 = or(%5, %4) : bool[2]
  %7 = xor(%6, %4) : bool[2]
  return %7
}""", """
func @f(%0: bool[2]) -> (bool[2]) {
  return %0
}"""),
    ("involutions", """
func @f(%0: i8[3], %1: bool[3], %2: c64[3]) -> (i8[3], bool[3], c64[3]) {
  %3 = neg(%0) : i8[3]
  %4 = neg(%3) : i8[3]
  %5 = not(%1) : bool[3]
  %6 = not(%5) : bool[3]
  %7 = conj(%2) : c64[3]
  %8 = conj(%7) : c64[3]
  return %4, %6, %8
}""", """
func @f(%0: i8[3], %1: bool[3], %2: c64[3]) -> (i8[3], bool[3], c64[3]) {
  return %0, %1, %2
}"""),
    ("abs_of_neg", """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = neg(%0) : f32[3]
  %2 = abs(%1) : f32[3]
  %3 = abs(%2) : f32[3]
  return %3
}""", """
func @f(%0: f32[3]) -> (f32[3]) {
  %1 = abs(%0) : f32[3]
  return %1
}"""),
    ("select_same_branches", """
func @f(%0: bool[2], %1: f32[2]) -> (f32[2]) {
  %2 = select(%0, %1, %1) : f32[2]
  return %2
}""", """
func @f(%0: bool[2], %1: f32[2]) -> (f32[2]) {
  return %1
}"""),
    ("select_constant_predicate", """
func @f(%0: f32[2], %1: f32[2]) -> (f32[2], f32[2]) {
  %2 = constant() {value = dense<true>} : bool[]
  %3 = broadcast_in_dim(%2) {shape = [2], broadcast_dimensions = []} : bool[2]
  %4 = constant() {value = dense<[false, false]>} : bool[2]
  %5 = select(%3, %0, %1) : f32[2]
  %6 = select(%4, %0, %1) : f32[2]
  return %5, %6
}""", """
func @f(%0: f32[2], %1: f32[2]) -> (f32[2], f32[2]) {
  return %0, %1
}"""),
    ("select_of_not", """
func @f(%0: bool[2], %1: f32[2], %2: f32[2]) -> (f32[2]) {
  %3 = not(%0) : bool[2]
  %4 = select(%3, %1, %2) : f32[2]
  return %4
}""", """
func @f(%0: bool[2], %1: f32[2], %2: f32[2]) -> (f32[2]) {
  %3 = select(%0, %2, %1) : f32[2]
  return %3
}"""),
    ("convert_to_same_dtype", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = convert(%0) {dtype = f32} : f32[2]
  return %1
}""", """
func @f(%0: f32[2]) -> (f32[2]) {
  return %0
}"""),
    ("bitcast_chains_compose", """
func @f(%0: f32[2], %1: u8[2,4]) -> (f32[2], u32[2], u16[2,2], f32[2]) {
  %2 = bitcast_convert(%0) {dtype = u8} : u8[2,4]
  %3 = bitcast_convert(%2) {dtype = f32} : f32[2]
  %4 = bitcast_convert(%0) {dtype = i32} : i32[2]
  %5 = bitcast_convert(%4) {dtype = u32} : u32[2]
  %6 = bitcast_convert(%1) {dtype = f32} : f32[2]
  %7 = bitcast_convert(%6) {dtype = u16} : u16[2,2]
  %8 = bitcast_convert(%0) {dtype = f32} : f32[2]
  return %3, %5, %7, %8
}""", """
func @f(%0: f32[2], %1: u8[2,4]) -> (f32[2], u32[2], u16[2,2], f32[2]) {
  %2 = bitcast_convert(%0) {dtype = u32} : u32[2]
  %3 = bitcast_convert(%1) {dtype = f32} : f32[2]
  %4 = bitcast_convert(%3) {dtype = u16} : u16[2,2]
  return %0, %2, %4, %0
}"""),
    ("convert_chain_lossless", """
func @f(%0: f32[2], %1: i16[2]) -> (f16[2], f32[2], i8[2]) {
  %2 = convert(%0) {dtype = f64} : f64[2]
  %3 = convert(%2) {dtype = f16} : f16[2]
  %4 = convert(%2) {dtype = f32} : f32[2]
  %5 = convert(%1) {dtype = i64} : i64[2]
  %6 = convert(%5) {dtype = i8} : i8[2]
  return %3, %4, %6
}""", """
func @f(%0: f32[2], %1: i16[2]) -> (f16[2], f32[2], i8[2]) {
  %2 = convert(%0) {dtype = f16} : f16[2]
  %3 = convert(%1) {dtype = i8} : i8[2]
  return %2, %0, %3
}"""),
    # int -> float -> int saturates where int -> int wraps: composed only when the ints' ranges nest
    ("convert_chain_through_float_to_narrower_int_kept", """
func @f(%0: i8[2]) -> (u8[2], u32[2], i32[2]) {
  %1 = convert(%0) {dtype = f64} : f64[2]
  %2 = convert(%1) {dtype = u8} : u8[2]
  %3 = convert(%1) {dtype = u32} : u32[2]
  %4 = convert(%1) {dtype = i32} : i32[2]
  return %2, %3, %4
}""", """
func @f(%0: i8[2]) -> (u8[2], u32[2], i32[2]) {
  %1 = convert(%0) {dtype = f64} : f64[2]
  %2 = convert(%1) {dtype = u8} : u8[2]
  %3 = convert(%1) {dtype = u32} : u32[2]
  %4 = convert(%0) {dtype = i32} : i32[2]
  return %2, %3, %4
}"""),
    ("convert_chain_lossy_kept", """
func @f(%0: f64[2], %1: i64[2], %2: f32[2]) -> (f64[2], f64[2], f32[2]) {
  %3 = convert(%0) {dtype = f32} : f32[2]
  %4 = convert(%3) {dtype = f64} : f64[2]
  %5 = convert(%1) {dtype = f64} : f64[2]
  %6 = convert(%5) {dtype = f64} : f64[2]
  %7 = convert(%2) {dtype = bf16} : bf16[2]
  %8 = convert(%7) {dtype = f32} : f32[2]
  return %4, %6, %8
}""", """
func @f(%0: f64[2], %1: i64[2], %2: f32[2]) -> (f64[2], f64[2], f32[2]) {
  %3 = convert(%0) {dtype = f32} : f32[2]
  %4 = convert(%3) {dtype = f64} : f64[2]
  %5 = convert(%1) {dtype = f64} : f64[2]
  %6 = convert(%2) {dtype = bf16} : bf16[2]
  %7 = convert(%6) {dtype = f32} : f32[2]
  return %4, %5, %7
}"""),
    ("reshape_chain_and_identity", """
func @f(%0: f32[2,6]) -> (f32[3,4], f32[2,6]) {
  %1 = reshape(%0) {new_sizes = [12]} : f32[12]
  %2 = reshape(%1) {new_sizes = [3, 4]} : f32[3,4]
  %3 = reshape(%0) {new_sizes = [2, 6]} : f32[2,6]
  return %2, %3
}""", """
func @f(%0: f32[2,6]) -> (f32[3,4], f32[2,6]) {
  %1 = reshape(%0) {new_sizes = [3, 4]} : f32[3,4]
  return %1, %0
}"""),
    ("reshape_inserting_unit_dims_is_a_broadcast", """
func @f(%0: f32[4]) -> (f32[4,3]) {
  %1 = reshape(%0) {new_sizes = [4, 1]} : f32[4,1]
  %2 = broadcast_in_dim(%1) {shape = [4, 3], broadcast_dimensions = [0, 1]} : f32[4,3]
  return %2
}""", """
func @f(%0: f32[4]) -> (f32[4,3]) {
  %1 = broadcast_in_dim(%0) {shape = [4, 3], broadcast_dimensions = [0]} : f32[4,3]
  return %1
}"""),
    ("reshape_of_unit_broadcast", """
func @f(%0: f32[4]) -> (f32[2,2]) {
  %1 = broadcast_in_dim(%0) {shape = [1, 4], broadcast_dimensions = [1]} : f32[1,4]
  %2 = reshape(%1) {new_sizes = [2, 2]} : f32[2,2]
  return %2
}""", """
func @f(%0: f32[4]) -> (f32[2,2]) {
  %1 = reshape(%0) {new_sizes = [2, 2]} : f32[2,2]
  return %1
}"""),
    ("transpose_chain_and_identity", """
func @f(%0: f32[2,3,4]) -> (f32[3,2,4], f32[2,3,4]) {
  %1 = transpose(%0) {permutation = [2, 0, 1]} : f32[4,2,3]
  %2 = transpose(%1) {permutation = [2, 1, 0]} : f32[3,2,4]
  %3 = transpose(%0) {permutation = [0, 1, 2]} : f32[2,3,4]
  return %2, %3
}""", """
func @f(%0: f32[2,3,4]) -> (f32[3,2,4], f32[2,3,4]) {
  %1 = transpose(%0) {permutation = [1, 0, 2]} : f32[3,2,4]
  return %1, %0
}"""),
    ("broadcast_chain_and_identity", """
func @f(%0: f32[3], %1: f32[2,3]) -> (f32[5,2,3], f32[2,3]) {
  %2 = broadcast_in_dim(%0) {shape = [2, 3], broadcast_dimensions = [1]} : f32[2,3]
  %3 = broadcast_in_dim(%2) {shape = [5, 2, 3], broadcast_dimensions = [1, 2]} : f32[5,2,3]
  %4 = broadcast_in_dim(%1) {shape = [2, 3], broadcast_dimensions = [0, 1]} : f32[2,3]
  return %3, %4
}""", """
func @f(%0: f32[3], %1: f32[2,3]) -> (f32[5,2,3], f32[2,3]) {
  %2 = broadcast_in_dim(%0) {shape = [5, 2, 3], broadcast_dimensions = [2]} : f32[5,2,3]
  return %2, %1
}"""),
    ("slice_chain_and_identity", """
func @f(%0: f32[20,6]) -> (f32[3,2], f32[20,6]) {
  %1 = slice(%0) {start_indices = [2, 0], limit_indices = [20, 6], strides = [3, 1]} : f32[6,6]
  %2 = slice(%1) {start_indices = [1, 1], limit_indices = [6, 5], strides = [2, 2]} : f32[3,2]
  %3 = slice(%0) {start_indices = [0, 0], limit_indices = [20, 6], strides = [1, 1]} : f32[20,6]
  return %2, %3
}""", """
func @f(%0: f32[20,6]) -> (f32[3,2], f32[20,6]) {
  %1 = slice(%0) {start_indices = [5, 1], limit_indices = [18, 4], strides = [6, 2]} : f32[3,2]
  return %1, %0
}"""),
    ("trivial_rev_reduce_concatenate_pad", """
func @f(%0: f32[2,3]) -> (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) {
  %1 = rev(%0) {dimensions = []} : f32[2,3]
  %2 = rev(%0) {dimensions = [1, 0]} : f32[2,3]
  %3 = rev(%2) {dimensions = [0, 1]} : f32[2,3]
  %4 = reduce(%0) {reducer = "sum", axes = []} : f32[2,3]
  %5 = concatenate(%0) {dimension = 0} : f32[2,3]
  %6 = constant() {value = dense<0.0>} : f32[]
  %7 = pad(%0, %6) {low = [0, 0], high = [0, 0], interior = [0, 0]} : f32[2,3]
  return %1, %3, %4, %5, %7
}""", """
func @f(%0: f32[2,3]) -> (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) {
  return %0, %0, %0, %0, %0
}"""),
    # One element reduced: the element, as XLA simplifies it (the identity added would make -0.0 +0.0).
    ("reduce_of_one_element_is_a_reshape", """
func @f(%0: f32[1,3,1], %1: c64[1]) -> (f32[3], f32[1,3], c64[]) {
  %2 = reduce(%0) {reducer = "sum", axes = [0, 2]} : f32[3]
  %3 = reduce(%0) {reducer = "max", axes = [2]} : f32[1,3]
  %4 = reduce(%1) {reducer = "prod", axes = [0]} : c64[]
  return %2, %3, %4
}""", """
func @f(%0: f32[1,3,1], %1: c64[1]) -> (f32[3], f32[1,3], c64[]) {
  %2 = reshape(%0) {new_sizes = [3]} : f32[3]
  %3 = reshape(%0) {new_sizes = [1, 3]} : f32[1,3]
  %4 = reshape(%1) {new_sizes = []} : c64[]
  return %2, %3, %4
}"""),
    ("reduce_of_broadcast_float_sum", """
func @f(%0: f32[], %1: f16[3]) -> (f32[], f16[3]) {
  %2 = broadcast_in_dim(%0) {shape = [2, 2], broadcast_dimensions = []} : f32[2,2]
  %3 = reduce(%2) {reducer = "sum", axes = [0, 1]} : f32[]
  %4 = broadcast_in_dim(%1) {shape = [4, 3], broadcast_dimensions = [1]} : f16[4,3]
  %5 = reduce(%4) {reducer = "sum", axes = [0]} : f16[3]
  return %3, %5
}""", """
func @f(%0: f32[], %1: f16[3]) -> (f32[], f16[3]) {
  %2 = convert(%0) {dtype = f64} : f64[]
  %3 = constant() {value = dense<4.0>} : f64[]
  %4 = mul(%2, %3) : f64[]
  %5 = convert(%4) {dtype = f32} : f32[]
  %6 = constant() {value = dense<0.0>} : f32[]
  %7 = add(%5, %6) : f32[]
  %8 = convert(%1) {dtype = f64} : f64[3]
  %9 = broadcast_in_dim(%3) {shape = [3], broadcast_dimensions = []} : f64[3]
  %10 = mul(%8, %9) : f64[3]
  %11 = convert(%10) {dtype = f16} : f16[3]
  %12 = constant() {value = dense<0.0>} : f16[]
  %13 = broadcast_in_dim(%12) {shape = [3], broadcast_dimensions = []} : f16[3]
  %14 = add(%11, %13) : f16[3]
  return %7, %14
}"""),
    ("reduce_of_broadcast_int_sum_wraps", """
func @f(%0: i8[1,3]) -> (i8[3], i64[]) {
  %1 = broadcast_in_dim(%0) {shape = [300, 3], broadcast_dimensions = [0, 1]} : i8[300,3]
  %2 = reduce(%1) {reducer = "sum", axes = [0]} : i8[3]
  %3 = convert(%0) {dtype = i64} : i64[1,3]
  %4 = broadcast_in_dim(%3) {shape = [5, 2, 3], broadcast_dimensions = [1, 2]} : i64[5,2,3]
  %5 = reduce(%4) {reducer = "sum", axes = [0, 1, 2]} : i64[]
  return %2, %5
}""", """
func @f(%0: i8[1,3]) -> (i8[3], i64[]) {
  %1 = reshape(%0) {new_sizes = [3]} : i8[3]
  %2 = constant() {value = dense<44>} : i8[]
  %3 = broadcast_in_dim(%2) {shape = [3], broadcast_dimensions = []} : i8[3]
  %4 = mul(%1, %3) : i8[3]
  %5 = convert(%0) {dtype = i64} : i64[1,3]
  %6 = reduce(%5) {reducer = "sum", axes = [0, 1]} : i64[]
  %7 = constant() {value = dense<10>} : i64[]
  %8 = mul(%6, %7) : i64[]
  return %4, %8
}"""),
    ("reduce_of_broadcast_idempotent", """
func @f(%0: f32[3], %1: bool[3], %2: i32[3]) -> (f32[3], f32[3], bool[], i32[3]) {
  %3 = broadcast_in_dim(%0) {shape = [4, 3, 5], broadcast_dimensions = [1]} : f32[4,3,5]
  %4 = reduce(%3) {reducer = "max", axes = [0, 2]} : f32[3]
  %5 = reduce(%3) {reducer = "min", axes = [0, 2]} : f32[3]
  %6 = broadcast_in_dim(%1) {shape = [3, 7], broadcast_dimensions = [0]} : bool[3,7]
  %7 = reduce(%6) {reducer = "and", axes = [0, 1]} : bool[]
  %8 = broadcast_in_dim(%2) {shape = [2, 3], broadcast_dimensions = [1]} : i32[2,3]
  %9 = reduce(%8) {reducer = "or", axes = [0]} : i32[3]
  return %4, %5, %7, %9
}""", """
func @f(%0: f32[3], %1: bool[3], %2: i32[3]) -> (f32[3], f32[3], bool[], i32[3]) {
  %3 = reduce(%1) {reducer = "and", axes = [0]} : bool[]
  return %0, %0, %3, %2
}"""),
    ("reduce_of_broadcast_prod", """
func @f(%0: i32[3], %1: f32[3], %2: i8[]) -> (i32[3], f32[3], i8[]) {
  %3 = broadcast_in_dim(%0) {shape = [3, 5], broadcast_dimensions = [0]} : i32[3,5]
  %4 = reduce(%3) {reducer = "prod", axes = [1]} : i32[3]
  %5 = broadcast_in_dim(%1) {shape = [3, 5], broadcast_dimensions = [0]} : f32[3,5]
  %6 = reduce(%5) {reducer = "prod", axes = [1]} : f32[3]
  %7 = broadcast_in_dim(%2) {shape = [200], broadcast_dimensions = []} : i8[200]
  %8 = reduce(%7) {reducer = "prod", axes = [0]} : i8[]
  return %4, %6, %8
}""", """
func @f(%0: i32[3], %1: f32[3], %2: i8[]) -> (i32[3], f32[3], i8[]) {
  %3 = constant() {value = dense<5>} : i32[]
  %4 = broadcast_in_dim(%3) {shape = [3], broadcast_dimensions = []} : i32[3]
  %5 = pow(%0, %4) : i32[3]
  %6 = broadcast_in_dim(%1) {shape = [3, 5], broadcast_dimensions = [0]} : f32[3,5]
  %7 = reduce(%6) {reducer = "prod", axes = [1]} : f32[3]
  %8 = broadcast_in_dim(%2) {shape = [200], broadcast_dimensions = []} : i8[200]
  %9 = reduce(%8) {reducer = "prod", axes = [0]} : i8[]
  return %5, %7, %9
}"""),
    ("reduce_of_broadcast_source_axes_and_empty", """
func @f(%0: f32[3,5], %1: c64[3]) -> (f32[4,3], f32[3], c64[3]) {
  %2 = broadcast_in_dim(%0) {shape = [4, 3, 5], broadcast_dimensions = [1, 2]} : f32[4,3,5]
  %3 = reduce(%2) {reducer = "sum", axes = [2]} : f32[4,3]
  %4 = broadcast_in_dim(%0) {shape = [0, 3, 5], broadcast_dimensions = [1, 2]} : f32[0,3,5]
  %5 = reduce(%4) {reducer = "max", axes = [0, 2]} : f32[3]
  %6 = broadcast_in_dim(%1) {shape = [2, 3], broadcast_dimensions = [1]} : c64[2,3]
  %7 = reduce(%6) {reducer = "sum", axes = [0]} : c64[3]
  return %3, %5, %7
}""", """
func @f(%0: f32[3,5], %1: c64[3]) -> (f32[4,3], f32[3], c64[3]) {
  %2 = reduce(%0) {reducer = "sum", axes = [1]} : f32[3]
  %3 = broadcast_in_dim(%2) {shape = [4, 3], broadcast_dimensions = [1]} : f32[4,3]
  %4 = constant() {value = dense<-inf>} : f32[]
  %5 = broadcast_in_dim(%4) {shape = [3], broadcast_dimensions = []} : f32[3]
  %6 = real(%1) : f32[3]
  %7 = convert(%6) {dtype = f64} : f64[3]
  %8 = constant() {value = dense<2.0>} : f64[]
  %9 = broadcast_in_dim(%8) {shape = [3], broadcast_dimensions = []} : f64[3]
  %10 = mul(%7, %9) : f64[3]
  %11 = convert(%10) {dtype = f32} : f32[3]
  %12 = constant() {value = dense<0.0>} : f32[]
  %13 = broadcast_in_dim(%12) {shape = [3], broadcast_dimensions = []} : f32[3]
  %14 = add(%11, %13) : f32[3]
  %15 = imag(%1) : f32[3]
  %16 = convert(%15) {dtype = f64} : f64[3]
  %17 = mul(%16, %9) : f64[3]
  %18 = convert(%17) {dtype = f32} : f32[3]
  %19 = add(%18, %13) : f32[3]
  %20 = complex(%14, %19) : c64[3]
  return %3, %5, %20
}"""),
    ("constant_folding", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = constant() {value = dense<[1.5, 2.0]>} : f32[2]
  %2 = constant() {value = dense<[2.0, 4.0]>} : f32[2]
  %3 = mul(%1, %2) : f32[2]
  %4 = exp(%3) : f32[2]
  %5 = log(%4) : f32[2]
  %6 = add(%0, %5) : f32[2]
  return %6
}""", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = constant() {value = dense<[3.0, 8.0]>} : f32[2]
  %2 = add(%0, %1) : f32[2]
  return %2
}"""),
    ("folding_does_not_grow_constants", """
func @f(%0: f32[4,4]) -> (f32[4,4]) {
  %1 = constant() {value = dense<2.0>} : f64[]
  %2 = convert(%1) {dtype = f32} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [4, 4], broadcast_dimensions = []} : f32[4,4]
  %4 = mul(%0, %3) : f32[4,4]
  return %4
}""", """
func @f(%0: f32[4,4]) -> (f32[4,4]) {
  %1 = constant() {value = dense<2.0>} : f32[]
  %2 = broadcast_in_dim(%1) {shape = [4, 4], broadcast_dimensions = []} : f32[4,4]
  %3 = mul(%0, %2) : f32[4,4]
  return %3
}"""),
    ("elementwise_hoisted_over_broadcasts", """
func @f(%0: f32[3]) -> (f32[2,3]) {
  %1 = broadcast_in_dim(%0) {shape = [2, 3], broadcast_dimensions = [1]} : f32[2,3]
  %2 = exp(%1) : f32[2,3]
  %3 = constant() {value = dense<2.0>} : f32[]
  %4 = broadcast_in_dim(%3) {shape = [2, 3], broadcast_dimensions = []} : f32[2,3]
  %5 = constant() {value = dense<3.0>} : f32[]
  %6 = broadcast_in_dim(%5) {shape = [2, 3], broadcast_dimensions = []} : f32[2,3]
  %7 = add(%4, %6) : f32[2,3]
  %8 = mul(%2, %7) : f32[2,3]
  return %8
}""", """
func @f(%0: f32[3]) -> (f32[2,3]) {
  %1 = exp(%0) : f32[3]
  %2 = constant() {value = dense<5.0>} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [3], broadcast_dimensions = []} : f32[3]
  %4 = mul(%1, %3) : f32[3]
  %5 = broadcast_in_dim(%4) {shape = [2, 3], broadcast_dimensions = [1]} : f32[2,3]
  return %5
}"""),
    ("cse", """
func @f(%0: f32[2], %1: f32[2]) -> (f32[2]) {
  %2 = add(%0, %1) : f32[2]
  %3 = add(%0, %1) : f32[2]
  %4 = constant() {value = dense<[1.0, 2.0]>} : f32[2]
  %5 = constant() {value = dense<[1.0, 2.0]>} : f32[2]
  %6 = mul(%2, %4) : f32[2]
  %7 = mul(%3, %5) : f32[2]
  %8 = sub(%6, %7) : f32[2]
  return %8
}""", """
func @f(%0: f32[2], %1: f32[2]) -> (f32[2]) {
  %2 = add(%0, %1) : f32[2]
  %3 = constant() {value = dense<[1.0, 2.0]>} : f32[2]
  %4 = mul(%2, %3) : f32[2]
  %5 = sub(%4, %4) : f32[2]
  return %5
}"""),
    ("cse_keeps_zero_and_negative_zero_apart", """
func @f(%0: f32[]) -> (f32[], f32[]) {
  %1 = constant() {value = dense<0.0>} : f32[]
  %2 = constant() {value = dense<-0.0>} : f32[]
  %3 = mul(%0, %1) : f32[]
  %4 = mul(%0, %2) : f32[]
  return %3, %4
}""", """
func @f(%0: f32[]) -> (f32[], f32[]) {
  %1 = constant() {value = dense<0.0>} : f32[]
  %2 = constant() {value = dense<-0.0>} : f32[]
  %3 = mul(%0, %1) : f32[]
  %4 = mul(%0, %2) : f32[]
  return %3, %4
}"""),
    ("dce_removes_unused_ops_and_loops", """
func @f(%0: f32[2], %1: i32[]) -> (f32[2]) {
  %2 = exp(%0) : f32[2]
  %3 = log(%2) : f32[2]
  %4 = while(%1) : i32[] {
    ^(%5: i32[]):
      %6 = constant() {value = dense<10>} : i32[]
      %7 = lt(%5, %6) : bool[]
      yield %7
    ^(%8: i32[]):
      %9 = constant() {value = dense<1>} : i32[]
      %10 = add(%8, %9) : i32[]
      yield %10
  }
  %11 = sin(%0) : f32[2]
  return %11
}""", """
func @f(%0: f32[2], %1: i32[]) -> (f32[2]) {
  %2 = sin(%0) : f32[2]
  return %2
}"""),
    ("simplification_inside_regions", """
func @f(%0: f32[2], %1: i32[]) -> (i32[], f32[2]) {
  %2 = neg(%0) : f32[2]
  %3, %4 = while(%1, %0) : (i32[], f32[2]) {
    ^(%5: i32[], %6: f32[2]):
      %7 = constant() {value = dense<3>} : i32[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i32[], %10: f32[2]):
      %11 = constant() {value = dense<1>} : i32[]
      %12 = add(%9, %11) : i32[]
      %13 = neg(%2) : f32[2]
      %14 = exp(%10) : f32[2]
      %15 = neg(%0) : f32[2]
      %16 = add(%14, %15) : f32[2]
      %17 = mul(%16, %13) : f32[2]
      yield %12, %17
  }
  return %3, %4
}""", """
func @f(%0: f32[2], %1: i32[]) -> (i32[], f32[2]) {
  %2 = neg(%0) : f32[2]
  %3, %4 = while(%1, %0) : (i32[], f32[2]) {
    ^(%5: i32[], %6: f32[2]):
      %7 = constant() {value = dense<3>} : i32[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i32[], %10: f32[2]):
      %11 = constant() {value = dense<1>} : i32[]
      %12 = add(%9, %11) : i32[]
      %13 = exp(%10) : f32[2]
      %14 = add(%13, %2) : f32[2]
      %15 = mul(%14, %0) : f32[2]
      yield %12, %15
  }
  return %3, %4
}"""),
    ("cond_with_constant_index_is_inlined", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = constant() {value = dense<7>} : i32[]
  %2 = cond(%1, %0) : f32[2] {
    ^(%3: f32[2]):
      %4 = exp(%3) : f32[2]
      yield %4
    ^(%5: f32[2]):
      %6 = sin(%5) : f32[2]
      yield %6
  }
  return %2
}""", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = sin(%0) : f32[2]
  return %1
}"""),
    ("while_with_false_condition_is_its_initial_values", """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = while(%0) : f32[2] {
    ^(%2: f32[2]):
      %3 = constant() {value = dense<false>} : bool[]
      yield %3
    ^(%4: f32[2]):
      %5 = exp(%4) : f32[2]
      yield %5
  }
  return %1
}""", """
func @f(%0: f32[2]) -> (f32[2]) {
  return %0
}"""),
]


@pytest.mark.parametrize("name, before, after", CASES, ids=[case[0] for case in CASES])
def test_rule(name, before, after, check_equivalent):
    module = cj.ir.parse(before)
    result = canonicalize(module)
    assert str(result) == str(cj.ir.parse(after))
    assert str(module) == str(cj.ir.parse(before)), "canonicalize changed its input"
    cj.ir.verify(result)
    check_equivalent(module, result)


def test_every_rule_has_a_case():
    fired = set()

    def recording(index, rewrite):
        def run(b, **bindings):
            result = rewrite(b, **bindings)
            if result is not None:
                fired.add(index)
            return result
        return run

    rules = [(pattern, recording(i, rewrite)) for i, (pattern, rewrite) in enumerate(RULES)]
    for _, before, _ in CASES:
        canonicalize(cj.ir.parse(before), rules)
    assert sorted(set(range(len(RULES))) - fired) == []


def test_canonical_modules_are_a_fixed_point():
    for _, _, after in CASES:
        module = cj.ir.parse(after)
        assert str(canonicalize(module)) == str(module)


def test_large_constants_are_not_folded():
    text = """
func @f() -> (f32[200000]) {
  %0 = constant() {value = dense<1.0>} : f32[]
  %1 = broadcast_in_dim(%0) {shape = [200000], broadcast_dimensions = []} : f32[200000]
  %2 = iota() {dtype = f32, shape = [200000], dimension = 0} : f32[200000]
  %3 = add(%1, %2) : f32[200000]
  return %3
}"""
    module = cj.ir.parse(text)
    result = canonicalize(module)
    assert [op.name for op in result.body.ops] == ["constant", "broadcast_in_dim", "iota", "add"]


def test_separate_passes():
    text = """
func @f(%0: f32[2]) -> (f32[2]) {
  %1 = constant() {value = dense<[1.0, 2.0]>} : f32[2]
  %2 = neg(%1) : f32[2]
  %3 = add(%0, %2) : f32[2]
  %4 = add(%0, %2) : f32[2]
  %5 = exp(%0) : f32[2]
  %6 = mul(%3, %4) : f32[2]
  return %6
}"""
    module = cj.ir.parse(text)
    assert [op.name for op in eliminate_dead_code(module).body.ops] == ["constant", "neg", "add", "add", "mul"]
    assert [op.name for op in fold_constants(module).body.ops] == ["constant", "add", "add", "mul"]
    assert [op.name for op in eliminate_common_subexpressions(module).body.ops] == ["constant", "neg", "add", "mul"]


def traced_program(x, y):
    import cdnajit.numpy as cnp
    a = (x * 1.0 + 0.0) * 2.0
    b = cnp.exp(a.reshape(-1).reshape(x.shape).T.T)
    c = cnp.sum(b, axis=1, keepdims=True) / b.shape[1]
    return b - c + y, cnp.where(x > 0, a, a)


@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (0, 3), (4, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_traced_program(shape, dtype, check_equivalent):
    args = (np.zeros(shape, dtype), np.zeros(shape[1:], dtype))
    module = cj.make_graph(traced_program)(*args)
    result = canonicalize(module)
    assert len(result.body.ops) < len(module.body.ops)
    check_equivalent(module, result)


SMALL_DTYPES = ["bool", "i8", "u8", "i16", "u16", "f16", "bf16"]
ALL_DTYPES = SMALL_DTYPES + ["i32", "u32", "i64", "u64", "f32", "f64", "c64", "c128"]


def every_value(dtype: str) -> np.ndarray:
    """Every value of a dtype of at most 16 bits but NaNs, by enumerating its bit patterns."""
    numpy_dtype = cj.ir.numpy_dtype(dtype)
    if dtype == "bool":
        return np.array([False, True])
    bits = np.arange(2 ** (8 * numpy_dtype.itemsize), dtype=np.uint64).astype(f"u{numpy_dtype.itemsize}")
    values = bits.view(numpy_dtype)
    return values[~np.isnan(values.astype(np.float32))] if numpy_dtype.kind not in "iu" else values


@pytest.mark.parametrize("target", ALL_DTYPES)
@pytest.mark.parametrize("source", SMALL_DTYPES)
def test_is_lossless_on_every_value(source, target):
    """The convert(convert(x)) rule's condition: lossless iff every value (and the sign of zero) survives the
    conversion, so a second convert sees the same value. Compared exactly in c128, which holds them all."""
    convert = cj.ir.OPS["convert"].reference
    values = every_value(source)
    exact = convert(values, dtype="c128")
    converted = convert(convert(values, dtype=target), dtype="c128")
    assert is_lossless(source, target) == (exact.tobytes() == converted.tobytes())


@pytest.mark.parametrize("source, target, lossless", [
    ("i32", "f32", False), ("i32", "f64", True), ("i64", "f64", False), ("u32", "i64", True), ("u32", "i32", False),
    ("i64", "u64", False), ("f32", "f64", True), ("f64", "f32", False), ("f32", "c64", True), ("c64", "f32", False),
    ("c64", "c128", True), ("f64", "c64", False), ("f32", "i64", False), ("i64", "bool", False)])
def test_is_lossless_for_wide_dtypes(source, target, lossless):
    assert is_lossless(source, target) == lossless
