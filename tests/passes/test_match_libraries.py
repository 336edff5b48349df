"""match_libraries: IR text in, IR text out, one case per BLAS matcher rule, with interpreter equivalence;
and the library_call op: its shape rule's errors and its reference against numpy."""
import math

import numpy as np
import pytest

import cdnajit as cj
from cdnajit.errors import TypeCheckError
from cdnajit.ir.opdef import infer_types
from cdnajit.ir.types import TensorType
from cdnajit.passes import match_libraries

# (name, input text, expected text after match_libraries)
CASES = [
    ("gemm", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  return %2
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %2
}"""),
    ("lhs_contracting_first_is_trans_a", """
func @f(%0: f64[5,4], %1: f64[5,6]) -> (f64[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [0], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f64[4,6]
  return %2
}""", """
func @f(%0: f64[5,4], %1: f64[5,6]) -> (f64[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = true, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f64, compute_dtype = f64, clamp_min = none, clamp_max = none} : f64[4,6]
  return %2
}"""),
    ("transposed_operands_fold_into_trans_flags", """
func @f(%0: f32[5,4], %1: f32[6,5]) -> (f32[4,6]) {
  %2 = transpose(%0) {permutation = [1, 0]} : f32[4,5]
  %3 = transpose(%1) {permutation = [1, 0]} : f32[5,6]
  %4 = dot_general(%2, %3) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  return %4
}""", """
func @f(%0: f32[5,4], %1: f32[6,5]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = true, trans_b = true, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %2
}"""),
    ("batch_dimensions_make_a_strided_batched_gemm", """
func @f(%0: f16[3,4,5], %1: f16[3,6,5]) -> (f32[3,4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [2], lhs_batch = [0], rhs_batch = [0], preferred_element_type = f32} : f32[3,4,6]
  return %2
}""", """
func @f(%0: f16[3,4,5], %1: f16[3,6,5]) -> (f32[3,4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "strided_batched_gemm", solution = "", trans_a = false, trans_b = true, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[3,4,6]
  return %2
}"""),
    ("unit_batch_is_a_plain_gemm", """
func @f(%0: bf16[1,4,5], %1: bf16[1,5,6]) -> (bf16[1,4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [1], lhs_batch = [0], rhs_batch = [0], preferred_element_type = none} : bf16[1,4,6]
  return %2
}""", """
func @f(%0: bf16[1,4,5], %1: bf16[1,5,6]) -> (bf16[1,4,6]) {
  %2 = reshape(%0) {new_sizes = [4, 5]} : bf16[4,5]
  %3 = reshape(%1) {new_sizes = [5, 6]} : bf16[5,6]
  %4 = library_call(%2, %3) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = bf16, compute_dtype = f32, clamp_min = none, clamp_max = none} : bf16[4,6]
  %5 = reshape(%4) {new_sizes = [1, 4, 6]} : bf16[1,4,6]
  return %5
}"""),
    ("free_dimensions_flatten_by_reshapes", """
func @f(%0: f32[2,3,5], %1: f32[5,7]) -> (f32[2,3,7]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[2,3,7]
  return %2
}""", """
func @f(%0: f32[2,3,5], %1: f32[5,7]) -> (f32[2,3,7]) {
  %2 = reshape(%0) {new_sizes = [6, 5]} : f32[6,5]
  %3 = library_call(%2, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[6,7]
  %4 = reshape(%3) {new_sizes = [2, 3, 7]} : f32[2,3,7]
  return %4
}"""),
    ("several_contracting_dimensions_flatten_into_k", """
func @f(%0: f32[4,2,3], %1: f32[2,3,5]) -> (f32[4,5]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1, 2], rhs_contracting = [0, 1], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,5]
  return %2
}""", """
func @f(%0: f32[4,2,3], %1: f32[2,3,5]) -> (f32[4,5]) {
  %2 = reshape(%0) {new_sizes = [4, 6]} : f32[4,6]
  %3 = reshape(%1) {new_sizes = [6, 5]} : f32[6,5]
  %4 = library_call(%2, %3) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,5]
  return %4
}"""),
    ("scattered_contracting_dimensions_are_transposed_first", """
func @f(%0: f32[2,4,3], %1: f32[2,3,5]) -> (f32[4,5]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [0, 2], rhs_contracting = [0, 1], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,5]
  return %2
}""", """
func @f(%0: f32[2,4,3], %1: f32[2,3,5]) -> (f32[4,5]) {
  %2 = transpose(%0) {permutation = [1, 0, 2]} : f32[4,2,3]
  %3 = reshape(%2) {new_sizes = [4, 6]} : f32[4,6]
  %4 = reshape(%1) {new_sizes = [6, 5]} : f32[6,5]
  %5 = library_call(%3, %4) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,5]
  return %5
}"""),
    ("matrix_times_vector_is_gemv", """
func @f(%0: f32[4,5], %1: f32[5]) -> (f32[4]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4]
  return %2
}""", """
func @f(%0: f32[4,5], %1: f32[5]) -> (f32[4]) {
  %2 = reshape(%1) {new_sizes = [5, 1]} : f32[5,1]
  %3 = library_call(%0, %2) {library = "blas", routine = "gemv", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,1]
  %4 = reshape(%3) {new_sizes = [4]} : f32[4]
  return %4
}"""),
    ("int8_accumulates_in_int32", """
func @f(%0: i8[4,5], %1: i8[5,6]) -> (i32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = i32} : i32[4,6]
  return %2
}""", """
func @f(%0: i8[4,5], %1: i8[5,6]) -> (i32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1, beta = 0, epilogue = "none", result_dtype = i32, compute_dtype = i32, clamp_min = none, clamp_max = none} : i32[4,6]
  return %2
}"""),
    ("outer_product_and_unsupported_dtypes_stay", """
func @f(%0: f32[4], %1: f32[6], %2: i64[4,5], %3: i64[5,6]) -> (f32[4,6], i64[4,6]) {
  %4 = dot_general(%0, %1) {lhs_contracting = [], rhs_contracting = [], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %5 = dot_general(%2, %3) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : i64[4,6]
  return %4, %5
}""", """
func @f(%0: f32[4], %1: f32[6], %2: i64[4,5], %3: i64[5,6]) -> (f32[4,6], i64[4,6]) {
  %4 = dot_general(%0, %1) {lhs_contracting = [], rhs_contracting = [], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %5 = dot_general(%2, %3) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : i64[4,6]
  return %4, %5
}"""),
    ("scalar_factors_of_the_result_are_alpha_those_of_operands_stay", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = constant() {value = dense<0.5>} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [4, 5], broadcast_dimensions = []} : f32[4,5]
  %4 = mul(%0, %3) : f32[4,5]
  %5 = neg(%1) : f32[5,6]
  %6 = dot_general(%4, %5) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %7 = constant() {value = dense<3.0>} : f32[]
  %8 = broadcast_in_dim(%7) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %9 = mul(%8, %6) : f32[4,6]
  return %9
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = constant() {value = dense<0.5>} : f32[]
  %3 = broadcast_in_dim(%2) {shape = [4, 5], broadcast_dimensions = []} : f32[4,5]
  %4 = mul(%0, %3) : f32[4,5]
  %5 = neg(%1) : f32[5,6]
  %6 = library_call(%4, %5) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 3.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %6
}"""),
    ("integer_operand_factors_stay_result_factors_are_alpha", """
func @f(%0: i8[4,5], %1: i8[5,6]) -> (i32[4,6]) {
  %2 = constant() {value = dense<3>} : i8[]
  %3 = broadcast_in_dim(%2) {shape = [4, 5], broadcast_dimensions = []} : i8[4,5]
  %4 = mul(%0, %3) : i8[4,5]
  %5 = dot_general(%4, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = i32} : i32[4,6]
  %6 = constant() {value = dense<-2>} : i32[]
  %7 = broadcast_in_dim(%6) {shape = [4, 6], broadcast_dimensions = []} : i32[4,6]
  %8 = mul(%5, %7) : i32[4,6]
  return %8
}""", """
func @f(%0: i8[4,5], %1: i8[5,6]) -> (i32[4,6]) {
  %2 = constant() {value = dense<3>} : i8[]
  %3 = broadcast_in_dim(%2) {shape = [4, 5], broadcast_dimensions = []} : i8[4,5]
  %4 = mul(%0, %3) : i8[4,5]
  %5 = library_call(%4, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = -2, beta = 0, epilogue = "none", result_dtype = i32, compute_dtype = i32, clamp_min = none, clamp_max = none} : i32[4,6]
  return %5
}"""),
    ("added_c_is_beta", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4,6]) -> (f32[4,6]) {
  %3 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %4 = add(%2, %3) : f32[4,6]
  return %4
}""", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4,6]) -> (f32[4,6]) {
  %3 = library_call(%0, %1, %2) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %3
}"""),
    ("scaled_c_is_beta", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4,6]) -> (f32[4,6]) {
  %3 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %4 = constant() {value = dense<0.25>} : f32[]
  %5 = broadcast_in_dim(%4) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %6 = mul(%2, %5) : f32[4,6]
  %7 = add(%3, %6) : f32[4,6]
  return %7
}""", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4,6]) -> (f32[4,6]) {
  %3 = library_call(%0, %1, %2) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.25, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %3
}"""),
    ("subtracted_c_is_beta_minus_one", """
func @f(%0: f64[4,5], %1: f64[5,6], %2: f64[4,6]) -> (f64[4,6]) {
  %3 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f64[4,6]
  %4 = sub(%3, %2) : f64[4,6]
  return %4
}""", """
func @f(%0: f64[4,5], %1: f64[5,6], %2: f64[4,6]) -> (f64[4,6]) {
  %3 = library_call(%0, %1, %2) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = -1.0, epilogue = "none", result_dtype = f64, compute_dtype = f64, clamp_min = none, clamp_max = none} : f64[4,6]
  return %3
}"""),
    ("broadcast_c_stays_an_add", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4]) -> (f32[4,6]) {
  %3 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %4 = broadcast_in_dim(%2) {shape = [4, 6], broadcast_dimensions = [0]} : f32[4,6]
  %5 = add(%3, %4) : f32[4,6]
  return %5
}""", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[4]) -> (f32[4,6]) {
  %3 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %4 = broadcast_in_dim(%2) {shape = [4, 6], broadcast_dimensions = [0]} : f32[4,6]
  %5 = add(%3, %4) : f32[4,6]
  return %5
}"""),
    ("bias_and_relu", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[6]) -> (f32[4,6]) {
  %3 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %4 = broadcast_in_dim(%2) {shape = [4, 6], broadcast_dimensions = [1]} : f32[4,6]
  %5 = add(%4, %3) : f32[4,6]
  %6 = constant() {value = dense<0.0>} : f32[]
  %7 = broadcast_in_dim(%6) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %8 = max(%7, %5) : f32[4,6]
  return %8
}""", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[6]) -> (f32[4,6]) {
  %3 = library_call(%0, %1, %2) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "bias_relu", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %3
}"""),
    ("c_then_bias_then_tanh_on_a_flattened_gemm", """
func @f(%0: f32[2,3,5], %1: f32[5,7], %2: f32[2,3,7], %3: f32[7]) -> (f32[2,3,7]) {
  %4 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[2,3,7]
  %5 = add(%4, %2) : f32[2,3,7]
  %6 = broadcast_in_dim(%3) {shape = [2, 3, 7], broadcast_dimensions = [2]} : f32[2,3,7]
  %7 = add(%5, %6) : f32[2,3,7]
  %8 = tanh(%7) : f32[2,3,7]
  return %8
}""", """
func @f(%0: f32[2,3,5], %1: f32[5,7], %2: f32[2,3,7], %3: f32[7]) -> (f32[2,3,7]) {
  %4 = reshape(%0) {new_sizes = [6, 5]} : f32[6,5]
  %5 = reshape(%2) {new_sizes = [6, 7]} : f32[6,7]
  %6 = library_call(%4, %1, %5, %3) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0, epilogue = "bias_tanh", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[6,7]
  %7 = reshape(%6) {new_sizes = [2, 3, 7]} : f32[2,3,7]
  return %7
}"""),
    ("bias_then_c_leaves_the_add", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[6], %3: f32[4,6]) -> (f32[4,6]) {
  %4 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %5 = broadcast_in_dim(%2) {shape = [4, 6], broadcast_dimensions = [1]} : f32[4,6]
  %6 = add(%4, %5) : f32[4,6]
  %7 = add(%6, %3) : f32[4,6]
  return %7
}""", """
func @f(%0: f32[4,5], %1: f32[5,6], %2: f32[6], %3: f32[4,6]) -> (f32[4,6]) {
  %4 = library_call(%0, %1, %2) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "bias", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %5 = add(%4, %3) : f32[4,6]
  return %5
}"""),
    ("sigmoid", """
func @f(%0: f16[4,5], %1: f16[5,6]) -> (f16[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f16[4,6]
  %3 = logistic(%2) : f16[4,6]
  return %3
}""", """
func @f(%0: f16[4,5], %1: f16[5,6]) -> (f16[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "sigmoid", result_dtype = f16, compute_dtype = f32, clamp_min = none, clamp_max = none} : f16[4,6]
  return %2
}"""),
    ("silu", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = logistic(%2) : f32[4,6]
  %4 = mul(%3, %2) : f32[4,6]
  return %4
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "silu", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %2
}"""),
    ("gelu_tanh", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = mul(%2, %2) : f32[4,6]
  %4 = mul(%2, %3) : f32[4,6]
  %5 = constant() {value = dense<0.044715>} : f32[]
  %6 = broadcast_in_dim(%5) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %7 = mul(%6, %4) : f32[4,6]
  %8 = add(%2, %7) : f32[4,6]
  %9 = constant() {value = dense<0.7978846>} : f32[]
  %10 = broadcast_in_dim(%9) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %11 = mul(%10, %8) : f32[4,6]
  %12 = tanh(%11) : f32[4,6]
  %13 = constant() {value = dense<1.0>} : f32[]
  %14 = broadcast_in_dim(%13) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %15 = add(%14, %12) : f32[4,6]
  %16 = constant() {value = dense<0.5>} : f32[]
  %17 = broadcast_in_dim(%16) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %18 = mul(%17, %15) : f32[4,6]
  %19 = mul(%2, %18) : f32[4,6]
  return %19
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "gelu_tanh", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  return %2
}"""),
    ("gelu_erf", """
func @f(%0: f64[4,5], %1: f64[5,6]) -> (f64[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f64[4,6]
  %3 = constant() {value = dense<1.4142135623730951>} : f64[]
  %4 = broadcast_in_dim(%3) {shape = [4, 6], broadcast_dimensions = []} : f64[4,6]
  %5 = div(%2, %4) : f64[4,6]
  %6 = erf(%5) : f64[4,6]
  %7 = constant() {value = dense<1.0>} : f64[]
  %8 = broadcast_in_dim(%7) {shape = [4, 6], broadcast_dimensions = []} : f64[4,6]
  %9 = add(%6, %8) : f64[4,6]
  %10 = mul(%2, %9) : f64[4,6]
  %11 = constant() {value = dense<2.0>} : f64[]
  %12 = broadcast_in_dim(%11) {shape = [4, 6], broadcast_dimensions = []} : f64[4,6]
  %13 = div(%10, %12) : f64[4,6]
  return %13
}""", """
func @f(%0: f64[4,5], %1: f64[5,6]) -> (f64[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "gelu_erf", result_dtype = f64, compute_dtype = f64, clamp_min = none, clamp_max = none} : f64[4,6]
  return %2
}"""),
    ("gelu_with_a_wrong_constant_stays", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = constant() {value = dense<1.5>} : f32[]
  %4 = broadcast_in_dim(%3) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %5 = div(%2, %4) : f32[4,6]
  %6 = erf(%5) : f32[4,6]
  %7 = constant() {value = dense<1.0>} : f32[]
  %8 = broadcast_in_dim(%7) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %9 = add(%6, %8) : f32[4,6]
  %10 = mul(%2, %9) : f32[4,6]
  %11 = constant() {value = dense<2.0>} : f32[]
  %12 = broadcast_in_dim(%11) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %13 = div(%10, %12) : f32[4,6]
  return %13
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %3 = constant() {value = dense<1.5>} : f32[]
  %4 = broadcast_in_dim(%3) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %5 = div(%2, %4) : f32[4,6]
  %6 = erf(%5) : f32[4,6]
  %7 = constant() {value = dense<1.0>} : f32[]
  %8 = broadcast_in_dim(%7) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %9 = add(%6, %8) : f32[4,6]
  %10 = mul(%2, %9) : f32[4,6]
  %11 = constant() {value = dense<2.0>} : f32[]
  %12 = broadcast_in_dim(%11) {shape = [4, 6], broadcast_dimensions = []} : f32[4,6]
  %13 = div(%10, %12) : f32[4,6]
  return %13
}"""),
    ("transposed_result_swaps_the_operands", """
func @f(%0: f32[3,4,5], %1: f32[3,5,6]) -> (f32[3,6,4]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [2], rhs_contracting = [1], lhs_batch = [0], rhs_batch = [0], preferred_element_type = none} : f32[3,4,6]
  %3 = transpose(%2) {permutation = [0, 2, 1]} : f32[3,6,4]
  %4 = logistic(%3) : f32[3,6,4]
  return %4
}""", """
func @f(%0: f32[3,4,5], %1: f32[3,5,6]) -> (f32[3,6,4]) {
  %2 = library_call(%1, %0) {library = "blas", routine = "strided_batched_gemm", solution = "", trans_a = true, trans_b = true, alpha = 1.0, beta = 0.0, epilogue = "sigmoid", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[3,6,4]
  return %2
}"""),
    ("a_result_read_twice_is_not_absorbed", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6], f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  %4 = exp(%2) : f32[4,6]
  return %3, %4
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6], f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  %4 = exp(%2) : f32[4,6]
  return %3, %4
}"""),
    ("a_result_that_is_an_output_is_not_absorbed", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6], f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  return %2, %3
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6], f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  return %2, %3
}"""),
    ("c_computed_from_the_gemm_stays_an_add", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = dot_general(%0, %1) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  %4 = add(%2, %3) : f32[4,6]
  return %4
}""", """
func @f(%0: f32[4,5], %1: f32[5,6]) -> (f32[4,6]) {
  %2 = library_call(%0, %1) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "none", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,6]
  %3 = tanh(%2) : f32[4,6]
  %4 = add(%2, %3) : f32[4,6]
  return %4
}"""),
    ("inside_a_loop_body", """
func @f(%0: f32[4,4], %1: i32[]) -> (f32[4,4], i32[]) {
  %2, %3 = while(%0, %1) : (f32[4,4], i32[]) {
    ^(%4: f32[4,4], %5: i32[]):
      %6 = constant() {value = dense<3>} : i32[]
      %7 = lt(%5, %6) : bool[]
      yield %7
    ^(%8: f32[4,4], %9: i32[]):
      %10 = dot_general(%8, %0) {lhs_contracting = [1], rhs_contracting = [0], lhs_batch = [], rhs_batch = [], preferred_element_type = none} : f32[4,4]
      %11 = tanh(%10) : f32[4,4]
      %12 = constant() {value = dense<1>} : i32[]
      %13 = add(%9, %12) : i32[]
      yield %11, %13
  }
  return %2, %3
}""", """
func @f(%0: f32[4,4], %1: i32[]) -> (f32[4,4], i32[]) {
  %2, %3 = while(%0, %1) : (f32[4,4], i32[]) {
    ^(%4: f32[4,4], %5: i32[]):
      %6 = constant() {value = dense<3>} : i32[]
      %7 = lt(%5, %6) : bool[]
      yield %7
    ^(%8: f32[4,4], %9: i32[]):
      %10 = library_call(%8, %0) {library = "blas", routine = "gemm", solution = "", trans_a = false, trans_b = false, alpha = 1.0, beta = 0.0, epilogue = "tanh", result_dtype = f32, compute_dtype = f32, clamp_min = none, clamp_max = none} : f32[4,4]
      %11 = constant() {value = dense<1>} : i32[]
      %12 = add(%9, %11) : i32[]
      yield %10, %12
  }
  return %2, %3
}"""),
]


@pytest.mark.parametrize("name, before, after", CASES, ids=[case[0] for case in CASES])
def test_case(name, before, after, check_equivalent):
    module = cj.ir.parse(before)
    result = match_libraries(module)
    assert str(result) == str(cj.ir.parse(after))
    assert str(module) == str(cj.ir.parse(before)), "match_libraries changed its input"
    cj.ir.verify(result)
    # The references of the absorbed steps run as the graph's ops did: results are identical (a fused
    # activation may compute x * f(x) as f(x) * x, which only changes the sign of a NaN).
    check_equivalent(module, result, trials=5, nan_signs=False)


def test_matching_twice_changes_nothing():
    for _, _, after in CASES:
        module = cj.ir.parse(after)
        assert str(match_libraries(module)) == str(module)


# ---- library_call's shape rule ---------------------------------------------------------------

def gemm_attrs(**changes):
    return {"library": "blas", "routine": "gemm", "solution": "", "trans_a": False, "trans_b": False, "alpha": 1.0,
            "beta": 0.0, "epilogue": "none", "result_dtype": "f32", "compute_dtype": "f32", "clamp_min": None, "clamp_max": None, **changes}


def types(*texts):
    return [TensorType(t.split("[")[0], tuple(int(d) for d in t[:-1].split("[")[1].split(",") if d)) for t in texts]


# operand types, attribute changes, texts the message must hold
BAD_CALLS = [
    (["f32[4,5]", "f32[6,7]"], {}, ["op(A) is 4x5", "op(B) is 6x7", "contracting sizes 5 and 6 differ"]),
    (["f32[5,4]", "f32[5,7]"], {"trans_b": True}, ["trans_b=True", "contracting sizes 4 and 7"]),
    (["f32[4,5]", "f32[5,7]", "f32[4,7]"], {}, ["beta=0.0", "take 2 operands (A, B)"]),
    (["f32[4,5]", "f32[5,7]"], {"beta": 1.0}, ["take 3 operands (A, B, C)"]),
    (["f32[4,5]", "f32[5,7]", "f32[7,4]"], {"beta": 1.0}, ["C must have D's type f32[4,7]", "f32[7,4]"]),
    (["f32[4,5]", "f32[5,7]", "f32[4]"], {"epilogue": "bias"}, ["bias must be f32[7]", "f32[4]"]),
    (["f32[4,5]", "f32[5,7]"], {"epilogue": "swish"}, ["epilogue 'swish' is not one of"]),
    (["f32[4,5]", "f32[5,7]"], {"routine": "syrk"}, ["routine 'syrk' is not one of"]),
    (["f32[4,5]", "f32[5,7]"], {"library": "lapack"}, ["unknown library 'lapack'"]),
    (["f32[2,4,5]", "f32[2,5,7]"], {}, ["gemm takes operands of rank 2", "f32[2,4,5]"]),
    (["f32[2,4,5]", "f32[3,5,7]"], {"routine": "strided_batched_gemm"}, ["batch dimensions", "differ"]),
    (["f32[4,5]", "f32[5,7]"], {"routine": "gemv"}, ["gemv needs M or N of 1, got 4x7"]),
    (["f32[4,5]", "f16[5,7]"], {}, ["one numeric dtype"]),
    (["i8[4,5]", "i8[5,7]"], {"result_dtype": "f32", "alpha": 1, "beta": 0}, ["result_dtype f32 does not hold"]),
    (["f16[4,5]", "f16[5,7]"], {"result_dtype": "f16", "compute_dtype": "f16"}, ["half floats accumulate in f32"]),
    (["i8[4,5]", "i8[5,7]"], {"result_dtype": "i32", "compute_dtype": "i32"}, ["alpha=1.0 is not a i32"]),
    (["i8[4,5]", "i8[5,7]"], {"result_dtype": "i32", "compute_dtype": "i32", "alpha": 1, "beta": 0,
                              "epilogue": "gelu_tanh"}, ["epilogue 'gelu_tanh' is not defined on i32"]),
]


@pytest.mark.parametrize("operands, changes, texts", BAD_CALLS)
def test_bad_calls_are_named(operands, changes, texts):
    with pytest.raises(TypeCheckError) as error:
        infer_types("library_call", types(*operands), gemm_attrs(**changes))
    message = str(error.value)
    assert message.startswith("library_call"), message
    for text in texts:
        assert text in message, message


# ---- library_call's reference against numpy -----------------------------------------------------

def run_call(operands, **changes):
    attrs = gemm_attrs(**changes)
    params = [cj.ir.Value(cj.ir.TensorType(cj.ir.dtype_name(a.dtype), a.shape)) for a in operands]
    op = cj.ir.make_op("library_call", params, attrs, infer_types("library_call", [p.type for p in params], attrs))
    module = cj.ir.Module("call", cj.ir.Region(params, [op], op.results))
    cj.ir.verify(module)
    return cj.ir.interpret(module, *operands)[0]


ACTIVATION_ORACLES = {
    "relu": lambda h: np.maximum(h, 0),
    "sigmoid": lambda h: 1 / (1 + np.exp(-h)),
    "tanh": np.tanh,
    "silu": lambda h: h / (1 + np.exp(-h)),
    "gelu_tanh": lambda h: 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3))),
    "gelu_erf": lambda h: 0.5 * h * (1 + np.vectorize(math.erf)(h / np.sqrt(2))),
}


@pytest.mark.parametrize("activation", ["none", *ACTIVATION_ORACLES])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_reference_matches_numpy(activation, trans_a, trans_b):
    rng = np.random.default_rng(7)
    batch, m, k, n = 3, 5, 7, 2
    a = rng.standard_normal((batch, k, m) if trans_a else (batch, m, k))
    b = rng.standard_normal((batch, n, k) if trans_b else (batch, k, n))
    c, bias = rng.standard_normal((batch, m, n)), rng.standard_normal(n)
    epilogue = "bias" if activation == "none" else f"bias_{activation}"
    got = run_call([a, b, c, bias], routine="strided_batched_gemm", trans_a=trans_a, trans_b=trans_b, alpha=-0.5,
                   beta=2.0, epilogue=epilogue, result_dtype="f64", compute_dtype="f64")
    op_a = np.swapaxes(a, 1, 2) if trans_a else a
    op_b = np.swapaxes(b, 1, 2) if trans_b else b
    h = -0.5 * (op_a @ op_b) + 2.0 * c + bias
    want = h if activation == "none" else ACTIVATION_ORACLES[activation](h)
    # f64 sums of 7 products and one transcendental: a few ulp of f64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_reference_accumulates_int8_in_int32_and_half_in_f32():
    rng = np.random.default_rng(3)
    a, b = rng.integers(-128, 128, (6, 300), dtype=np.int8), rng.integers(-128, 128, (300, 5), dtype=np.int8)
    got = run_call([a, b], alpha=3, beta=0, result_dtype="i32", compute_dtype="i32")
    np.testing.assert_array_equal(got, 3 * (a.astype(np.int32) @ b.astype(np.int32)))
    x, y = rng.standard_normal((4, 2000)).astype(np.float16), rng.standard_normal((2000, 3)).astype(np.float16)
    got = run_call([x, y], result_dtype="f16", compute_dtype="f32")
    # one rounding to f16 of an f32 sum: f16's half ulp plus f32 accumulation error, far below an f16 sum's
    np.testing.assert_allclose(got.astype(np.float64), (x.astype(np.float64) @ y.astype(np.float64)), rtol=2e-3, atol=0.05)


@pytest.mark.parametrize("m, k, n", [(0, 3, 2), (3, 0, 2), (3, 2, 0)])
def test_reference_of_empty_sizes(m, k, n):
    got = run_call([np.ones((m, k), np.float32), np.ones((k, n), np.float32)])
    np.testing.assert_array_equal(got, np.zeros((m, n), np.float32))
