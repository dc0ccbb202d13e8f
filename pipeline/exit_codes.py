"""Exit codes of every ``streamxai`` command (and of ``python -m streamxai.local.broker``).

======  ===================================================================================
 code   meaning
======  ===================================================================================
 0      done
 1      ran to the end, but not everything succeeded: ``produce`` skipped bad lines of a
        file, the ``demo`` timed out or one of its workers exited
 2      error, nothing (more) done: bad arguments or settings, a missing file, no broker,
        wrong credentials, a broker that cannot be set up; one line on stderr says what to do
 3      ``broker status``: the broker is not running or not ready
 130    interrupted (Ctrl-C)
======  ===================================================================================

>>> OK, INCOMPLETE, ERROR, NOT_READY, INTERRUPTED
(0, 1, 2, 3, 130)
"""

from __future__ import annotations

__all__ = ["OK", "INCOMPLETE", "ERROR", "NOT_READY", "INTERRUPTED", "HELP"]

OK = 0
INCOMPLETE = 1
ERROR = 2  # also what argparse exits with on bad arguments
NOT_READY = 3
INTERRUPTED = 130

#: the convention in one paragraph, for the commands' --help
HELP = ("exit codes: 0 done; 1 ran to the end but not everything succeeded (bad lines skipped, demo timed "
        "out or lost a worker); 2 error (arguments, settings, files, broker), one line on stderr; "
        "3 broker status: not ready; 130 interrupted")
