"""A process that owns an embedded server, for the fault-injection tests and the lifeline bench.

    python -m tests.integration.owner_process [--from-thread] [--then wait|crash]
                                              [--model-repository DIR]

Starts the server (from a thread that has exited by the time the server is used, with
--from-thread, as the viewer does on its executor), prints `ready <http address>` once the
server answers, then reads a line from stdin: with --then crash it crashes then (SIGSEGV, no
core file); otherwise it waits there to be killed, and exits without any clean-up when stdin
closes. Whatever happens to the server then is the lifeline's doing. The server serves the
bundled models unless --model-repository names another repository.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import threading

from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.health import is_live


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from-thread", action="store_true")
    parser.add_argument("--then", choices=["wait", "crash"], default="wait")
    parser.add_argument("--model-repository", default=None)
    args = parser.parse_args()
    server = EmbeddedServer(args.model_repository or model_repository())
    if args.from_thread:
        starter = threading.Thread(target=server.start, name="starter")
        starter.start()
        starter.join()  # the thread that forked the server is gone from here on
    else:
        server.start()
    # Still serving after the starting thread ended (a thread-bound death signal would have
    # ended it by now).
    if not is_live(server.http_url, timeout=5.0):
        raise SystemExit("the server is not live after its starting thread ended")
    print(f"ready {server.http_url}", flush=True)
    line = sys.stdin.readline()
    if line and args.then == "crash":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), signal.SIGSEGV)
    os._exit(0)  # stdin closed (the test is gone): exit as abruptly


if __name__ == "__main__":
    main()
