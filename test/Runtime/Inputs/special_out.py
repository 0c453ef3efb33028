"""Runs a command whose output path is a device node or a FIFO (the argument @OUT@ is
replaced by it), and checks that the node is still what it was afterwards: a tool
must write into such a path, never rename a regular file over it.

usage: special_out.py device|fifo DIR -- COMMAND... @OUT@ ...
device: a character device equal to /dev/null, made with mknod when running as root
(so that a regression cannot replace the real /dev/null), /dev/null itself otherwise
(which a non-root process cannot replace). fifo: DIR/out.fifo, drained by a reader."""
import os
import stat
import subprocess
import sys
import threading

kind, workdir = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
received = bytearray()
reader = None
if kind == "device":
    if os.geteuid() == 0:
        path = os.path.join(workdir, "null")
        if os.path.exists(path):
            os.remove(path)
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        path = "/dev/null"
else:
    path = os.path.join(workdir, "out.fifo")
    if os.path.exists(path):
        os.remove(path)
    os.mkfifo(path)

    def drain():
        with open(path, "rb") as f:
            received.extend(f.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

proc = subprocess.run([path if a == "@OUT@" else a for a in cmd], stdout=subprocess.PIPE,
                      stderr=subprocess.STDOUT, text=True, timeout=300)
sys.stdout.write(proc.stdout)
if reader:
    if proc.returncode != 0:
        open(path, "wb").close()  # unblock the reader
    reader.join(60)
mode = os.lstat(path).st_mode
still = stat.S_ISCHR(mode) if kind == "device" else stat.S_ISFIFO(mode)
if proc.returncode != 0:
    sys.exit(f"exit status {proc.returncode}")
if not still:
    sys.exit(f"{path} is no longer a {'character device' if kind == 'device' else 'FIFO'}")
print(f"special_out: {path} is still a {'character device' if kind == 'device' else 'FIFO'}"
      + (f"; it carried {len(received)} bytes starting {bytes(received[:8])!r}" if reader else ""))
