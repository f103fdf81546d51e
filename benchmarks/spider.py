"""Spider accuracy harness; the same as ``verifiedsql bench spider``. Run from the repository root:

    .venv/bin/python benchmarks/spider.py -n 200 --model 1.5b --strategies greedy,self-consistency
"""

import sys

from verifiedsql.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
