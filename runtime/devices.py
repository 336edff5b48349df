"""Devices: the logical devices of this process, and of every process once MPI has started them.

On one host, CDNAJIT_NUM_DEVICES=N (default 1) gives N logical devices, as XLA's
--xla_force_host_platform_device_count gives N CPU devices: each holds its own buffers (a sharded
array's shards are separate arrays), every one models the same target (gfx942 by default), and a
program over several of them runs each device's kernels and the collectives between them
(libs/ccl) in one schedule on the process's worker pool, the devices' copies of an op side by side
as one job of the pool (codegen/native_schedule.py: side_by_side). Under MPI (frontend/distributed.py), the
global devices are every process's local ones, process p's numbered from p * N.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

NUM_DEVICES_ENV = "CDNAJIT_NUM_DEVICES"


@dataclass(frozen=True)
class Device:
    id: int
    process_index: int = 0
    target: str = "gfx942"

    @property
    def platform(self) -> str:
        return "cdna"

    def __repr__(self):
        return f"Device(id={self.id}, process={self.process_index}, {self.target})"


class Processes:
    """This process's rank and the number of processes (1 and 0 without MPI)."""
    index = 0
    count = 1


def local_device_count() -> int:
    text = os.environ.get(NUM_DEVICES_ENV, "1")
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"{NUM_DEVICES_ENV}={text!r} is not an integer") from None
    if count < 1:
        raise ValueError(f"{NUM_DEVICES_ENV}={count}: a process needs at least one device")
    return count


def devices() -> list[Device]:
    """Every device of every process, process 0's first."""
    n = local_device_count()
    return [Device(p * n + k, p) for p in range(Processes.count) for k in range(n)]


def local_devices() -> list[Device]:
    return [d for d in devices() if d.process_index == Processes.index]


def device_count() -> int:
    return local_device_count() * Processes.count


def process_index() -> int:
    return Processes.index


def process_count() -> int:
    return Processes.count
