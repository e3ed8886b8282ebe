"""An MCP server that is slow to start: it sleeps before serving the demo server over stdio.

    python tests/servers/slow_server.py --delay SECONDS [--pid-file PATH] [--name N]

While it sleeps it reads nothing, so a client's ``initialize`` waits in the pipe: with a
delay longer than the client's timeout it is a server that hangs on connect; with a short
one, a server that answers late. Then it is tests/servers/demo_server.py (same tools).
It exits if its parent goes away while it sleeps (it reads no stdin to notice otherwise).
"""

import argparse
import os
import time
from pathlib import Path

from demo_server import build


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("--pid-file")
    parser.add_argument("--name", default="slow")
    args = parser.parse_args(argv)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    parent, wake = os.getppid(), time.monotonic() + args.delay
    while time.monotonic() < wake:
        if os.getppid() != parent:  # its client is gone without closing it (killed): do not linger
            return
        time.sleep(min(0.2, max(0.0, wake - time.monotonic())))
    build(args.name, 0).run("stdio")


if __name__ == "__main__":
    main()
