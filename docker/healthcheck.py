"""The image's HEALTHCHECK: exit 0 when ``/readyz`` answers 200 (the image has no curl).

``TAPGATE_HEALTH_URL`` overrides the address, for a config that listens elsewhere
than port 8080.
"""

import os
import sys
import urllib.request

URL = os.environ.get("TAPGATE_HEALTH_URL", "http://127.0.0.1:8080/readyz")

try:
    with urllib.request.urlopen(URL, timeout=2) as response:  # noqa: S310 - a fixed local URL
        sys.exit(0 if response.status == 200 else 1)
except OSError as exc:
    print(f"{URL}: {exc}", file=sys.stderr)
    sys.exit(1)
