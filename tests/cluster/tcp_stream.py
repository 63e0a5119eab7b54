#!/usr/bin/env python3
"""One TCP stream between two testbed hosts, timed at the receiver (python3 sockets only).
    tcp_stream.py receive ADDR PORT        accepts one connection, prints "goodput MBIT Mbit/s ..."
    tcp_stream.py send ADDR PORT SECONDS   connects (retrying while the receiver starts) and sends
The receiver's clock runs from the first byte to the end of the stream, so the figure is the rate at
which payload arrived (TCP/IP headers excluded), what a shaped link leaves an application."""
import socket
import sys
import time


def receive(addr, port):
    with socket.create_server((addr, port)) as server:
        server.settimeout(30)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(30)
            total, first = 0, None
            while True:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                if first is None:
                    first = time.perf_counter()
                total += len(chunk)
            seconds = time.perf_counter() - first if first else 0.0
    if seconds <= 0:
        sys.exit("tcp_stream: nothing received")
    print(f"goodput {total * 8 / seconds / 1e6:.1f} Mbit/s ({total} bytes in {seconds:.2f} s)")


def send(addr, port, seconds):
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                sys.exit(f"tcp_stream: cannot connect to {addr}:{port}: {e}")
            time.sleep(0.05)
    block = b"\0" * (1 << 20)
    end = time.perf_counter() + seconds
    with conn:
        while time.perf_counter() < end:
            conn.sendall(block)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "receive":
        receive(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
