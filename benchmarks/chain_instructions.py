"""Instructions per chain op (forward + backward), counted by valgrind rather than timed.

Seconds on a shared machine move by 2x with the load; instruction counts do not. Run it twice
under callgrind with two chain lengths; the difference over the extra ops is the per-op count,
free of start-up and imports:

    for n in 1000 3000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \\
        python benchmarks/chain_instructions.py $n 2>&1 | grep Collected; done
    # per op = (Collected(3000) - Collected(1000)) / (2 * 2000)

With `--no-backward` the chains are only recorded (graph building alone); the backward's share is
the difference between the two counts. Used to compare a compiled core with the pure-Python one
on the same machine.
"""

from __future__ import annotations

import argparse

from _timing import use_repository_checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ops", type=int, nargs="?", default=1000, help="chain length (mul ops)")
    parser.add_argument("--reps", type=int, default=2, help="chains built and backpropagated")
    parser.add_argument(
        "--no-backward", action="store_true", help="record the chains only (graph building)"
    )
    args = parser.parse_args()
    use_repository_checkout()
    import autograd_async as aa  # noqa: PLC0415 - after the checkout is on the path

    for _ in range(args.reps):
        x = aa.tensor([1.0, 2.0], requires_grad=True)
        h = x
        for _ in range(args.ops):
            h = h * 1.0001
        loss = h.sum()
        if not args.no_backward:
            loss.backward()
    aa.engine.get_engine().shutdown()
    done = "recorded" if args.no_backward else "recorded and backpropagated"
    print(f"chains {done}: {args.reps} of {args.ops} ops")


if __name__ == "__main__":
    main()
