"""`python -m demo.search_service` (importing this module runs nothing)."""

import sys

from demo.search_service.server import main

if __name__ == "__main__":
    sys.exit(main())
