"""The guard of a command's process group (run by :mod:`patchbay.apply.childgroup`, stdlib only).

``python -I -S _group_guard.py CONTROL_FD STATUS_FD ARGV...``: the guard leads a new session
(so a new process group), starts ``ARGV`` in that group and waits for it. Its exit status is the
command's (a command killed by a signal kills the guard with the same signal). Two pipes tie it
to patchbay: when ``CONTROL_FD`` reaches end of file patchbay is gone (killed, even by SIGKILL:
the kernel closes its end), and the guard kills the whole group at once, itself included, so
no process of the command outlives the run that started it. An ``exec`` failure is written to
``STATUS_FD`` as its errno, and the guard exits 127.
"""

import os
import signal
import subprocess
import sys
import threading


def _watch(control: int) -> None:
    while os.read(control, 64):
        pass
    os.killpg(0, signal.SIGKILL)


def main() -> int:
    control, status = int(sys.argv[1]), int(sys.argv[2])
    # patchbay's SIGTERM to the group is meant for the command; the guard leaves when it does
    # (a handler, not SIG_IGN: handlers are reset for the command by exec)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    try:
        child = subprocess.Popen(sys.argv[3:])
    except OSError as exc:
        os.write(status, str(exc.errno or 0).encode())
        return 127
    os.close(status)
    threading.Thread(target=_watch, args=(control,), daemon=True).start()
    code = child.wait()
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main())
