#!/usr/bin/env python3
"""Parsing and reporting for bench/compare.sh (Python 3 standard library only).

    compare.py one TOOL TEST STDOUT STDERR RC [NOTE]   one run: print a one-line summary
    compare.py report MANIFEST META OUT.json ONLY       every run: markdown tables + results JSON
    compare.py udp-rate SHAPE                          90% of a tc rate, in iperf3 -b syntax
    compare.py tbf-burst SHAPE MTU                     a tbf burst (bytes) for that rate

Every parser returns a dict of numbers in fixed units: Gb/s, microseconds (round trip), percent,
transactions per second. A run that cannot be parsed raises Failed with the reason shown in the table.
"""

import csv
import io
import json
import re
import statistics
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Failed(Exception):
    """A run that produced no usable number; str() is the reason."""


def tail(text, n=1, width=140):
    lines = [ANSI.sub("", x).strip() for x in text.splitlines() if x.strip()]
    return " / ".join(lines[-n:])[:width]


def load_json(text):
    try:
        return json.loads(text)
    except ValueError as e:
        raise Failed(f"output is not JSON ({e.msg}): {tail(text)}") from None


def dig(doc, *keys, required=True):
    cur = doc
    for k in keys:
        if isinstance(cur, dict) and k in cur:
            cur = cur[k]
        elif isinstance(cur, list) and isinstance(k, int) and -len(cur) <= k < len(cur):
            cur = cur[k]
        else:
            if required:
                raise Failed("JSON has no ." + ".".join(str(x) for x in keys))
            return None
    if required and not isinstance(cur, (int, float)):
        raise Failed("JSON ." + ".".join(str(x) for x in keys) + f" is not a number: {cur!r}")
    return cur


# -------------------------------------------------------------------------------------------------
# Parsers, one per tool. test is one of tcp1 tcp1_1m tcp2 tcp_rev lat udp.
# -------------------------------------------------------------------------------------------------
def parse_linerate(test, out):
    doc = load_json(out)
    if isinstance(doc, dict) and doc.get("error"):
        raise Failed(f"linerate: {doc['error']}")
    t = ("tests", 0)
    if test == "lat":
        m = {
            "mean_us": dig(doc, *t, "latency_us", "mean"),
            "p50_us": dig(doc, *t, "latency_us", "p50"),
            "tps": dig(doc, *t, "transactions_per_s"),
        }
        p99 = dig(doc, *t, "latency_us", "p99", required=False)
        if isinstance(p99, (int, float)):
            m["p99_us"] = p99
        return m
    m = {"gbps": dig(doc, *t, "gbps")}
    for k in ("l2_gbps", "retransmits"):   # optional: frame-level rate, TCP retransmits
        v = dig(doc, *t, k, required=False)
        if isinstance(v, (int, float)):
            m[k] = v
    if test == "udp":
        m["loss_percent"] = dig(doc, *t, "loss_percent")
        m["jitter_us"] = dig(doc, *t, "jitter_us")
    for side, name in (("sender", "cpu_snd"), ("receiver", "cpu_rcv")):
        v = dig(doc, *t, side, "cpu_percent", required=False)
        if isinstance(v, (int, float)):
            m[name] = v
    return m


def parse_iperf3(test, out):
    doc = load_json(out)
    if isinstance(doc, dict) and doc.get("error"):
        raise Failed(f"iperf3: {doc['error']}")
    end = doc.get("end") if isinstance(doc, dict) else None
    if not end:
        raise Failed("iperf3 JSON has no .end")
    if test == "udp":
        # .end.sum.bits_per_second is what the *sender* sent (3.12); loss and jitter in .end.sum come
        # from the receiver. The received rate is .end.sum_received (absent in older iperf3).
        m = {
            "sent_gbps": dig(end, "sum", "bits_per_second") / 1e9,
            "loss_percent": dig(end, "sum", "lost_percent"),
            "jitter_us": dig(end, "sum", "jitter_ms") * 1000.0,
        }
        rcv = dig(end, "sum_received", "bits_per_second", required=False)
        m["gbps"] = rcv / 1e9 if isinstance(rcv, (int, float)) else m["sent_gbps"]
        return m
    m = {
        "gbps": dig(end, "sum_received", "bits_per_second") / 1e9,
        "sent_gbps": dig(end, "sum_sent", "bits_per_second") / 1e9,
    }
    r = dig(end, "sum_sent", "retransmits", required=False)
    if isinstance(r, (int, float)):
        m["retransmits"] = r
    host = dig(end, "cpu_utilization_percent", "host_total", required=False)
    remote = dig(end, "cpu_utilization_percent", "remote_total", required=False)
    if isinstance(host, (int, float)) and isinstance(remote, (int, float)):
        # The client (host) sends, except with -R where the server (remote) does.
        snd, rcv = (remote, host) if test == "tcp_rev" else (host, remote)
        m["cpu_snd"], m["cpu_rcv"] = snd, rcv
    return m


def parse_iperf2(test, out):
    # iperf 2.1.8 -y C: timestamp,src,sport,dst,dport,id,interval,bytes,bits_per_second per stream.
    # With -P 2 it prints one row per stream and NO sum row (older iperf2 printed id -1 as the sum):
    # the total is the sum of the per-stream rows. The figure is the sender's (client side).
    rows = [r for r in csv.reader(io.StringIO(out)) if len(r) >= 9]
    if not rows:
        raise Failed(f"no iperf2 CSV rows: {tail(out)}")
    sums = [r for r in rows if r[5].strip() == "-1"]
    try:
        if sums:
            bps = float(sums[-1][8])
        else:
            last = {}
            for r in rows:
                last[r[5]] = float(r[8])   # the last row of each stream is its whole-test row
            bps = sum(last.values())
    except ValueError:
        raise Failed(f"bad iperf2 CSV: {tail(out)}") from None
    return {"gbps": bps / 1e9, "streams": len(sums) or len({r[5] for r in rows})}


def parse_nuttcp(test, out):
    # -fparse: megabytes=... real_seconds=... rate_Mbps=... tx_cpu=.. rx_cpu=.. retrans=.. rtt_ms=..
    kv = dict(re.findall(r"(\w+)=(-?[0-9.]+)", out))
    if "rate_Mbps" not in kv:
        raise Failed(f"no nuttcp rate_Mbps: {tail(out)}")
    m = {"gbps": float(kv["rate_Mbps"]) / 1000.0}
    for k, name in (("tx_cpu", "cpu_snd"), ("rx_cpu", "cpu_rcv"), ("retrans", "retransmits")):
        if k in kv:
            m[name] = float(kv[k])
    return m


NETPERF_COLS = {
    "Mean Latency": "mean_us",
    "50th Percentile Latency": "p50_us",
    "99th Percentile Latency": "p99_us",
    "Transaction Rate": "tps",
}


def parse_netperf(test, out):
    # With -o, netperf 2.7.0 prints a banner, a CSV header of long names, then one CSV row.
    # Round-trip times in microseconds; the mean is 1/transaction rate, the percentiles come from a
    # histogram (whole microseconds).
    lines = [x for x in out.splitlines() if x.strip()]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("Mean Latency") or "Latency Microseconds" in line:
            head = next(csv.reader([line]))
            vals = next(csv.reader([lines[i + 1]]))
            m = {}
            for h, v in zip(head, vals):
                for prefix, key in NETPERF_COLS.items():
                    if h.startswith(prefix):
                        try:
                            m[key] = float(v)
                        except ValueError:
                            raise Failed(f"netperf {h}: {v!r}") from None
            if "mean_us" not in m:
                raise Failed(f"no mean latency in netperf output: {tail(out, 2)}")
            if m.get("p50_us", 0) <= 0:   # -1 or 0: percentiles not collected
                m.pop("p50_us", None)
                m.pop("p99_us", None)
            return m
    raise Failed(f"no netperf result line: {tail(out)}")


def parse_sockperf(test, out):
    # sockperf prints HALF the round trip ("latency" = RTT/2) for the mean and every percentile.
    # Everything is doubled here, so the *_us fields are round trips like everyone else's.
    text = ANSI.sub("", out)
    avg = re.search(r"avg-lat(?:ency)?=\s*([0-9.]+)", text)
    pct = dict((p, float(v)) for p, v in re.findall(r"percentile\s+([0-9.]+)\s*=\s*([0-9.]+)", text))
    if not avg or "50.000" not in pct:
        raise Failed(f"no sockperf latency: {tail(out)}")
    m = {
        "half_mean_us": float(avg.group(1)),
        "half_p50_us": pct["50.000"],
        "mean_us": 2 * float(avg.group(1)),
        "p50_us": 2 * pct["50.000"],
    }
    if "99.000" in pct:
        m["half_p99_us"] = pct["99.000"]
        m["p99_us"] = 2 * pct["99.000"]
    obs = re.search(r"Total (\d+) observations", text)
    dur = re.search(r"\[Valid Duration\] RunTime=([0-9.]+)", text)
    if obs and dur and float(dur.group(1)) > 0:
        m["tps"] = int(obs.group(1)) / float(dur.group(1))
    return m


PARSERS = {
    "linerate": parse_linerate,
    "iperf3": parse_iperf3,
    "iperf2": parse_iperf2,
    "nuttcp": parse_nuttcp,
    "netperf": parse_netperf,
    "sockperf": parse_sockperf,
}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def parse_run(tool, test, out_path, err_path, rc, note=""):
    """Returns (metrics, None) or (None, reason)."""
    if note:
        return None, note
    rc = int(rc)
    out, err = read(out_path), read(err_path)
    if rc in (124, 137):
        return None, "timed out (killed by timeout)"
    try:
        m = PARSERS[tool](test, out)
    except Failed as e:
        if rc != 0:
            why = tail(err) or tail(out)
            if tool in ("linerate", "iperf3") and out.lstrip().startswith("{"):
                why = str(e)
            return None, f"exit {rc}: {why}" if why else f"exit {rc}"
        return None, str(e)
    return m, None


def describe(test, m):
    """One-line summary of one run's metrics, for the progress log."""
    parts = []
    if "gbps" in m:
        parts.append(f"{m['gbps']:.2f} Gb/s")
    if "mean_us" in m:
        parts.append(f"mean RTT {m['mean_us']:.1f} µs")
    if "p50_us" in m:
        parts.append(f"p50 RTT {m['p50_us']:.1f} µs")
    if "tps" in m:
        parts.append(f"{m['tps']:.0f} trans/s")
    if "loss_percent" in m:
        parts.append(f"loss {m['loss_percent']:.3g} %")
    if "jitter_us" in m:
        parts.append(f"jitter {m['jitter_us']:.1f} µs")
    if "cpu_snd" in m and "cpu_rcv" in m:
        parts.append(f"cpu snd {m['cpu_snd']:.0f} % rcv {m['cpu_rcv']:.0f} %")
    return ", ".join(parts)


# -------------------------------------------------------------------------------------------------
# Rates
# -------------------------------------------------------------------------------------------------
TC_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def tc_rate_bits(rate):
    """tc rate syntax: 10gbit = 10e9 bit/s; 10gbps = 10e9 BYTES/s (tc's meaning of bps)."""
    m = re.fullmatch(r"([0-9.]+)([kmgt]?)(bit|bps)", rate.strip().lower())
    if not m:
        raise ValueError(rate)
    bits = float(m.group(1)) * TC_UNITS[m.group(2)]
    return bits * 8 if m.group(3) == "bps" else bits


# -------------------------------------------------------------------------------------------------
# Report
# -------------------------------------------------------------------------------------------------
def load_manifest(path):
    runs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 10:
                continue
            p, test, tool, rnd, rc, t0, t1, out, err, cmd_or_note = cols[:10]
            note = "" if int(rc) >= 0 else cmd_or_note
            run = {"path": p, "test": test, "tool": tool, "round": int(rnd), "rc": int(rc),
                   "seconds": round(float(t1) - float(t0), 2) if t0 not in ("", "-") else 0,
                   "cmd": cmd_or_note if not note else None}
            if test == "-":
                run["error"] = note
            else:
                m, why = parse_run(tool, test, out, err, rc, note)
                if m is None:
                    run["error"] = why
                else:
                    run["metrics"] = m
            runs.append(run)
    return runs


def values(runs, path, test, tool, key):
    """(values, first failure reason, number of runs) of one metric."""
    sel = [r for r in runs if r["path"] == path and r["test"] == test and r["tool"] == tool]
    vals, why = [], None
    for r in sel:
        if "metrics" in r and key(r["metrics"]) is not None:
            vals.append(key(r["metrics"]))
        elif why is None:
            why = r.get("error") or "metric missing from output"
    return vals, why, len(sel)


def fmt(v, unit):
    if unit == "Gb/s":
        return f"{v:.2f}"
    if unit == "trans/s":
        return f"{v:.0f}"
    if unit == "%/(Gb/s)":
        return f"{v:.2f}"
    return f"{v:.1f}"


def cell(vals, why, n, unit, extra=""):
    if not vals:
        return f"failed: {why}" if why else "—"
    med = statistics.median(vals)
    s = f"{fmt(med, unit)} {unit} ({fmt(min(vals), unit)}–{fmt(max(vals), unit)})"
    if len(vals) < n:
        s += f" [{len(vals)}/{n} runs ok; {why}]"
    return s + extra


def key_of(name):
    return lambda m: m.get(name)


def cpu_per_gbps(m):
    if "cpu_snd" in m and "cpu_rcv" in m and m.get("gbps"):
        return (m["cpu_snd"] + m["cpu_rcv"]) / m["gbps"]
    return None


def median_or_none(vals):
    return statistics.median(vals) if vals else None


# A row: label, test, metric key, unit, peer tool, peer label, orientation, target (or None = info).
# orientation "up": ratio = linerate/peer (rates); "down": ratio = peer/linerate (latency, CPU).
# Either way ratio > 1 means linerate is better, and the target is a minimum ratio.
def row_specs(only, peers_only):
    specs = []
    if "tcp1" in only:
        specs += [("tcp1", "tcp1", "gbps", "Gb/s", "iperf3", "iperf3", "up", 1.10,
                   "linerate ≥ 1.10 × iperf3 (receiver Gb/s)"),
                  ("tcp1", "tcp1", "gbps", "Gb/s", "nuttcp", "nuttcp", "up", None, "")]
    if "tcp1_1m" in only:
        # Both with 1 MiB writes: the engines compared at equal sizes (linerate's default for
        # one stream is 1 MiB, iperf3's 128 KiB).
        specs += [("tcp1 -l 1M", "tcp1_1m", "gbps", "Gb/s", "iperf3", "iperf3 -l 1M", "up", None, "")]
    if "tcp2" in only:
        specs += [("tcp2", "tcp2", "gbps", "Gb/s", "best", "better of iperf3 -P 2 / iperf2 -P 2",
                   "up", 1.0, "linerate -P 2 ≥ 1.0 × the better of iperf3 -P 2 and iperf2 -P 2")]
    if "tcp_rev" in only:
        specs += [("tcp_rev", "tcp_rev", "gbps", "Gb/s", "iperf3", "iperf3 -R", "up", None, "")]
    if "lat" in only:
        specs += [("lat mean RTT", "lat", "mean_us", "µs", "netperf", "netperf TCP_RR", "down", 1.0,
                   "linerate mean RTT ≤ netperf TCP_RR mean RTT"),
                  ("lat p50 RTT", "lat", "p50_us", "µs", "sockperf", "sockperf RTT (2 × printed)",
                   "down", 1.0,
                   "linerate p50 RTT ≤ 2 × sockperf's printed p50 (= sockperf's p50 RTT)"),
                  ("lat p50 RTT", "lat", "p50_us", "µs", "netperf", "netperf TCP_RR", "down", None, ""),
                  ("lat p99 RTT", "lat", "p99_us", "µs", "sockperf", "sockperf RTT (2 × printed)",
                   "down", None, ""),
                  ("lat trans/s", "lat", "tps", "trans/s", "netperf", "netperf TCP_RR", "up", None, "")]
    if "udp" in only:
        specs += [("udp", "udp", "gbps", "Gb/s", "iperf3", "iperf3 -u", "up", None, "")]
    if "cpu" in only:
        specs += [("cpu per Gb/s", "tcp1", "cpu_per_gbps", "%/(Gb/s)", "iperf3", "iperf3", "down", 1.0,
                   "linerate (sender+receiver CPU %)/(Gb/s) ≤ iperf3's")]
    return specs


def udp_extra(runs, path, tool):
    loss, _, _ = values(runs, path, "udp", tool, key_of("loss_percent"))
    jit, _, _ = values(runs, path, "udp", tool, key_of("jitter_us"))
    if not loss:
        return ""
    return f"; loss {statistics.median(loss):.3g} %, jitter {statistics.median(jit):.1f} µs" if jit else ""


def cpu_extra(runs, path, tool):
    snd, _, _ = values(runs, path, "tcp1", tool, key_of("cpu_snd"))
    rcv, _, _ = values(runs, path, "tcp1", tool, key_of("cpu_rcv"))
    if not snd or not rcv:
        return ""
    return f"; snd {statistics.median(snd):.0f} % rcv {statistics.median(rcv):.0f} %"


def build_rows(runs, path, only, peers_only):
    rows = []
    for label, test, metric, unit, peer, peer_label, orient, target, target_text in row_specs(only, peers_only):
        key = cpu_per_gbps if metric == "cpu_per_gbps" else key_of(metric)
        if peer == "best":
            # tcp2: the better (higher median) of iperf3 -P 2 and iperf2 -P 2; both are shown.
            cands = []
            for tool, name in (("iperf3", "iperf3 -P 2"), ("iperf2", "iperf2 -P 2")):
                v, w, n = values(runs, path, test, tool, key)
                cands.append((median_or_none(v), tool, name, v, w, n))
            ok = [c for c in cands if c[0] is not None]
            best = max(ok, key=lambda c: c[0]) if ok else cands[0]
            other = [c for c in cands if c is not best][0]
            peer, peer_label, pv, pwhy, pn = best[1], best[2], best[3], best[4], best[5]
            peer_cell = cell(pv, pwhy, pn, unit, f" [{peer_label}; {other[2]}: "
                             + (f"{fmt(other[0], unit)}]" if other[0] is not None else f"failed: {other[4]}]"))
        else:
            pv, pwhy, pn = values(runs, path, test, peer, key)
            extra = udp_extra(runs, path, peer) if test == "udp" else ""
            extra = cpu_extra(runs, path, peer) if metric == "cpu_per_gbps" else extra
            peer_cell = cell(pv, pwhy, pn, unit, extra)
        if peers_only:
            lv, lwhy, ln, lr_cell = [], None, 0, "skipped (--peers-only)"
        else:
            lv, lwhy, ln = values(runs, path, test, "linerate", key)
            extra = udp_extra(runs, path, "linerate") if test == "udp" else ""
            extra = cpu_extra(runs, path, "linerate") if metric == "cpu_per_gbps" else extra
            lr_cell = cell(lv, lwhy, ln, unit, extra)
        lm, pm = median_or_none(lv), median_or_none(pv)
        ratio = None
        if lm and pm:
            ratio = lm / pm if orient == "up" else pm / lm
        if target is None:
            verdict = "info"
        elif peers_only:
            verdict = "— (peers only)"
        elif lm is None:
            verdict = "failed: linerate (reason in its column)"
        elif pm is None:
            verdict = f"failed: {peer} (reason in its column)"
        else:
            verdict = ("PASS" if ratio >= target else "FAIL") + f" (target ≥ {target:.2f})"
        rows.append({
            "test": label, "peer": peer_label, "metric": metric, "unit": unit,
            "linerate": lr_cell, "peer_value": peer_cell,
            "linerate_median": lm, "peer_median": pm, "ratio": ratio,
            "target_min_ratio": target, "target": target_text, "verdict": verdict,
        })
    return rows


def markdown(path, meta, rows):
    desc = {"lo": "loopback 127.0.0.1",
            "veth": f"veth lrb-a → lrb-b (10.77.0.1 → 10.77.0.2), MTU {meta.get('mtu')}"
                    + (f", tbf {meta['shape']} on the sending end" if meta.get("shape") else "")}[path]
    out = [f"### {path}: {desc}; {meta.get('rounds')} alternating rounds of {meta.get('time_s')} s", "",
           "| test | peer | linerate median (min–max) | peer median (min–max) "
           "| ratio (> 1 = linerate better: lr/peer for rates, peer/lr for latency & CPU) | verdict |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "—"
        cells = [r["test"], r["peer"], r["linerate"], r["peer_value"], ratio, r["verdict"]]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(out)


TARGET_NOTES = """Targets (ratio ≥ target, with every ratio oriented so that > 1 means linerate is better):
- tcp1: linerate ≥ 1.10 × iperf3, receiver Gb/s of one stream.
- tcp2: linerate -P 2 ≥ 1.0 × the better of iperf3 -P 2 and iperf2 -P 2 (iperf2's figure is the sender's).
- lat mean RTT: linerate's mean round trip ≤ netperf TCP_RR's mean round trip.
- lat p50 RTT: linerate's p50 round trip ≤ 2 × the p50 sockperf prints (sockperf prints half the
  round trip; all sockperf figures in this table are already doubled to round trips).
- cpu per Gb/s: linerate's (sender % + receiver %) / Gb/s ≤ iperf3's, from the tcp1 runs
  (100 % = one core)."""


def report(manifest, meta_path, out_json, only):
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    only = set(only.split(","))
    runs = load_manifest(manifest)
    peers_only = bool(meta.get("peers_only"))
    summary = {}
    paths = [p for p in meta.get("paths", "lo").split() if any(r["path"] == p for r in runs)]
    text = []
    for p in paths:
        setup_fail = [r for r in runs if r["path"] == p and r["test"] == "-"]
        if setup_fail:
            text.append(f"### {p}\n\nfailed: {setup_fail[0].get('error')}")
            summary[p] = {"error": setup_fail[0].get("error")}
            continue
        rows = build_rows(runs, p, only, peers_only)
        summary[p] = rows
        text.append(markdown(p, meta, rows))
    text.append(TARGET_NOTES)
    print("\n\n".join(text))
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "summary": summary, "runs": runs}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"\nraw per-run numbers: {out_json}")


def main(argv):
    if len(argv) >= 2 and argv[1] == "one":
        tool, test, out, err, rc = argv[2:7]
        note = argv[7] if len(argv) > 7 else ""
        m, why = parse_run(tool, test, out, err, rc, note)
        print(f"failed: {why}" if m is None else describe(test, m))
        return 0
    if len(argv) == 6 and argv[1] == "report":
        report(*argv[2:6])
        return 0
    if len(argv) == 3 and argv[1] == "udp-rate":
        print(f"{tc_rate_bits(argv[2]) * 0.9 / 1e6:.0f}M")
        return 0
    if len(argv) == 4 and argv[1] == "tbf-burst":
        rate_bytes = tc_rate_bits(argv[2]) / 8
        print(max(int(rate_bytes * 0.004), 2 * (int(argv[3]) + 14), 3200))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
