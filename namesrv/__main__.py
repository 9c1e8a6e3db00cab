"""``python -m namesrv`` (what bin/mqnamesrv runs)."""

import sys

from namesrv.startup import main

if __name__ == "__main__":
    sys.exit(main())
