"""`python -m fuzzing --n 1000 --seed 7` (from tests/differential): runs random programs, prints
each failure's kind and shrunk repro, then the counts by kind. `--part 1/2` runs every second
program from the second on, so that processes running the parts of one seed cover it together
(`make fuzz JOBS=2`)."""
from __future__ import annotations

import argparse
import collections
import sys
import time

from .programs import check, generate, repro, shrink


def run(n: int, seed: int, shrink_failures: bool = True, out=sys.stdout, quiet=False, quick=False,
        part: tuple[int, int] = (0, 1)):
    """Check programs seed*1_000_003 + i for i < n (those with i % parts == k, for part (k, parts));
    returns (failures by kind, an example of each kind, programs and ops run, seconds). Each failure
    is shrunk and printed; with `quiet`, and for the known kinds of known.py, only the first of each
    kind (with `quiet`, no known kind at all)."""
    kinds = collections.Counter()
    examples = {}
    programs = ops = 0
    start = time.time()
    for i in range(part[0], n, part[1]):
        program_seed = seed * 1_000_003 + i
        program = generate(program_seed, quick)
        programs += 1
        ops += sum(1 for node in program.nodes if node.op != "input")
        failure = check(program)
        if programs % 100 == 0:
            print(f"-- {programs} programs, {sum(kinds.values())} failures, {time.time() - start:.0f} s", file=sys.stderr,
                  flush=True)
        if failure is None:
            continue
        kinds[failure.kind] += 1
        if failure.kind not in examples or not quiet:
            small, small_failure = shrink(program, failure) if shrink_failures else (program, failure)
            examples.setdefault(failure.kind, (program_seed, small, small_failure))
            print(f"==== program seed {program_seed}: {failure.kind}\n{repro(small, small_failure)}\n",
                  file=out, flush=True)
    return kinds, examples, programs, ops, time.time() - start


def part_of(text: str) -> tuple[int, int]:
    k, _, parts = text.partition("/")
    if not (k.isdigit() and parts.isdigit() and int(k) < int(parts)):
        raise argparse.ArgumentTypeError(f"--part {text!r}: expected k/parts with 0 <= k < parts, e.g. 0/2")
    return int(k), int(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="print one repro per failure kind")
    parser.add_argument("--quick", action="store_true", help="programs of at most 10 ops (the `make test` tier)")
    parser.add_argument("--part", type=part_of, default=(0, 1), help="k/parts: program i runs if i %% parts == k")
    args = parser.parse_args(argv)
    kinds, _, programs, ops, seconds = run(args.n, args.seed, not args.no_shrink, quiet=args.quiet, quick=args.quick,
                                           part=args.part)
    part = f" part {args.part[0]}/{args.part[1]}" if args.part[1] > 1 else ""
    print(f"{programs} programs ({ops} ops), seed {args.seed}{part}, {seconds:.0f} s: {sum(kinds.values())} failures")
    for kind, count in kinds.most_common():
        print(f"  {count:5d}  {kind}")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
