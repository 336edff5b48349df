"""Resource usage of AMDGPU kernels, read from the backend's own assembly output.

LLVM's AMDGPU asm printer ends the assembly with the code object's metadata as YAML, between
`.amdgpu_metadata` and `.end_amdgpu_metadata` (the same document the ELF carries as its
NT_AMDGPU_METADATA note, see LLVM's AMDGPUUsage "Code Object V5 Metadata"):

    amdhsa.kernels:
      - .agpr_count:     0
        .args:
          - .name: x
            ...
        .group_segment_fixed_size: 1024
        .name:           reduce
        .private_segment_fixed_size: 0
        .sgpr_count:     14
        .sgpr_spill_count: 0
        .vgpr_count:     6
        .vgpr_spill_count: 0
        .wavefront_size: 64

Only the scalar keys of each kernel's map are read (the `.args` list is skipped), so a small
line parser suffices and no YAML library is needed. On gfx90a, gfx942 and gfx950 `.vgpr_count`
is the unified register count that occupancy depends on: the architectural VGPRs rounded up to
4 (the `.amdhsa_accum_offset`) plus `.agpr_count` when AGPRs are used.

What the hardware allocates is the kernel descriptor's, not the metadata's: the
`.amdhsa_next_free_vgpr` directive of the kernel's `.amdhsa_kernel` block (the descriptor's
granulated VGPR count is derived from it). The backend may allocate more than `.vgpr_count`: in
the MFMA kernels it does, up to what the occupancy their LDS allows leaves (a GEMM using 48
VGPRs at an LDS-limited 3 waves per SIMD is allocated 129), so the reports compute occupancy
from `allocated_vgprs` (runtime/report.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DESCRIPTOR_VGPRS = re.compile(r"^\s*\.amdhsa_kernel (?P<name>\S+)$(?P<body>.*?)^\s*\.end_amdhsa_kernel", re.M | re.S)
NEXT_FREE_VGPR = re.compile(r"\.amdhsa_next_free_vgpr (\d+)")
KERNEL_KEY = re.compile(r"^(?P<indent>\s*)(?:- )?\.(?P<key>[a-z_]+):\s+(?P<value>\S+)\s*$")


@dataclass(frozen=True)
class KernelResources:
    name: str
    vgpr_count: int          # unified VGPRs (arch + acc) per work-item
    agpr_count: int          # accumulation VGPRs, included in vgpr_count
    sgpr_count: int          # including VCC, FLAT_SCRATCH and XNACK_MASK when used
    vgpr_spill_count: int
    sgpr_spill_count: int
    lds_bytes: int           # group_segment_fixed_size
    scratch_bytes: int       # private_segment_fixed_size, per work-item
    wavefront_size: int
    kernarg_bytes: int
    max_flat_workgroup_size: int
    allocated_vgprs: int     # the kernel descriptor's .amdhsa_next_free_vgpr: what occupancy depends on

    @property
    def arch_vgpr_count(self) -> int:
        """Architectural VGPRs (rounded up to 4 when AGPRs follow them)."""
        return self.vgpr_count - self.agpr_count


FIELDS = {"vgpr_count": "vgpr_count", "agpr_count": "agpr_count", "sgpr_count": "sgpr_count",
          "vgpr_spill_count": "vgpr_spill_count", "sgpr_spill_count": "sgpr_spill_count",
          "group_segment_fixed_size": "lds_bytes", "private_segment_fixed_size": "scratch_bytes",
          "wavefront_size": "wavefront_size", "kernarg_segment_size": "kernarg_bytes",
          "max_flat_workgroup_size": "max_flat_workgroup_size"}


def metadata_text(assembly: str) -> str:
    start = assembly.find(".amdgpu_metadata")
    end = assembly.find(".end_amdgpu_metadata", start)
    if start < 0 or end < 0:
        raise ValueError("the assembly holds no .amdgpu_metadata block (was it compiled for amdgcn-amd-amdhsa?)")
    return assembly[start + len(".amdgpu_metadata"):end]


def parse_resources(assembly: str) -> dict[str, KernelResources]:
    """Each kernel's resources, by kernel name, from the assembly's metadata block."""
    kernels, current, key_indent = [], None, None
    for line in metadata_text(assembly).splitlines():
        if line.startswith("  - ."):  # a new entry of amdhsa.kernels (amdhsa.version's are numbers)
            current, key_indent = {}, len("  - ")
            kernels.append(current)
        match = KERNEL_KEY.match(line)
        if current is None or match is None:
            continue
        indent = len(match["indent"]) + (2 if line.lstrip().startswith("- ") else 0)
        if indent == key_indent:  # a key of the kernel's own map, not of its .args entries
            current[match["key"]] = match["value"]
    allocated = {match["name"]: int(NEXT_FREE_VGPR.search(match["body"])[1])
                 for match in DESCRIPTOR_VGPRS.finditer(assembly) if NEXT_FREE_VGPR.search(match["body"])}
    out = {}
    for entry in kernels:
        missing = [key for key in FIELDS if key not in entry]
        if missing or "name" not in entry:
            raise ValueError(f"kernel metadata lacks {', '.join(missing or ['.name'])}")
        if entry["name"] not in allocated:
            raise ValueError(f"kernel {entry['name']}: no .amdhsa_next_free_vgpr in its .amdhsa_kernel descriptor")
        out[entry["name"]] = KernelResources(entry["name"], **{field: int(entry[key]) for key, field in FIELDS.items()},
                                             allocated_vgprs=allocated[entry["name"]])
    return out
