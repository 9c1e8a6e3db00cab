"""``python -m broker`` (bin/mqbroker)."""

import sys

from broker.startup import main

sys.exit(main())
