#!/usr/bin/python3
"""ctflush.py: empty the conntrack table of the current network namespace, IPv4 and
IPv6 (what `conntrack -F` does, without needing conntrack-tools): one ctnetlink
IPCTNL_MSG_CT_DELETE request with no tuple per family. Exit 1 with a message when
the kernel refuses.

The benchmark runs it in the gateway before each load on SYNPROXY: the lab's
nf_conntrack_max (262144) cannot be raised from inside a namespace, and TIME_WAIT
entries of one load (120 s) would otherwise fill the table for the next.
"""
import errno
import socket
import struct
import sys

NETLINK_NETFILTER = 12
NFNL_SUBSYS_CTNETLINK = 1
IPCTNL_MSG_CT_DELETE = 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2


def main():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    s.bind((0, 0))
    s.settimeout(5)
    for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), 1):
        msg = struct.pack("=LHHLL", 20, NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_DELETE,
                          NLM_F_REQUEST | NLM_F_ACK, seq, 0)
        msg += struct.pack("=BBH", family, 0, 0)  # nfgenmsg: family, version, res_id
        s.send(msg)
        resp = s.recv(65536)
        _, typ, _, _, _ = struct.unpack_from("=LHHLL", resp)
        if typ == NLMSG_ERROR:
            err = struct.unpack_from("=i", resp, 16)[0]
            if err:
                sys.exit("ctflush: family %d: %s" % (family, errno.errorcode.get(-err, -err)))
    s.close()


if __name__ == "__main__":
    main()
