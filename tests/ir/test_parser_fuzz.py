"""Fuzzing the parser: mutated valid module texts either raise ParseError, or parse into a module
that verifies and round-trips; nothing else may come out (no lark or internal exception)."""
import random
import re

import pytest

import cdnajit as cj

SEEDS = [
    """func @loop(%0: f32[3], %1: c64[2]) -> (i32[], f32[3]) {
  %2 = constant() {value = dense<0>} : i32[]
  %3, %4 = while(%2, %0) : (i32[], f32[3]) {
    ^(%5: i32[], %6: f32[3]):
      %7 = constant() {value = dense<3>} : i32[]
      %8 = lt(%5, %7) : bool[]
      yield %8
    ^(%9: i32[], %10: f32[3]):
      %11 = constant() {value = dense<1>} : i32[]
      %12 = add(%9, %11) : i32[]
      %13 = constant() {value = dense<[0.5, -inf, nan]>} : f32[3]
      %14 = mul(%10, %13) : f32[3]
      yield %12, %14
  }
  %15 = real(%1) : f32[2]
  cond(%2) : () {
    ^():
      yield
  }
  return %3, %4
}
""",
    """func @"<lambda>"(%0: f16[1,2,5,5], %1: f16[3,2,3,3], %2: i32[]) -> (f32[1,3,3,3], f16[2,5]) {
  %3 = conv_general_dilated(%0, %1) {window_strides = [1, 1], padding = [[0, 0], [0, 0]], lhs_dilation = [1, 1], rhs_dilation = [1, 1], lhs_spec = [0, 1, 2, 3], rhs_spec = [0, 1, 2, 3], out_spec = [0, 1, 2, 3], feature_group_count = 1, batch_group_count = 1, preferred_element_type = f32} : f32[1,3,3,3]
  %4 = reshape(%0) {new_sizes = [10, 5]} : f16[10,5]
  %5 = reduce_window(%4) {reducer = "max", window_dimensions = [2, 2], window_strides = [2, 1], padding = [[0, 1], [1, 0]], base_dilation = [1, 1], window_dilation = [1, 1]} : f16[5,5]
  %6 = dynamic_slice(%5, %2, %2) {slice_sizes = [2, 5]} : f16[2,5]
  %7 = cumulative(%6) {reducer = "sum", axis = 1, reverse = true} : f16[2,5]
  return %3, %7
}
""",
    """func @mix(%0: u8[2,3], %1: bf16[], %2: i64[4,1]) -> (u8[3,2], bf16[2], i8[0,3], u8[4,3]) {
  %3 = transpose(%0) {permutation = [1, 0]} : u8[3,2]
  %4 = constant() {value = dense<[[], []]>} : bf16[2,0]
  %5 = constant() {value = dense<[0.1, -0.0]>} : bf16[2]
  %6 = broadcast_in_dim(%1) {shape = [2], broadcast_dimensions = []} : bf16[2]
  %7 = max(%5, %6) : bf16[2]
  %8 = iota() {dtype = i8, shape = [0, 3], dimension = 1} : i8[0,3]
  %9 = gather(%0, %2) : u8[4,3]
  %10 = constant() {value = dense<[(1.0, -2.5), (nan, inf)]>} : c128[2]
  %11 = argmax(%7) {axis = 0, index_dtype = i16} : i16[]
  return %3, %7, %8, %9
}
""",
]

DTYPE_NAMES = list(cj.ir.types.NUMPY_DTYPES) + ["f33", "x"]
NUMBERS = ["0", "-1", "1", "2", "3", "7", "255", "1.5", "-0.0", "nan", "-inf", "99999999999999999999", "1e400"]
TOKEN = re.compile(r'%\w+|@"[^"]*"|@\w+|"[^"]*"|[\w.+-]+|\S')


def mutate(text: str, rng: random.Random) -> str:
    """One random edit of the characters, tokens, lines, numbers or dtype names of `text`."""
    kind = rng.choice(["char", "char", "token", "token", "line", "number", "dtype"])
    if not text.strip():
        return text
    if kind == "char":
        i, j = rng.randrange(len(text)), rng.randrange(len(text))
        edit = rng.choice(["delete", "duplicate", "swap"])
        if edit == "delete":
            return text[:i] + text[i + 1:]
        if edit == "duplicate":
            return text[:i] + text[i] + text[i:]
        chars = list(text)
        chars[i], chars[j] = chars[j], chars[i]
        return "".join(chars)
    if kind in ("token", "line"):
        pieces = TOKEN.findall(text) if kind == "token" else text.splitlines()
        separator = " " if kind == "token" else "\n"
        i, j = rng.randrange(len(pieces)), rng.randrange(len(pieces))
        edit = rng.choice(["delete", "duplicate", "swap"])
        if edit == "delete":
            del pieces[i]
        elif edit == "duplicate":
            pieces.insert(i, pieces[j])
        else:
            pieces[i], pieces[j] = pieces[j], pieces[i]
        return separator.join(pieces)
    pattern, replacements = (r"(?<![\w%])-?\d+(\.\d+)?", NUMBERS) if kind == "number" else (
        r"\b(" + "|".join(cj.ir.types.NUMPY_DTYPES) + r")\b", DTYPE_NAMES)
    matches = list(re.finditer(pattern, text))
    if not matches:
        return text
    match = rng.choice(matches)
    return text[:match.start()] + rng.choice(replacements) + text[match.end():]


@pytest.mark.parametrize("seed_index", range(len(SEEDS)))
def test_seeds_are_valid(seed_index):
    module = cj.ir.parse(SEEDS[seed_index])
    assert str(module) == SEEDS[seed_index]
    cj.ir.verify(module)


@pytest.mark.parametrize("seed_index", range(len(SEEDS)))
def test_mutated_texts_parse_or_raise_parse_error(seed_index):
    rng = random.Random(seed_index)
    outcomes = {"parsed": 0, "ParseError": 0}
    for _ in range(700):
        text = SEEDS[seed_index]
        for _ in range(rng.choice([1, 1, 2, 3])):
            text = mutate(text, rng)
        try:
            module = cj.ir.parse(text)
        except cj.ir.ParseError as error:
            # A type rule that crashed (rather than rejecting its input) is a bug in the op table.
            assert "the type rule failed" not in str(error), f"{error}\n{text}"
            assert re.match(r"\d+:\d+: ", str(error)), str(error)
            outcomes["ParseError"] += 1
            continue
        cj.ir.verify(module)  # the parser checks what the verifier checks: what parses is valid
        assert str(cj.ir.parse(str(module))) == str(module), text
        outcomes["parsed"] += 1
    assert outcomes["ParseError"] > 100 and outcomes["parsed"] > 10, outcomes
