# SPDX-License-Identifier: MIT
"""Start-up hook: imported by probing.pth when PROBING (or PROBE, the original Probing's
spelling) is set to something other than 0.
PROBING_LISTEN=HOST:PORT also serves TCP (token from PROBING_TOKEN or generated). A failure is
reported in one line on stderr (the user asked for the probe) and never stops the program."""
import os
import sys


def _start():
    try:
        import probing

        probing.init(listen=os.environ.get("PROBING_LISTEN") or None)
    except Exception as e:  # never break the user's program
        sys.stderr.write("probing: error: PROBING=1 start-up hook: %s\n" % e)


_start()
