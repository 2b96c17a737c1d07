#!/usr/bin/env python3
"""Capture what real iperf3 binaries say to each other, for linerate-iperf3's golden transcripts.

Runs one stock iperf3 server and one stock client on loopback with a relaying proxy between them
(TCP and UDP on the same port number, as iperf3 uses both), and writes what crossed the proxy:

- every chunk of the control connection, in order, each direction (hex);
- for each TCP data connection: its first bytes each way (the cookie; a refusal byte) and totals;
- for each UDP stream: the first datagrams each way (the connect magic, the first data headers)
  and totals.

Used by hand (not by `cargo test`); the tests read the transcripts it wrote. Every run is
bounded in time; the processes it starts are ended by PID.

    capture.py --server BIN --client BIN --out FILE [--server-args '...'] [--client-args '...']
               [--busy]      # a second client while the first runs: capture the refusal instead

Format (one record per line, `#` starts a comment):
    control c2s HEX           a chunk the client wrote on the control connection, as read
    control s2c HEX           a chunk the server wrote
    tcp N c2s-head HEX        the first bytes of TCP data connection N (in accept order)
    tcp N s2c-head HEX        the first bytes the server wrote on it (a refusal: ff)
    tcp N total C2S_BYTES S2C_BYTES
    udp N c2s LEN HEX         one of the first datagrams of UDP stream N (first 16 bytes)
    udp N s2c LEN HEX
    udp N total C2S_DATAGRAMS S2C_DATAGRAMS
    udp N fwd LEN HEX         with --udp-impair: every datagram forwarded to the server on the
                              first UDP stream, in order (first 16 bytes)

With --udp-impair the proxy loses, delays and repeats some of the first UDP stream's data
datagrams on their way to the server (IMPAIR below), so the server's own loss and out-of-order
counts can be checked against linerate's accounting of the same datagrams.
"""

import argparse
import os
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

# The cookie, then nothing of the random payload; a refusal is one byte.
HEAD_BYTES = {"c2s": 37, "s2c": 8}
UDP_KEEP = 4
UDP_HEAD = 16
DEADLINE_S = 60
# By the data datagram's position on the first UDP stream (1 = the first after the handshake):
# lose 5, 6 and 20; hold 10 back until 13 has gone; send 30 twice.
IMPAIR = {"drop": {5, 6, 20}, "hold": (10, 13), "repeat": {30}}


def free_port():
    """A port free for both TCP and UDP on 127.0.0.1."""
    for _ in range(200):
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.bind(("127.0.0.1", 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port))
        except OSError:
            t.close()
            continue
        t.close()
        u.close()
        return port
    raise SystemExit("no free port")


class Log:
    def __init__(self):
        self.lock = threading.Lock()
        self.control = []  # (direction, bytes)
        self.tcp = []  # dict per data connection
        self.udp = []  # dict per UDP stream

    def add_control(self, direction, data):
        with self.lock:
            self.control.append((direction, data))


def relay_tcp(log, client, up, index):
    """Relay one TCP connection; the first connection is the control connection."""
    for s in (client, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with log.lock:
        record = None
        if index > 0:
            record = {"c2s-head": b"", "s2c-head": b"", "c2s": 0, "s2c": 0}
            log.tcp.append(record)
    sel = selectors.DefaultSelector()
    sel.register(client, selectors.EVENT_READ, ("c2s", up))
    sel.register(up, selectors.EVENT_READ, ("s2c", client))
    open_dirs = 2
    deadline = time.monotonic() + DEADLINE_S
    while open_dirs and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            direction, dest = key.data
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                open_dirs -= 1
                try:
                    dest.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                continue
            if record is None:
                log.add_control(direction, data)
            else:
                with log.lock:
                    head = direction + "-head"
                    room = HEAD_BYTES[direction] - len(record[head])
                    if room > 0:
                        record[head] += data[:room]
                    record[direction] += len(data)
            try:
                dest.sendall(data)
            except OSError:
                pass
    client.close()
    up.close()


def tcp_proxy(log, listener, upstream_port, stop):
    index = 0
    threads = []
    listener.setblocking(True)
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        # Connect upstream here, in accept order: the server gives each stream its role by the
        # order its connections arrive (a proxy that connects in parallel threads can swap two
        # streams, and a --bidir test then has both ends sending on one connection).
        conn.setblocking(True)
        up = socket.create_connection(("127.0.0.1", upstream_port), timeout=5)
        up.settimeout(None)
        t = threading.Thread(target=relay_tcp, args=(log, conn, up, index))
        index += 1
        t.daemon = True
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=5)


def udp_proxy(log, front, upstream_port, stop, impair=False):
    """A NAT for UDP: one upstream socket per client address, so the server sees one peer per
    stream, as without the proxy."""
    sel = selectors.DefaultSelector()
    sel.register(front, selectors.EVENT_READ, None)
    flows = {}
    while not stop.is_set():
        for key, _ in sel.select(timeout=0.2):
            if key.data is None:
                data, addr = front.recvfrom(65536)
                flow = flows.get(addr)
                if flow is None:
                    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    up.bind(("127.0.0.1", 0))
                    record = {"first": [], "c2s": 0, "s2c": 0}
                    with log.lock:
                        log.udp.append(record)
                    flow = (up, record)
                    flows[addr] = flow
                    sel.register(up, selectors.EVENT_READ, (addr, record))
                up, record = flow
                with log.lock:
                    record["c2s"] += 1
                    if sum(1 for d, _, _ in record["first"] if d == "c2s") < UDP_KEEP:
                        record["first"].append(("c2s", len(data), data[:UDP_HEAD]))
                    impaired = impair and record is log.udp[0]
                if not impaired:
                    up.sendto(data, ("127.0.0.1", upstream_port))
                    continue
                # The first datagram is the handshake; data positions count from 1 after it.
                position = record["c2s"] - 1
                out = []
                if position in IMPAIR["drop"]:
                    pass
                elif position == IMPAIR["hold"][0]:
                    record["held"] = data
                else:
                    out.append(data)
                    if position in IMPAIR["repeat"]:
                        out.append(data)
                    if position == IMPAIR["hold"][1] and "held" in record:
                        out.append(record.pop("held"))
                for d in out:
                    with log.lock:
                        record.setdefault("fwd", []).append((len(d), d[:UDP_HEAD]))
                    up.sendto(d, ("127.0.0.1", upstream_port))
            else:
                addr, record = key.data
                data = key.fileobj.recv(65536)
                with log.lock:
                    record["s2c"] += 1
                    if sum(1 for d, _, _ in record["first"] if d == "s2c") < UDP_KEEP:
                        record["first"].append(("s2c", len(data), data[:UDP_HEAD]))
                front.sendto(data, addr)


def listening(port):
    """Whether a TCP socket listens on the port (read from /proc, without connecting: a probe
    connection would be a test to a one-off server)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def wait_listening(port, proc):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early: {proc.returncode}")
        if listening(port):
            return
        time.sleep(0.1)
    raise SystemExit("server never listened")


def version_of(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.splitlines()[0].strip() if out.stdout else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--client-args", default="-t 1")
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--udp-impair", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    server_port = free_port()
    proxy_port = free_port()
    one_off = [] if args.busy else ["-1"]
    server_cmd = [args.server, "-s", "-p", str(server_port)] + one_off + shlex.split(args.server_args)
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = Log()
    stop = threading.Event()
    try:
        wait_listening(server_port, server)

        tl = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tl.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tl.bind(("127.0.0.1", proxy_port))
        tl.listen(128)
        ul = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        ul.bind(("127.0.0.1", proxy_port))
        threads = [
            threading.Thread(target=tcp_proxy, args=(log, tl, server_port, stop), daemon=True),
            threading.Thread(target=udp_proxy, args=(log, ul, server_port, stop, args.udp_impair), daemon=True),
        ]
        for t in threads:
            t.start()

        client_cmd = [args.client, "-c", "127.0.0.1", "-p", str(proxy_port)] + shlex.split(args.client_args)
        if args.busy:
            # The first client goes straight to the server; the captured one meets it busy.
            first = subprocess.Popen(
                [args.client, "-c", "127.0.0.1", "-p", str(server_port), "-t", "4"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
        try:
            client = subprocess.run(client_cmd, capture_output=True, text=True, timeout=DEADLINE_S)
        except subprocess.TimeoutExpired as e:
            # subprocess.run has killed the client; keep what crossed the proxy.
            client = subprocess.CompletedProcess(client_cmd, f"timed out after {DEADLINE_S} s",
                                                 e.stdout or "", "client timed out\n")
        if args.busy:
            first.wait(timeout=DEADLINE_S)
        else:
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        time.sleep(0.5)
    finally:
        stop.set()
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    server_out = server.stdout.read() if server.stdout else ""

    with log.lock, open(args.out, "w") as f:
        f.write("# linerate-iperf3 transcript 1, written by tests/transcripts/capture.py\n")
        f.write(f"# client: {version_of(args.client)}\n")
        f.write(f"# server: {version_of(args.server)}\n")
        f.write(f"# client args: {args.client_args}\n")
        f.write(f"# server args: {' '.join(one_off + shlex.split(args.server_args))}\n")
        f.write(f"# client exit status: {client.returncode}\n")
        stderr = client.stderr if isinstance(client.stderr, str) else (client.stderr or b"").decode()
        for line in stderr.splitlines()[-3:]:
            f.write(f"# client stderr: {line}\n")
        for line in (server_out or "").splitlines():
            if "error" in line.lower():
                f.write(f"# server said: {line}\n")
        for direction, data in log.control:
            f.write(f"control {direction} {data.hex()}\n")
        for n, rec in enumerate(log.tcp, start=1):
            f.write(f"tcp {n} c2s-head {rec['c2s-head'].hex()}\n")
            if rec["s2c-head"]:
                f.write(f"tcp {n} s2c-head {rec['s2c-head'].hex()}\n")
            f.write(f"tcp {n} total {rec['c2s']} {rec['s2c']}\n")
        for n, rec in enumerate(log.udp, start=1):
            for direction, length, head in rec["first"]:
                f.write(f"udp {n} {direction} {length} {head.hex()}\n")
            f.write(f"udp {n} total {rec['c2s']} {rec['s2c']}\n")
            for length, head in rec.get("fwd", []):
                f.write(f"udp {n} fwd {length} {head.hex()}\n")
    sys.stderr.write(stderr[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
