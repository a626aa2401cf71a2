"""`python -m zeal`: the `zeal` command (the same entry point as the console script)."""
import sys

from .cli import console

if __name__ == "__main__":
    sys.exit(console())
