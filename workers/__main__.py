"""`python -m workers` from a checkout: the worker process's command line
(`autograd_async.workers.__main__`; installed, `autograd-async-worker`)."""

import sys

from autograd_async.workers.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
