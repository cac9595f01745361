"""``python -m rollway.ray``: the driver of ``rollway run --backend ray``."""

import sys

from rollway.ray.driver import main

sys.exit(main())
