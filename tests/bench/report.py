#!/usr/bin/python3
"""report.py DIR: turn DIR/results.tsv (setup, case, key, value) and DIR/meta.tsv
(written by tests/bench/run.sh) into the Markdown tables of results.md, on stdout.

Ratios are of tcpctd (tcpctd2 = --queues 2, tcpctd1 = --queues 1, tcpctd-shield =
--queues 1 --shield yes) to the direct setup and to kernel SYNPROXY; "-" where a side
is missing or zero.
"""
import collections
import sys

NAMES = {
    "direct": "direct",
    "synproxy": "SYNPROXY",
    "tcpctd2": "tcpctd q2",
    "tcpctd1": "tcpctd q1",
    "tcpctd-shield": "tcpctd q1 shield",
    "tcpctd-kernel": "tcpctd q1 kernel flows",
}
ORDER = ["direct", "synproxy", "tcpctd2", "tcpctd1", "tcpctd-shield", "tcpctd-kernel"]
# The SYN floods and the forged-ACK floods, in the order of their tables: the plain
# ones, then those with IPv4 options and those behind an IPv6 Destination Options
# header (issue 31).
GENERATORS = [("synflood", "trafgen"), ("synflood-ipopt", "trafgen, IPv4 options"),
              ("synflood-dstopt", "trafgen, IPv6 Destination Options"), ("flood", "loadgen")]
ACKFLOODS = [("ackflood", "plain"), ("ackflood-ipopt", "IPv4 options"),
             ("ackflood-dstopt", "IPv6 Destination Options")]


def load(path):
    r = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            s, c, k, v = parts
            try:
                v = float(v)
            except ValueError:
                pass
            r[(s, c)][k] = v
    return r


def meta(path):
    m = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                m[k] = v
    except OSError:
        pass
    return m


def ratio(a, b):
    if a is None or b is None or not b:
        return "-"
    if a / b > 100:
        return "> 100"
    return "%.2f" % (a / b)


def fmt_int(v):
    return "-" if v is None else "{:,}".format(int(round(v)))


def mark(r, s, c):
    v = r.get((s, c), {})
    return (" †" if v.get("concurrent") else "") + (" ‡" if v.get("foreign_cpu_s", 0) >= 0.5 else "")


def pct(a, b):
    return "%.1f %%" % (100.0 * a / b) if b else "-"


def gen_cost(r, c):
    """The generator's own machine CPU per packet (s), from its run alone into
    the blackhole: busy CPU less what other processes used, over what it sent."""
    v = r.get(("blackhole", c), {})
    if not v.get("sent"):
        return None
    return max(0.0, v.get("cpu_busy_s", 0) - v.get("foreign_cpu_s", 0)) / v["sent"]


def net_cpu(r, s, c):
    """The machine's busy CPU over a flood less other processes' and less the
    generator's own (its cost per packet x what it sent); None without a
    calibration."""
    v = r.get((s, c), {})
    g = gen_cost(r, c)
    if g is None or "cpu_busy_s" not in v:
        return None
    return v["cpu_busy_s"] - v.get("foreign_cpu_s", 0) - g * v.get("sent", 0)


def flood_queued(r, s, c):
    """(packets, % of those sent, the client's packets) of a flood that crossed
    tcpctd's queues: what the queues were handed over the load less what the
    legitimate client's connections put there (its packets queued per connection
    alone, in the legit case, times its connections under the flood); None where
    nothing was counted."""
    v = r.get((s, c), {})
    if "queued" not in v:
        return None
    own = r.get((s, "legit"), {})
    per = own.get("queued", 0) / own["legit_sent"] if own.get("legit_sent") else 0
    own = per * v.get("legit_sent", 0)
    n = max(0.0, v["queued"] - own)
    return n, 100.0 * n / v["sent"] if v.get("sent") else 0.0, own


def queued_cell(r, s, c):
    q = flood_queued(r, s, c)
    if q is None:
        return "-"
    v = r[(s, c)]
    return "%.2f %% (%s queued, the client's %s)" % (q[1], fmt_int(v["queued"]), fmt_int(q[2]))


def rss(v):
    if "rss_before_kib" not in v:
        return "-"
    return "%s → %s" % (fmt_int(v["rss_before_kib"]), fmt_int(v.get("rss_after_kib")))


def floods(r, m, setups):
    """The full-speed floods (issue 22): SYNs from trafgen and loadgen, forged ACKs
    from trafgen; trafgen's also with IPv4 options and over IPv6 behind a Destination
    Options header (issue 31)."""
    out = []
    have = [(c, g) for c, g in GENERATORS if any((s, c) in r for s in setups)]
    acks = [(c, g) for c, g in ACKFLOODS if any((s, c) in r for s in setups)]
    if not have and not acks:
        return out
    secs = m.get("flood_secs", "?")
    out.append("## Floods at full speed (%s s), a client making %s conn/s\n" % (secs, m.get("legit_qps", "?")))
    out.append("trafgen %s: one process (`-P 1`, pinned to CPU 0) writing a PF_PACKET TX ring, "
               "no rate; random sources and ports of 198.18.0.0/15 (of 2001:db8:f::/48 to "
               "2001:db8:b::2 for the IPv6 floods, the client staying IPv4); loadgen -m syn: "
               "its raw socket, as fast as it goes. Each generator ran alone first into gw's "
               "blackhole route (no client):\n" % m.get("trafgen", "?"))
    for c, g in [(c, "trafgen SYNs%s" % g[7:]) for c, g in GENERATORS if c != "flood"] + \
            [(c, "trafgen forged ACKs%s" % ("" if c == "ackflood" else ", " + g)) for c, g in ACKFLOODS] + \
            [("flood", "loadgen SYNs")]:
        v = r.get(("blackhole", c))
        if v and v.get("sent"):
            out.append("- %s: %s packets/s, %.2f µs of machine CPU per packet%s" % (
                g, fmt_int(v["sent"] / (v.get("secs") or 1)), 1e6 * gen_cost(r, c), mark(r, "blackhole", c)))
    out.append("")
    out.append("µs per SYN answered: the machine's busy CPU over the load (/proc/stat, both "
               "cores) less what other processes used (‡ where that was 0.5 s or more) and "
               "less the generator's own cost per packet × the packets it sent, divided by "
               "the SYN-ACKs that came back. It includes the legitimate client's connections. "
               "Flood queued (tcpctd): the packets its queues were handed over the load less "
               "the client's own (its packets per connection alone, times its connections), "
               "as a share of the flood sent.\n")
    base = [s for s in setups if (s, "legit") in r]
    def alone(s):
        v = r[(s, "legit")]
        q = ""
        if "queued" in v and v.get("legit_sent"):
            q = ", %.1f packets queued per connection" % (v["queued"] / v["legit_sent"])
        return "%s %s, %.1f CPU s busy%s%s" % (NAMES[s], pct(v.get("legit_replies", 0), v.get("legit_sent", 0)),
                                              v.get("cpu_busy_s", 0), q, mark(r, s, "legit"))
    if base:
        out.append("The same client alone, without a flood: %s.\n" % "; ".join(alone(s) for s in base))
    rows = []
    for c, g in have:
        ref = r.get(("synproxy", c), {})
        ref_rate = ref.get("synacks", 0) / (ref.get("secs") or 1) if ref else None
        for s in setups:
            v = r.get((s, c))
            if not v:
                continue
            t = v.get("secs") or 1
            rate = v.get("synacks", 0) / t
            cpu = net_cpu(r, s, c)
            rows.append([
                g, NAMES[s] + mark(r, s, c), fmt_int(v.get("sent", 0) / t), fmt_int(rate),
                pct(v.get("synacks", 0), v.get("sent", 0)),
                ratio(rate, ref_rate) if ref_rate else "-",
                "%s (%s of %s)" % (pct(v.get("legit_replies", 0), v.get("legit_sent", 0)),
                                   fmt_int(v.get("legit_replies")), fmt_int(v.get("legit_sent"))),
                fmt_int(v.get("backend_syn")), queued_cell(r, s, c),
                "%.1f / %.1f" % (v.get("cpu_busy_s", 0), v.get("foreign_cpu_s", 0)),
                "%.2f" % (1e6 * cpu / v["synacks"]) if cpu is not None and v.get("synacks") else "-",
                rss(v)])
    if rows:
        out.append(table(["generator", "setup", "SYN/s sent", "SYN-ACK/s back", "SYNs answered",
                          "SYN-ACK/s / SYNPROXY's", "legit answered", "flood SYNs at the backend",
                          "flood queued", "CPU s busy / others'", "µs per SYN answered", "tcpctd RSS KiB before → after"],
                         rows))
        out.append("")
    rows = []
    for c, g, s in [(c, g, s) for c, g in acks for s in setups]:
        v = r.get((s, c))
        if not v:
            continue
        t = v.get("secs") or 1
        cpu = net_cpu(r, s, c)
        failed = sum(v.get("ctr:cookie_" + k, 0) for k in ("bad", "expired", "no_key"))
        if s.startswith("tcpctd"):
            gate = "%s queued; cookie failed %s" % (fmt_int(v.get("queued")), fmt_int(failed))
        elif s == "synproxy":
            gate = "SYNPROXY rule %s; INVALID dropped %s" % (fmt_int(v.get("synproxy_hits")),
                                                               fmt_int(v.get("invalid_dropped")))
        else:
            gate = "-"
        rows.append([
            g, NAMES[s] + mark(r, s, c), fmt_int(v.get("sent", 0) / t), gate, queued_cell(r, s, c),
            "%s (%s)" % (fmt_int(v.get("backend_other")), pct(v.get("backend_other", 0), v.get("sent", 0))),
            "%s (%s of %s)" % (pct(v.get("legit_replies", 0), v.get("legit_sent", 0)),
                               fmt_int(v.get("legit_replies")), fmt_int(v.get("legit_sent"))),
            "%.1f / %.1f" % (v.get("cpu_busy_s", 0), v.get("foreign_cpu_s", 0)),
            "%.2f" % (1e6 * cpu / v["sent"]) if cpu is not None and v.get("sent") else "-",
            rss(v)])
    if rows:
        out.append("Forged ACKs (trafgen: random sources, ports, sequence and acknowledgment "
                   "numbers, timestamps). tcpctd: packets its queues were handed (the client's "
                   "included) and the cookie checks that failed (bad, expired or no key); "
                   "SYNPROXY: packets of its rule and of the INVALID drop; the backend: forged "
                   "packets that reached it (flood prefix, not a SYN); flood queued as for the "
                   "SYNs. µs per forged ACK as per SYN above, over the ACKs sent.\n")
        out.append(table(["flood", "setup", "ACK/s sent", "at the gateway", "flood queued",
                          "at the backend", "legit answered",
                          "CPU s busy / others'", "µs per forged ACK", "tcpctd RSS KiB before → after"],
                         rows))
        out.append("")
    return out


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def main():
    d = sys.argv[1]
    r = load(d + "/results.tsv")
    m = meta(d + "/meta.tsv")
    setups = [s for s in ORDER if any(k[0] == s and k[1] != "rss" for k in r)]
    tcts = [s for s in setups if s.startswith("tcpctd")]
    refs = [s for s in ("direct", "synproxy") if s in setups]
    out = []
    out.append("# tcpctd benchmark results\n")
    out.append(
        "%s, Linux %s, %s CPUs, network namespaces and veth; commit %s, binary %s; "
        "%s s. Load: %s; nsd %s (tcp-count %s), iperf3 %s, %s."
        % (m.get("date", "?"), m.get("kernel", "?"), m.get("cpus", "?"),
           m.get("commit", "?"), m.get("binary", "?"), m.get("elapsed", "?"), m.get("generator", "?"),
           m.get("nsd", "?"), m.get("nsd_tcp_count", "?"), m.get("iperf3", "?"),
           m.get("iptables", "?")))
    out.append("")

    def ratio_heads():
        return ["%s / %s" % (NAMES[t], NAMES[x]) for t in tcts for x in refs]

    # 1. rate ladder
    rates = []
    for s in setups:
        for k in r.get((s, "rate"), {}):
            if k.startswith("sent@"):
                q = int(k[5:])
                if q not in rates:
                    rates.append(q)
    rates.sort()
    if rates:
        out.append("## DNS over TCP, one connection per query (`loadgen`, a kernel TCP socket "
                   "each, from a fresh /24 per rate, %s s per rate)\n" % m.get("rate_secs", "?"))
        out.append("answered/s (answered as % of the offered rate x duration). loadgen opens no "
                   "more than its open-file limit at once, so it does not always manage the "
                   "offered rate: what it sent is in the next table.\n")
        rows, best, peak, detail = [], {}, {}, []
        for q in rates:
            row, ans, drow = ["%s" % fmt_int(q)], {}, ["%s" % fmt_int(q)]
            for s in setups:
                v = r.get((s, "rate"), {})
                sent, repl, secs = v.get("sent@%d" % q), v.get("replies@%d" % q), v.get("secs@%d" % q)
                if sent is None:
                    row.append("-")
                    drow.append("-")
                    continue
                ans[s] = repl / secs
                pct = 100.0 * repl / (q * secs)
                row.append("%s (%.1f %%)%s" % (fmt_int(ans[s]), pct, mark(r, s, "rate@%d" % q)))
                if pct >= 99.0:
                    best[s] = max(best.get(s, 0), q)
                peak[s] = max(peak.get(s, 0), ans[s])
                w = r.get((s, "rate@%d" % q), {})
                cell = "%s sent/s, %.1f %% of sent answered; CPU %s %%" % (
                    fmt_int(sent / secs), 100.0 * repl / sent if sent else 0, fmt_int(w.get("cpu_busy_pct")))
                if "tcpctd_user_s" in w:
                    cell += "; tcpctd %.2f+%.2f s" % (w["tcpctd_user_s"], w["tcpctd_sys_s"])
                if w.get("cpu_busy_s") and repl:
                    # The machine's CPU per answer: what the whole setup (client,
                    # gateway, backend) spent on one connection.
                    cell += "; machine %s µs/answer" % fmt_int(1e6 * w["cpu_busy_s"] / repl)
                drow.append(cell)
            row += [ratio(ans.get(t), ans.get(x)) for t in tcts for x in refs]
            rows.append(row)
            detail.append(drow)
        rows.append(["**max rate with >= 99 % of offered answered**"] +
                    [fmt_int(best.get(s, 0)) if (s, "rate") in r else "-" for s in setups] +
                    [ratio(best.get(t), best.get(x)) for t in tcts for x in refs])
        rows.append(["**peak answered/s**"] +
                     [fmt_int(peak.get(s)) for s in setups] +
                     [ratio(peak.get(t), peak.get(x)) for t in tcts for x in refs])
        out.append(table(["offered conn/s"] + [NAMES[s] for s in setups] + ratio_heads(), rows))
        out.append("")
        out.append("What loadgen sent, the share of that answered, the whole machine's CPU busy "
                   "(both cores, all namespaces), tcpctd's own CPU time (user+system s over "
                   "the %s s step), and the machine's busy CPU time per answer (client, "
                   "gateway and backend together):\n" % m.get("rate_secs", "?"))
        out.append(table(["offered conn/s"] + [NAMES[s] for s in setups], detail))
        out.append("")

    # 2. reuse
    if any((s, "reuse") in r for s in setups):
        out.append("## Port reuse: 80,000 queries from one source address in 8 s "
                   "(`loadgen -t 8 -r 10000`, ports 1024-65535, tcp_tw_reuse)\n")
        pct = {}
        row = ["% answered"]
        for s in setups:
            v = r.get((s, "reuse"), {})
            if "sent" in v and v["sent"]:
                pct[s] = 100.0 * v["replies"] / v["sent"]
                row.append("%.2f %% (%s of %s)%s" % (pct[s], fmt_int(v["replies"]), fmt_int(v["sent"]),
                                                     mark(r, s, "reuse")))
            else:
                row.append("-")
        row += [ratio(pct.get(t), pct.get(x)) for t in tcts for x in refs]
        out.append(table([""] + [NAMES[s] for s in setups] + ratio_heads(), [row]))
        out.append("")

    # 3. flood
    if any((s, "flood") in r for s in setups):
        out.append("## SYN flood (`loadgen -m syn -l 198.18.0.0/15`, raw socket, random "
                   "sources) while a client makes 2,000 conn/s (`loadgen`)\n")
        rows = []
        synack, legit = {}, {}
        for s in setups:
            v = r.get((s, "flood"), {})
            if not v:
                continue
            secs = v.get("secs", 1) or 1
            synack[s] = v.get("synacks", 0) / secs
            legit[s] = 100.0 * v["legit_replies"] / v["legit_sent"] if v.get("legit_sent") else 0.0
            rows.append([NAMES[s] + mark(r, s, "flood"), fmt_int(v.get("syns", 0) / secs), fmt_int(synack[s]),
                         "%.1f %%" % (100.0 * v.get("synacks", 0) / v["syns"] if v.get("syns") else 0),
                         "%.2f %% (%s of %s)" % (legit[s], fmt_int(v.get("legit_replies")), fmt_int(v.get("legit_sent"))),
                         "%s %%" % fmt_int(v.get("cpu_busy_pct")),
                         "%.2f+%.2f" % (v["tcpctd_user_s"], v["tcpctd_sys_s"]) if "tcpctd_user_s" in v else "-"])
        out.append(table(["setup", "flood SYNs/s sent", "SYN-ACKs/s returned", "SYNs answered",
                          "legit answered", "CPU busy", "tcpctd CPU s (user+sys)"], rows))
        out.append("")
        rr = []
        for t in tcts:
            for x in refs:
                if t in synack and x in synack:
                    rr.append("%s / %s: SYN-ACKs/s %s, legit %s" % (
                        NAMES[t], NAMES[x], ratio(synack[t], synack[x]), ratio(legit[t], legit[x])))
        if rr:
            out.append("Ratios: " + "; ".join(rr) + ".\n")

    out += floods(r, m, setups)

    # 4. bulk
    if any((s, "bulk") in r for s in setups):
        out.append("## Bulk: one connection, iperf3 10 s, client -> backend port 5201\n")
        g = {}
        row, row2, row3 = ["Gbit/s"], ["retransmits"], ["CPU busy; tcpctd CPU s"]
        for s in setups:
            v = r.get((s, "bulk"), {})
            g[s] = v.get("gbps")
            row.append("-" if g[s] is None else "%.2f%s" % (g[s], mark(r, s, "bulk")))
            row2.append(fmt_int(v.get("retransmits")))
            c = "%s %%" % fmt_int(v.get("cpu_busy_pct"))
            if "tcpctd_user_s" in v:
                c += "; %.2f+%.2f" % (v["tcpctd_user_s"], v["tcpctd_sys_s"])
            row3.append(c)
        row += [ratio(g.get(t), g.get(x)) for t in tcts for x in refs]
        row2 += ["" for t in tcts for x in refs]
        row3 += ["" for t in tcts for x in refs]
        out.append(table([""] + [NAMES[s] for s in setups] + ratio_heads(), [row, row2, row3]))
        for s in setups:
            err = r.get((s, "bulk"), {}).get("error")
            if err:
                out.append("\n%s: the test failed (%s); see raw/%s-bulk.json and "
                           "raw/iperf3-%s.log." % (NAMES[s], err, s, s))
        out.append("")

    # 5. tcpctd resources
    rss = [(t, r.get((t, "rss"), {})) for t in tcts if (t, "rss") in r]
    cost = r.get(("callgrind", "cost"), {})
    if rss or cost:
        out.append("## tcpctd's own cost\n")
        rows = []
        for t, v in rss:
            rows.append(["peak RSS (VmHWM) of %s at the end of its setup" % NAMES[t],
                         "%s KiB" % fmt_int(v.get("VmHWM_kib")),
                         "VmRSS %s KiB once started, %s KiB at the end"
                         % (fmt_int(v.get("VmRSS_start_kib")), fmt_int(v.get("VmRSS_kib")))])
        if cost.get("conn_verified"):
            n = cost["conn_verified"]
            rows.append(["instructions of worker_packet (inclusive) per DNS connection",
                         fmt_int(cost.get("conn_ir", 0) / n),
                         "%s connections answered of %s, %s verified, %.1f packets each; "
                         "the worker loop (worker_run) %s per connection"
                         % (fmt_int(cost.get("conn_replies")), fmt_int(cost.get("conn_sent")),
                            fmt_int(n), cost.get("conn_packets", 0) / n,
                            fmt_int(cost.get("conn_ir_run", 0) / n))])
        if cost.get("syn_answered"):
            n = cost["syn_answered"]
            rows.append(["instructions of worker_packet (inclusive) per SYN answered",
                         fmt_int(cost.get("syn_ir", 0) / n),
                         "%s SYN-ACKs of %s SYNs sent (the attacker saw %s); worker_run %s per SYN"
                         % (fmt_int(n), fmt_int(cost.get("syn_sent")), fmt_int(cost.get("syn_synacks")),
                            fmt_int(cost.get("syn_ir_run", 0) / n))])
        out.append(table(["measure", "value", "note"], rows))
        out.append("")

    # 6. losses
    rows = []
    for s in setups:
        cases = ["rate@%d" % q for q in rates] + ["legit", "flood"] + \
            [c for p in zip(GENERATORS[:3], ACKFLOODS) for c, _ in p] + ["bulk", "reuse"]
        for c in cases:
            if (s, c) not in r:
                continue
            v = r[(s, c)]
            parts = ["%s %s" % (k[4:], fmt_int(x)) for k, x in sorted(v.items()) if k.startswith("ctr:")]
            if s == "synproxy" and "conntrack_count" in v:
                parts.append("conntrack INVALID dropped %s" % fmt_int(v.get("invalid_dropped")))
                parts.append("conntrack entries after %s" % fmt_int(v["conntrack_count"]))
            if v.get("backend_listen_drops"):
                parts.append("backend ListenDrops %s" % fmt_int(v["backend_listen_drops"]))
            if v.get("backend_estab_after"):
                parts.append("left open at nsd %s" % fmt_int(v["backend_estab_after"]))
            rows.append([NAMES[s], c.replace("@", " "), ", ".join(parts) or "none"])
    if rows:
        out.append("## Drops during each load\n")
        out.append("tcpctd: its counters that grew (kernel_queueN_dropped_full: packets the kernel "
                   "dropped because queue N was full; flow_full: verified handshakes refused, flow "
                   "table full; backend_syn_retrans: SYNs to the backend sent again after 1 s; "
                   "cookie_bad: ACKs with no flow and no valid cookie; stray_*: segments with no "
                   "flow). SYNPROXY: packets of the conntrack INVALID DROP rule, conntrack entries "
                   "left (the table is emptied before each load; its size is 262,144). All: the "
                   "backend kernel's TcpExt ListenDrops (nsd's accept queue full), and the "
                   "connections left open at nsd when the load ended (each holds one of nsd's "
                   "tcp-count slots until its tcp-timeout, 120 s).\n")
        out.append(table(["setup", "load", "drops"], rows))
        out.append("")
    foreign = sum(v.get("foreign_cpu_s", 0) for v in r.values() if v.get("foreign_cpu_s", 0) >= 0.5)
    if foreign:
        out.append("**Other processes:** processes of this machine that were not this run's "
                   "(a build, tests, another lab) used %.1f CPU seconds during the loads marked ‡ "
                   "(0.5 s or more each).\n" % foreign)
    busy = sorted({x for v in r.values() for x in str(v.get("concurrent", "")).split()})
    if busy:
        cpu = sum(v.get("concurrent_cpu_s", 0) for v in r.values())
        out.append("**Not alone:** other lab runs (%s) used %.0f CPU seconds (their processes "
                   "only, not their softirq work) during the loads marked † above; those "
                   "numbers are low by an unknown amount.\n" % (", ".join(busy), cpu))
    print("\n".join(out))


if __name__ == "__main__":
    main()
