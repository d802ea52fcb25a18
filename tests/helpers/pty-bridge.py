"""Runs a command in a pseudo-terminal: this process's stdin goes to the terminal as keystrokes, and
what the program writes to the terminal comes out on stdout, byte for byte (escape sequences too).
Exits with the program's status once it has ended. Usage: python3 pty-bridge.py COMMAND [ARGS...]"""
import os
import pty
import select
import sys

pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])

stdin = sys.stdin.fileno()
sources = [fd, stdin]
while True:
    ready, _, _ = select.select(sources, [], [])
    if stdin in ready:
        data = os.read(stdin, 4096)
        if data:
            os.write(fd, data)
        else:
            sources.remove(stdin)
    if fd in ready:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        os.write(sys.stdout.fileno(), data)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
