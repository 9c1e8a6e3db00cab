"""``python -m broker`` (bin/mqbroker)."""

import sys

from broker.broker_startup import main

sys.exit(main())
