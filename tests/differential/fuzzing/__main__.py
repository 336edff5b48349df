"""`python -m fuzzing --n 1000 --seed 7` (from tests/differential): runs random programs, prints
each failure's kind and shrunk repro, then the counts by kind."""
from __future__ import annotations

import argparse
import collections
import sys
import time

from .programs import check, generate, repro, shrink


def run(n: int, seed: int, shrink_failures: bool = True, out=sys.stdout, quiet=False, quick=False):
    """Check programs seed*1_000_003 + i for i < n; returns (failures by kind, an example of each
    kind, ops run, seconds). Each failure is shrunk and printed; with `quiet`, and for the known
    kinds of known.py, only the first of each kind (with `quiet`, no known kind at all)."""
    kinds = collections.Counter()
    examples = {}
    ops = 0
    start = time.time()
    for i in range(n):
        program_seed = seed * 1_000_003 + i
        program = generate(program_seed, quick)
        ops += sum(1 for node in program.nodes if node.op != "input")
        failure = check(program)
        if (i + 1) % 100 == 0:
            print(f"-- {i + 1} programs, {sum(kinds.values())} failures, {time.time() - start:.0f} s", file=sys.stderr,
                  flush=True)
        if failure is None:
            continue
        kinds[failure.kind] += 1
        if failure.kind not in examples or not quiet:
            small, small_failure = shrink(program, failure) if shrink_failures else (program, failure)
            examples.setdefault(failure.kind, (program_seed, small, small_failure))
            print(f"==== program seed {program_seed}: {failure.kind}\n{repro(small, small_failure)}\n",
                  file=out, flush=True)
    return kinds, examples, ops, time.time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="print one repro per failure kind")
    parser.add_argument("--quick", action="store_true", help="programs of at most 10 ops (the `make test` tier)")
    args = parser.parse_args(argv)
    kinds, _, ops, seconds = run(args.n, args.seed, not args.no_shrink, quiet=args.quiet, quick=args.quick)
    print(f"{args.n} programs ({ops} ops), seed {args.seed}, {seconds:.0f} s: {sum(kinds.values())} failures")
    for kind, count in kinds.most_common():
        print(f"  {count:5d}  {kind}")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
