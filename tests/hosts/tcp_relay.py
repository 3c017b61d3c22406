"""ProxyCommand of the lab: connect to HOST PORT and relay stdin/stdout,
like `nc HOST PORT` but with TCP_NODELAY. Without it, nc's small writes
wait for the ACK of the previous segment (Nagle) while sshd delays that ACK
(~40 ms): every request-answer exchange over SSH would take 40 ms more than
the path does, which a direct TCP connection (asyncssh sets TCP_NODELAY,
and so does OpenSSH for forwarded connections of a jump host) never sees."""

import os
import selectors
import socket
import sys


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    sock = socket.create_connection((host, port), timeout=10)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(stdin, selectors.EVENT_READ, "in")
    sel.register(sock, selectors.EVENT_READ, "sock")
    open_ends = 2
    while open_ends:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(stdin, 1 << 16)
                if not data:
                    sel.unregister(stdin)
                    sock.shutdown(socket.SHUT_WR)
                    open_ends -= 1
                    continue
                sock.sendall(data)
            else:
                data = sock.recv(1 << 16)
                if not data:
                    return 0
                view = memoryview(data)
                while view:
                    view = view[os.write(stdout, view):]
    return 0


if __name__ == "__main__":
    sys.exit(main())
