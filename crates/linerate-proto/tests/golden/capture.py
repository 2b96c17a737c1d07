#!/usr/bin/env python3
"""Records the control messages of one `linerate bench` run, for the golden transcripts.

    capture.py LISTEN_PORT SERVER_PORT OUT.jsonl

Listens on 127.0.0.1:LISTEN_PORT and relays every connection to 127.0.0.1:SERVER_PORT (a
`linerate serve`); point `linerate bench 127.0.0.1 -p LISTEN_PORT` at it. The frames of the
control connection (the one that opens with `hello`) are written to OUT.jsonl, one per line:
{"from": "client"|"server", "msg": {...}}. Data connections are relayed as they are. It stops
once the control connection closes. Loopback only; bounded by the run it relays.
"""
import json
import socket
import struct
import sys
import threading


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def pump_raw(src, dst):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def pump_frames(src, dst, who, log, lock):
    try:
        while True:
            head = read_exact(src, 4)
            if head is None:
                break
            body = read_exact(src, struct.unpack(">I", head)[0])
            if body is None:
                break
            with lock:
                log.append({"from": who, "msg": json.loads(body)})
            dst.sendall(head + body)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    listen_port, server_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(16)
    ls.settimeout(60)
    log, lock, control = [], threading.Lock(), None
    threads = []
    while control is None or control.is_alive():
        try:
            c, _ = ls.accept()
        except socket.timeout:
            if control is None:
                break
            continue
        s = socket.create_connection(("127.0.0.1", server_port))
        head = read_exact(c, 4)
        body = read_exact(c, struct.unpack(">I", head)[0])
        s.sendall(head + body)
        first = json.loads(body)
        if first.get("type") == "hello" and control is None:
            log.append({"from": "client", "msg": first})
            a = threading.Thread(target=pump_frames, args=(c, s, "client", log, lock))
            b = threading.Thread(target=pump_frames, args=(s, c, "server", log, lock))
            control = b
        else:
            a = threading.Thread(target=pump_raw, args=(c, s))
            b = threading.Thread(target=pump_raw, args=(s, c))
        for t in (a, b):
            t.daemon = True
            t.start()
            threads.append(t)
        ls.settimeout(0.5 if control is not None else 60)
    if control is not None:
        control.join(timeout=30)
    with open(out, "w", encoding="utf-8") as f:
        for entry in log:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
