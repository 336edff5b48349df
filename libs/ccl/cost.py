"""The modelled time of a collective on one node of 8 AMD Instinct MI300X GPUs, the reports' figure
for a `library_call ccl.*` on gfx942, and the model the all-reduce's algorithm choice reads.

The node (AMD's public figures):
  - every MI300X has 7 Infinity Fabric (xGMI) links, one to each peer of the 8-GPU platform, each
    "128 GB/s bidirectional" (16 lanes at 32 Gb/s), so 64 GB/s each way; "896 GB/s" aggregate
    peer-to-peer per GPU. (AMD Instinct MI300X data sheet and platform brief, 2023; AMD CDNA 3
    white paper, "AMD Infinity Fabric"; the same 7 x 128 GB/s quoted by AMD at the MI300 launch.)
  - HBM3 at 5.3 TB/s per GPU (the same data sheet), which bounds a step's local reduction.
Latency per step is not in the specifications: LINK_LATENCY_S is an assumption (a few microseconds
per RCCL step over xGMI, the order rccl-tests report for small messages), named as such.

The model is alpha-beta, per algorithm, with n devices and S bytes per device:
  - ring all-reduce: 2(n - 1) steps of S/n bytes; the fully connected node runs one ring per link
    direction it can use at once (RCCL's channels), so the ring's bytes cross n - 1 links in
    parallel: t = 2(n - 1) alpha + max(2 (n - 1)/n * S / (LINK_BW * (n - 1)), 2 S / HBM_BW);
  - tree all-reduce: reduce then broadcast down a binary tree, 2 ceil(log2 n) steps of S bytes
    over one link each: t = 2 ceil(log2 n) (alpha + S / LINK_BW);
  - all-gather, reduce-scatter: n - 1 ring steps of S (the gathered message's share) per step;
  - broadcast, reduce: a binary tree of ceil(log2 n) steps of S;
  - all-to-all: every pair at once, each link carrying S/n: alpha + S/n / LINK_BW;
  - ppermute: one step of S over one link.
"""
from __future__ import annotations

import math

NODE_GPUS = 8
LINK_BW = 64e9              # bytes/s one way per xGMI link (128 GB/s bidirectional)
LINKS_PER_GPU = 7           # one to each peer of the 8-GPU platform
HBM_BW = 5.3e12             # bytes/s per MI300X
LINK_LATENCY_S = 5e-6       # assumed per-step latency (not a published figure)


def steps_tree(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def modelled_seconds(routine: str, algorithm: str, n: int, message_bytes: int) -> float:
    """The modelled time of `routine` (its `algorithm`: ring or tree for all_reduce) of a message of
    `message_bytes` per device, the operand's bytes, on n GPUs of the node."""
    if n <= 1:
        return message_bytes / HBM_BW
    links = min(n - 1, LINKS_PER_GPU)
    if routine == "all_reduce" and algorithm == "tree":
        return 2 * steps_tree(n) * (LINK_LATENCY_S + message_bytes / LINK_BW)
    if routine == "all_reduce":
        wire = 2 * (n - 1) / n * message_bytes / (LINK_BW * links)
        return 2 * (n - 1) * LINK_LATENCY_S + max(wire, 2 * message_bytes / HBM_BW)
    if routine in ("all_gather", "reduce_scatter"):
        share = message_bytes if routine == "all_gather" else message_bytes / n
        return (n - 1) * LINK_LATENCY_S + (n - 1) * share / (LINK_BW * links)
    if routine in ("broadcast", "reduce"):
        return steps_tree(n) * (LINK_LATENCY_S + message_bytes / LINK_BW)
    if routine == "all_to_all":
        return LINK_LATENCY_S + message_bytes / n / LINK_BW
    return LINK_LATENCY_S + message_bytes / LINK_BW


def all_reduce_algorithm(n: int, message_bytes: int) -> str:
    """RCCL's tuning in the model: the tree for messages whose ring latency dominates, else the ring."""
    ring = modelled_seconds("all_reduce", "ring", n, message_bytes)
    tree = modelled_seconds("all_reduce", "tree", n, message_bytes)
    return "tree" if tree < ring else "ring"
