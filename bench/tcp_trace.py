#!/usr/bin/env python3
"""One TCP stream on loopback, traced: the experiment behind bench/README.md's quiet-machine
tcp_stability figures. Usage: bench/tcp_trace.py TOOL SIZE RUNS SECS [NAME=VALUE ...]
  TOOL: lr (linerate: $LR or target/release/linerate) or iperf3; SIZE: write/read size (1M).
  NAME=VALUE pairs go into both ends' environment; the tracer itself reads:
    LR=PATH  PIN_S=CPU / PIN_C=CPU (taskset the server / client)  XARGS="client options"
    PERF=TAG (perf record -e cpu-clock -g on the receiving thread, /tmp/tcpexp/perf-TAG-N.data)
Per run: Gb/s, receiver CPU, each stream thread's CPU, migrations and voluntary/involuntary
switches (/proc/PID/task/TID/sched), the share of 0.1 s samples with both on one CPU, NET_RX
softirqs per CPU, `ss -ti` of both ends at mid-run, and the TCP counters that moved (nstat)."""
import json, os, re, statistics, subprocess, sys, time
tool, size, runs, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
env = dict(os.environ)
for kv in sys.argv[5:]:
    k, v = kv.split("=", 1); env[k] = v
lr = env.get("LR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "linerate"))
port = 17000 + os.getpid() % 1000
os.makedirs("/tmp/tcpexp", exist_ok=True)
srv_err = open(f"/tmp/tcpexp/srv-{port}.err", "w+")
pin_s = env.get("PIN_S"); pin_c = env.get("PIN_C")
def pin(c): return ["taskset", "-c", c] if c else []
if tool == "lr":
    srv = subprocess.Popen(pin(pin_s) + [lr, "serve", "-B", "127.0.0.1", "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=srv_err)
else:
    srv = subprocess.Popen(pin(pin_s) + ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=srv_err)
time.sleep(0.5)

def threads(pid):
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                out[tid] = comm
            except OSError: pass
    except OSError: pass
    return out
def stream_tid(pid):
    for tid, comm in threads(pid).items():
        if comm in ("stream-0", "iperf3"): return tid
def sched(pid, tid):
    try:
        t = open(f"/proc/{pid}/task/{tid}/sched").read()
        return {k: float(v) for k, v in re.findall(r"^(se\.nr_migrations|nr_voluntary_switches|nr_involuntary_switches|se\.sum_exec_runtime)\s*:\s*(\S+)", t, re.M)}
    except OSError: return {}
def psr(pid, tid):
    try: return int(open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")",1)[1].split()[36])
    except (OSError, IndexError, ValueError): return None
NST = ("TcpRetransSegs", "TcpExtTCPBacklogCoalesce", "TcpExtTCPBacklogDrop", "TcpExtTCPOFOQueue", "TcpExtPruneCalled", "TcpExtTCPRcvCollapsed", "TcpExtTCPLossProbes", "TcpExtTCPFastRetrans", "TcpExtTCPTimeouts", "TcpExtTCPDSACKRecv", "TcpExtTCPRcvQDrop", "TcpExtTCPZeroWindowDrop", "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPToZeroWindowAdv", "TcpExtTCPFromZeroWindowAdv", "TcpExtDelayedACKs", "TcpExtTCPHPHits")
def nstat():
    o = subprocess.run(["nstat", "-az"], capture_output=True, text=True).stdout
    d = {}
    for l in o.splitlines():
        f = l.split()
        if len(f) >= 2 and (f[0] in NST or re.search("Drop|Retrans|Loss|Prune|Collapse|Overflow|OFO|Timeout|Recovery|SACK|Spurious|Discard|Err|Fail|Undo|Reorder|Memory|Pressure", f[0])): d[f[0]] = int(f[1])
    return d
def ssinfo(port):
    res = []
    for side, key, cnt in (("snd", "dport", "bytes_acked"), ("rcv", "sport", "bytes_received")):
        o = subprocess.run(["ss", "-tinH", "state", "established", f"( {key} = :{port} )"], capture_output=True, text=True).stdout
        # one socket = a header line plus an info line; keep the one that moved most bytes
        best, bestn = "", -1
        for blk in re.split(r"\n(?=\S)", o):
            m = re.search(cnt + r":(\d+)", blk)
            n = int(m.group(1)) if m else 0
            if n > bestn: best, bestn = blk, n
        keep = [side]
        for k in ("cwnd", "rtt", "rcv_space", "rcv_rtt", "rcv_wnd", "busy", "rwnd_limited", "sndbuf_limited", "unacked", "retrans", "delivery_rate", "notsent", "app_limited", "rcv_ssthresh", "skmem"):
            m = re.search(r"(?<![\w_])" + k + r"[:(](\S+)", best)
            if m: keep.append(f"{k}:{m.group(1)}")
        res.append(" ".join(keep))
    return " || ".join(res)
def softnet():
    return [int(l.split()[1], 16) for l in open("/proc/net/softnet_stat")]
def softirq():
    for l in open("/proc/softirqs"):
        if l.strip().startswith("NET_RX"): return [int(x) for x in l.split()[1:]]
rows = []
for i in range(runs):
    if tool == "lr":
        cmd = pin(pin_c) + [lr, "bench", "127.0.0.1", "-p", str(port), "-t", str(secs), "-l", size, "-J"] + env.get("XARGS", "").split()
    else:
        cmd = pin(pin_c) + ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(secs), "-l", size, "-J"] + env.get("XARGS", "").split()
    s0 = softirq(); n0 = nstat(); sn0 = softnet()
    cli = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.25)
    ct, st = None, None
    for _ in range(20):
        ct, st = stream_tid(cli.pid), stream_tid(srv.pid)
        if ct and st: break
        time.sleep(0.02)
    c0, r0 = sched(cli.pid, ct), sched(srv.pid, st)
    same = seen = 0; cpus = []
    t_end = time.time() + secs - 0.5
    perf = None
    if env.get("PERF"):
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-t", st, "-o", f"/tmp/tcpexp/perf-{env.get('PERF')}-{i+1}.data", "--", "sleep", str(max(secs - 1.0, 0.5))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ssmid = None
    while time.time() < t_end:
        if ssmid is None and time.time() > t_end - (secs - 0.5) / 2:
            ssmid = ssinfo(port)
        a, b = psr(cli.pid, ct), psr(srv.pid, st)
        if a is not None and b is not None:
            seen += 1; same += a == b; cpus.append(f"{a}{b}")
        time.sleep(0.1)
    c1, r1 = sched(cli.pid, ct), sched(srv.pid, st)
    out, err = cli.communicate(timeout=secs + 30)
    s1 = softirq(); n1 = nstat()
    if perf: perf.wait()
    nd = {k.replace("TcpExt", "").replace("Tcp", ""): n1.get(k, 0) - n0.get(k, 0) for k in n1 if n1.get(k, 0) != n0.get(k, 0)}
    sn1 = softnet(); nd["softnet_drop"] = [b - a for a, b in zip(sn0, sn1)]
    d = lambda a, b, k: int(b.get(k, 0) - a.get(k, 0))
    try:
        j = json.loads(out)
        if tool == "lr":
            t = j["tests"][0]; g = t["gbps"]; rc = (t.get("receiver") or {}).get("cpu_percent", 0)
        else:
            g = j["end"]["sum_received"]["bits_per_second"] / 1e9; rc = j["end"]["cpu_utilization_percent"]["remote_total"]
    except Exception as e:
        g, rc = 0.0, 0
        print("parse error", e, err[:300])
    win = secs - 0.75
    ccpu = d(c0, c1, "se.sum_exec_runtime") / 1e3 / win * 100 if c0 else 0
    rcpu = d(r0, r1, "se.sum_exec_runtime") / 1e3 / win * 100 if r0 else 0
    row = dict(g=g, rc=rc, same=same / max(seen, 1), smig=d(c0, c1, "se.nr_migrations"), rmig=d(r0, r1, "se.nr_migrations"),
               svcs=d(c0, c1, "nr_voluntary_switches"), rvcs=d(r0, r1, "nr_voluntary_switches"),
               sivcs=d(c0, c1, "nr_involuntary_switches"), rivcs=d(r0, r1, "nr_involuntary_switches"),
               scpu=ccpu, rcpu=rcpu, nrx=[b - a for a, b in zip(s0, s1)])
    rows.append(row)
    xt = " | ".join(l for l in err.splitlines() if "XTRACE" in l)
    print(f"run {i+1}: {g:5.1f} Gb/s rcvCPU {rc:4.0f}% (thr snd {ccpu:3.0f}% rcv {rcpu:3.0f}%) same {row['same']:.2f} mig s/r {row['smig']}/{row['rmig']} vcs s/r {row['svcs']}/{row['rvcs']} ivcs s/r {row['sivcs']}/{row['rivcs']} netrx {row['nrx']} cpus {''.join(c[0]+c[1]+' ' for c in cpus[::3])} {xt}\n    ss: {ssmid}\n    nstat: {nd}", flush=True)
    time.sleep(0.3)
srv.terminate(); srv.wait()
srv_err.seek(0)
for l in srv_err.read().splitlines():
    if "XTRACE" in l: print("  srv", l)
g = [r["g"] for r in rows]
m = statistics.fmean(g)
print(f"SUMMARY {tool} {size} {' '.join(sys.argv[5:])}: median {statistics.median(g):.1f} mean {m:.1f} min {min(g):.1f} max {max(g):.1f} CV {statistics.pstdev(g)/m*100:.1f}%")
