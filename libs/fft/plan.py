"""FFT plans, as rocFFT builds them: a tree of kernel nodes chosen by the transform's length and precision.

A 1-D transform of length N along one axis is planned as
  - nothing, for N = 1;
  - `stockham`: one kernel, when N is a product of the generated radices (butterfly.RADICES) and
    the whole transform fits in LDS (`lds_limit`: two ping-pong buffers of re and im parts);
  - `two_pass`: N = L1 x L2, both stockham lengths (rocFFT's column and row passes): a stockham
    kernel over L1 with stride L2 that multiplies its results by the twiddles w_N^(k1 n2), then a
    stockham kernel over L2 that writes its results transposed, X[k1 + L1 k2]. The split is chosen
    by stride: the column pass reads entries L2 apart, which the lanes kernel reads as vectors of
    consecutive columns when COLUMN_LANES transforms of L1 fit in LDS, so L1 is the largest factor not
    above sqrt(N) with that (2^20 in c64: 512 x 2048), else the largest not above sqrt(N) (so
    L1 <= L2, and the second pass reads rows).
  - `bluestein`: otherwise (a prime factor above 13, or too long for two passes), Bluestein's chirp-z
    algorithm through a plan of length M >= 2N - 1: the input times the chirp, zero-padded to M,
    convolved with the chirp filter by two FFTs and an inverse FFT of length M, times the chirp.
    M is the smallest 7-smooth length (2^a 3^b 5^c 7^d) with a one- or two-pass plan: the passes'
    cost grows with M (20160 for N = 10007, where the next power of two is 32768), and the
    butterflies of radices 2 to 8 are the cheapest per element. A two-pass M takes three kernels
    over the batch where its passes run side by side (matcher.Axis.bluestein_two_pass), else four.
    Above lds_limit^2, M has a three_pass plan, and the chirp's products are pointwise kernels
    around it.
  - `three_pass`: N = L1 x L2 x L3 above lds_limit^2 (rocFFT's three-kernel plans): the length
    R = L1 L2 as a two_pass plan over columns of stride L3 (its row pass, written transposed,
    multiplies by the twiddles w_N^(kR n3)), then a stockham kernel over L3 written transposed,
    X[kR + R k3]. L3 is the largest factor in LDS whose R has a two_pass plan.
A length needing more passes (above lds_limit^3, or a Bluestein M above that) or with twiddle
exponents beyond i32 (2^31 and above) has no plan.

Plans are cached by (length, part dtype) (`plan_for`): the plan cache keyed by problem. The batch
chooses each node's kernel variant, not the plan (kernels.py: transforms per workgroup): a length in
LDS is one kernel at any batch, as one workgroup runs it in microseconds and two passes would double
its global traffic; above LDS the passes split each transform over workgroups.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .butterfly import RADICES

LDS_BYTES = 64 * 1024
# transforms a workgroup of the lanes kernel (generator.stockham_lanes_kernel) computes side by side, one
# a lane, the most first: 16 f32 lanes fill an AVX-512 vector of the host, 4 f64 lanes an AVX2 one
LANES = (16, 8, 4)
# a two-pass split's column pass is chosen to run at least this many transforms side by side
COLUMN_LANES = 8


def lds_limit(part_dtype: str, lds_bytes: int | None = None) -> int:
    """The longest transform one workgroup keeps in LDS: 2 buffers x (re, im) x N x itemsize <= 64 KiB
    (LDS_BYTES, the plans' budget; or `lds_bytes`, a target's)."""
    itemsize = 4 if part_dtype == "f32" else 8
    return (LDS_BYTES if lds_bytes is None else lds_bytes) // (4 * itemsize)


def side_by_side(spread: int, length: int, part_dtype: str) -> int:
    """The most LANES transforms of `length` a workgroup runs side by side where groups of them are
    `spread` apart (C, or M): one that divides the spread and fits in LDS; 0 if none does."""
    return next((lanes for lanes in LANES if spread and spread % lanes == 0
                 and lanes * length <= lds_limit(part_dtype)), 0)


def radices_of(n: int) -> tuple[int, ...] | None:
    """n as a product of generated radices, largest first (fewest passes), or None if n has another factor."""
    radices = []
    while n > 1:
        radix = next((r for r in RADICES if n % r == 0), None)
        if radix is None:
            return None
        radices.append(radix)
        n //= radix
    return tuple(radices)


@dataclass(frozen=True)
class Node:
    """One kernel of a plan: a Stockham FFT of `length` = prod(radices), one pass per radix."""
    length: int
    radices: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"stockham_len{self.length}_radix[{','.join(map(str, self.radices))}]"


@dataclass(frozen=True)
class Plan:
    kind: str                     # "identity", "stockham", "two_pass", "three_pass" or "bluestein"
    length: int
    nodes: tuple[Node, ...]       # the stockham nodes (for bluestein: those of `inner`)
    inner: "Plan | None" = None   # bluestein's plan of length M

    @property
    def name(self) -> str:
        return f"{self.kind}_len{self.length}"


def direct_plan(length: int, part_dtype: str) -> Plan | None:
    """The stockham or two_pass plan of `length`, if its radices allow one."""
    radices = radices_of(length)
    limit = lds_limit(part_dtype)
    if radices is None:
        return None
    if length <= limit:
        return Plan("stockham", length, (Node(length, radices),))
    divisors = sorted((d for d in range(2, math.isqrt(length) + 1) if length % d == 0), reverse=True)
    for most in (limit // COLUMN_LANES, length):   # L1 whose column pass runs side by side, else any
        for first in divisors:
            second = length // first
            if first <= most and second <= limit:
                return Plan("two_pass", length, (Node(first, radices_of(first)), Node(second, radices_of(second))))
    if length >= 2 ** 31:   # the twiddles' exponents are i32
        return None
    for last in range(limit, 1, -1):
        if length % last == 0:
            columns = direct_plan(length // last, part_dtype)
            if columns is not None and columns.kind == "two_pass":
                return Plan("three_pass", length, columns.nodes + (Node(last, radices_of(last)),))
    return None


@functools.lru_cache(maxsize=1024)
def plan_for(length: int, part_dtype: str) -> Plan | None:
    """The plan of a 1-D transform of `length` in precision `part_dtype`, or None when none exists."""
    if length == 1:
        return Plan("identity", 1, ())
    direct = direct_plan(length, part_dtype)
    if direct is not None:
        return direct
    inner = bluestein_inner(length, part_dtype)
    return None if inner is None else Plan("bluestein", length, inner.nodes, inner)


def smooth_lengths(low: int, high: int) -> list[int]:
    """The 7-smooth numbers (2^a 3^b 5^c 7^d) in [low, high], ascending."""
    found = [1]
    for prime in (2, 3, 5, 7):
        found = [n * prime ** e for n in found for e in range(high.bit_length()) if n * prime ** e <= high]
    return sorted(n for n in set(found) if n >= low)


def bluestein_inner(length: int, part_dtype: str) -> Plan | None:
    """The plan of Bluestein's M: the smallest 7-smooth M >= 2 length - 1 (at most the next power of
    two, which always is 7-smooth) with a one- or two-pass plan, whose first and last kernels take
    the chirp's products, padding and crop; failing that (M above lds_limit^2), the smallest with a
    three-pass plan, the products then kernels of their own."""
    sizes = smooth_lengths(2 * length - 1, 1 << (2 * length - 2).bit_length())
    for kinds in (("stockham", "two_pass"), ("three_pass",)):
        for size in sizes:
            inner = direct_plan(size, part_dtype)
            if inner is not None and inner.kind in kinds:
                return inner
    return None
