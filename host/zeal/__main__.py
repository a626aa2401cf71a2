"""`python -m zeal`: the `zeal` command."""
import sys

from .cli import main

sys.exit(main())
