#include "rules.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_acct.h>

#define CHAIN_IN	"TCPCTD"
#define CHAIN_OUT	"TCPCTD_OUT"
#define MAX_ARGS	32

extern char **environ;

struct cmd {
	const char *argv[MAX_ARGS];
	int argc;
	char bufs[4][80];	/* storage for formatted arguments */
	char ports[RULES_SHARE_RANGES * 12];	/* a worker's port share */
	int nbufs;
};

static void
cmd_init(struct cmd *c, const char *prog)
{
	c->argc = 0;
	c->nbufs = 0;
	c->argv[c->argc++] = prog;
	c->argv[c->argc++] = "-w";	/* wait for the xtables lock */
	c->argv[c->argc++] = "-t";
	c->argv[c->argc++] = "raw";
}

static void
cmd_add(struct cmd *c, const char *arg)
{
	if (c->argc < MAX_ARGS - 1)
		c->argv[c->argc++] = arg;
	c->argv[c->argc] = NULL;
}

static const char *
cmd_fmt(struct cmd *c, const char *fmt, unsigned a, unsigned b)
{
	char *buf = c->bufs[c->nbufs++ & 3];

	snprintf(buf, sizeof(c->bufs[0]), fmt, a, b);
	return buf;
}

/* The exit status of child pid; 127 if it cannot be had, 128 for a
 * signal. */
static int
wait_exit(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* An argument as a shell and iptables-restore both read it back: in
 * double quotes when it holds anything but letters, digits and _-./:,=!
 * (u32's "&"); no argument made here holds a quote, $, ` or backslash. */
static void
print_arg(FILE *out, const char *sep, const char *arg)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789_-./:,=!";
	const char *q = *arg && !arg[strspn(arg, plain)] ? "" : "\"";

	fprintf(out, "%s%s%s%s", sep, q, arg, q);
}

/* Runs the command with its output discarded; returns its exit status. */
static int
cmd_run(struct cmd *c, FILE *print, bool quiet)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	c->argv[c->argc] = NULL;
	if (print) {
		for (int i = 0; i < c->argc; i++)
			print_arg(print, i ? " " : "", c->argv[i]);
		fputc('\n', print);
		return 0;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY,
						 0);
	if (posix_spawnp(&pid, c->argv[0], &fa, NULL, (char **)c->argv,
			 environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return 127;
	}
	posix_spawn_file_actions_destroy(&fa);
	return wait_exit(pid);
}

static int
simple(const char *prog, FILE *print, bool quiet, const char *a,
       const char *b, const char *c3, const char *d)
{
	struct cmd c;

	cmd_init(&c, prog);
	cmd_add(&c, a);
	if (b)
		cmd_add(&c, b);
	if (c3)
		cmd_add(&c, c3);
	if (d)
		cmd_add(&c, d);
	return cmd_run(&c, print, quiet);
}

/*
 * The flow queues come first, then the SYN queues (gateway/worker.h).  Both
 * are picked by the client's port: worker i takes its share of the port
 * space, of a service's SYNs and of its flows both ways.  A flow is then met
 * by the worker that saw its SYN (a Fast Open flow is made there), and many
 * clients behind one address (a resolver, a NAT) spread over every worker,
 * which a hash of the addresses would not do.  The share is interleaved:
 * the space is cut into RULES_SHARE_RANGES blocks per worker and block b is
 * worker b mod queues', so that an operating system's ephemeral range
 * (Linux 32768-60999, Windows 49152-65535) spreads over all of them, as
 * halves of the space would not.
 */
/* Block b of the client port space cut for queues workers: ports lo..hi. */
static void
port_block(unsigned queues, unsigned b, unsigned *lo, unsigned *hi)
{
	unsigned blocks = queues * RULES_SHARE_RANGES;
	unsigned size = 65536 / blocks;

	*lo = b * size;
	*hi = b + 1 == blocks ? 65535 : (b + 1) * size - 1;
}

size_t
rules_port_share(unsigned queues, unsigned worker, char *buf, size_t len)
{
	size_t n = 0;
	unsigned k;

	for (k = 0; k < RULES_SHARE_RANGES; k++) {
		unsigned lo, hi;
		int w;

		port_block(queues, worker + k * queues, &lo, &hi);
		w = snprintf(buf + n, len - n, "%s%u:%u", k ? "," : "", lo, hi);
		if (w < 0 || (size_t)w >= len - n)
			return len - 1;	/* cut short */
		n += (size_t)w;
	}
	return n;
}

static void
add_port_share(struct cmd *c, const struct config *cfg, unsigned i,
	       const char *opt)
{
	if (cfg->queues == 1)
		return;
	rules_port_share(cfg->queues, i, c->ports, sizeof(c->ports));
	cmd_add(c, "-m");
	cmd_add(c, "multiport");
	cmd_add(c, opt);
	cmd_add(c, c->ports);
}

static void
add_queue(struct cmd *c, const struct config *cfg, unsigned num)
{
	cmd_add(c, "-j");
	cmd_add(c, "NFQUEUE");
	cmd_add(c, "--queue-num");
	cmd_add(c, cmd_fmt(c, "%u", num, 0));
	if (cfg->bypass)
		cmd_add(c, "--queue-bypass");
}

enum direction { TO_BACKEND, FROM_BACKEND };

/* -A chain -p tcp, and the service's end of the direction; from the
 * backend, but to the gateway's own probes (local: they are not). */
static void
rule_begin(struct cmd *c, const char *prog, const char *chain,
	   const char *addr, const char *port, enum direction dir, bool local)
{
	cmd_init(c, prog);
	cmd_add(c, "-A");
	cmd_add(c, chain);
	cmd_add(c, "-p");
	cmd_add(c, "tcp");
	cmd_add(c, dir == TO_BACKEND ? "-d" : "-s");
	cmd_add(c, addr);
	cmd_add(c, dir == TO_BACKEND ? "--dport" : "--sport");
	cmd_add(c, port);
	if (dir == FROM_BACKEND && !local) {
		/* Not the gateway's own probe connections. */
		cmd_add(c, "-m");
		cmd_add(c, "addrtype");
		cmd_add(c, "!");
		cmd_add(c, "--dst-type");
		cmd_add(c, "LOCAL");
	}
}

/* -A TCPCTD -p tcp, and the service's end of the direction. */
static void
rule_start(struct cmd *c, const char *prog, const char *addr,
	   const char *port, enum direction dir)
{
	rule_begin(c, prog, CHAIN_IN, addr, port, dir, false);
}

/* -s or -d PREFIX, formatted into one of c's buffers. */
static void
add_prefix(struct cmd *c, const char *opt, const struct prefix *p)
{
	char *buf = c->bufs[c->nbufs++ & 3];

	prefix_format(p, buf, sizeof(c->bufs[0]));
	cmd_add(c, opt);
	cmd_add(c, buf);
}

/*
 * The operator's lists, ahead of the service's other rules: a denied
 * source is dropped before any queue; an allowed one leaves the chain both
 * ways (RETURN), so the kernel forwards it, conntrack and all, as if
 * tcpctd were not there.  Deny comes first and wins.
 */
static int
list_rules(const char *prog, const struct config *cfg, const char *addr,
	   const char *port, uint8_t family, FILE *print)
{
	int failed = 0;
	struct cmd c;
	unsigned i;

	for (i = 0; i < cfg->ndeny; i++) {
		if (cfg->deny[i].family != family)
			continue;
		rule_start(&c, prog, addr, port, TO_BACKEND);
		add_prefix(&c, "-s", &cfg->deny[i]);
		cmd_add(&c, "-j");
		cmd_add(&c, "DROP");
		failed += cmd_run(&c, print, false) != 0;
	}
	for (i = 0; i < cfg->nallow; i++) {
		if (cfg->allow[i].family != family)
			continue;
		rule_start(&c, prog, addr, port, TO_BACKEND);
		add_prefix(&c, "-s", &cfg->allow[i]);
		cmd_add(&c, "-j");
		cmd_add(&c, "RETURN");
		failed += cmd_run(&c, print, false) != 0;
		rule_start(&c, prog, addr, port, FROM_BACKEND);
		add_prefix(&c, "-d", &cfg->allow[i]);
		cmd_add(&c, "-j");
		cmd_add(&c, "RETURN");
		failed += cmd_run(&c, print, false) != 0;
	}
	return failed;
}

static const char *
spoofed_acct(uint8_t family)
{
	return family == AF_INET ? RULES_SPOOFED_ACCT4 : RULES_SPOOFED_ACCT6;
}

/* Not from where the route back to its source leads: a packet with the
 * backend's address from the clients' side (rules.h), dropped and
 * counted.  rpfilter lets through what the gateway sends itself over lo,
 * and takes a multipath route's every interface. */
static void
add_spoofed_drop(struct cmd *c, uint8_t family)
{
	cmd_add(c, "-m");
	cmd_add(c, "rpfilter");
	cmd_add(c, "--invert");
	cmd_add(c, "-m");
	cmd_add(c, "nfacct");
	cmd_add(c, "--nfacct-name");
	cmd_add(c, spoofed_acct(family));
	cmd_add(c, "-j");
	cmd_add(c, "DROP");
}

static void
add_notrack(struct cmd *c)
{
	cmd_add(c, "-j");
	cmd_add(c, "CT");
	cmd_add(c, "--notrack");
}

/*
 * Fragments.  A non-first fragment has no ports, so no rule of a service
 * matches it, and nothing reassembles it first: CT --notrack does not load
 * conntrack's defragmentation.  The kernel would forward it, and the
 * backend reassemble a segment tcpctd never saw (RFC 1858 §3: tiny and
 * overlapping fragments), or hold a spoofed flood of them in its
 * reassembly memory.  So every fragment of a TCP datagram to a protected
 * address is dropped, first or not, from any source: that the rest of the
 * datagram goes to a protected port cannot be seen, and a fragment's
 * source proves nothing.  An honest TCP sets DF and fragments nothing
 * (path MTU discovery, RFC 1191 and RFC 8201).  Where something else
 * loaded defragmentation, the raw table sees only whole datagrams, and
 * these rules none.
 *
 * IPv4: bytes 4-7 of the header are the Identification, the flags and
 * the Fragment Offset (RFC 791 §3.1); a fragment has MF (0x2000) or an
 * offset (0x1fff) set.  `-f` alone would miss the first fragment.  Every
 * fragment names the protocol, and a datagram's fragments are those of one
 * protocol (RFC 791 §3.2): `-p tcp` is each one's own.
 *
 * IPv6: a Fragment header (RFC 8200 §4.5), and a protocol that only the
 * header chain says.  `-p` follows it: in a first fragment to its end, in
 * the others to the Fragment header's Next Header.  A chain that does not
 * resolve (its next header in the next fragment: Frag(nh=60) +
 * DSTOPT(nh=60)), or a non-first fragment whose Next Header is an
 * extension header, has no protocol: nft's `-p tcp` does not match it,
 * and the backend reassembles whatever the rest makes of it, a TCP SYN
 * included.  So an IPv6 fragment passes only where its protocol resolves
 * to something other than TCP (RETURN; nft matches neither `-p tcp` nor
 * `! -p tcp` without one, legacy ip6tables drops it there), and the rule
 * after drops every other fragment.  A non-first fragment that names UDP
 * cannot make a TCP segment: the backend takes the protocol from the
 * first fragment's headers alone (RFC 8200 §4.5), and a first fragment
 * passes only with a chain that ends, in it, at another protocol than TCP.
 * So fragmented UDP to a protected address still arrives, but for one
 * whose fragments name an extension header (a Destination Options header
 * ahead of UDP): those are dropped.
 */
#define FRAGMENT_U32	"4&0x3FFF=0x1:0x3FFF"

static const char *
fragments_acct(uint8_t family)
{
	return family == AF_INET ? RULES_FRAGMENTS_ACCT4 : RULES_FRAGMENTS_ACCT6;
}

enum fragment_proto { FRAG_TCP, FRAG_NOT_TCP, FRAG_ANY };

/* -A TCPCTD, the protocol, -d addr and the family's fragment match. */
static void
fragment_start(struct cmd *c, const char *prog, uint8_t family,
	       const char *addr, enum fragment_proto proto)
{
	cmd_init(c, prog);
	cmd_add(c, "-A");
	cmd_add(c, CHAIN_IN);
	if (proto == FRAG_NOT_TCP)
		cmd_add(c, "!");
	if (proto != FRAG_ANY) {
		cmd_add(c, "-p");
		cmd_add(c, "tcp");
	}
	cmd_add(c, "-d");
	cmd_add(c, addr);
	cmd_add(c, "-m");
	if (family == AF_INET) {
		cmd_add(c, "u32");
		cmd_add(c, "--u32");
		cmd_add(c, FRAGMENT_U32);
	} else {
		cmd_add(c, "frag");
	}
}

static int
fragment_rule(const char *prog, uint8_t family, const char *addr,
	      FILE *print)
{
	int failed = 0;
	struct cmd c;

	if (family == AF_INET6) {
		fragment_start(&c, prog, family, addr, FRAG_NOT_TCP);
		cmd_add(&c, "-j");
		cmd_add(&c, "RETURN");
		failed += cmd_run(&c, print, false) != 0;
	}
	fragment_start(&c, prog, family, addr,
		       family == AF_INET ? FRAG_TCP : FRAG_ANY);
	cmd_add(&c, "-m");
	cmd_add(&c, "nfacct");
	cmd_add(&c, "--nfacct-name");
	cmd_add(&c, fragments_acct(family));
	cmd_add(&c, "-j");
	cmd_add(&c, "DROP");
	return failed + (cmd_run(&c, print, false) != 0);
}

/* What an nfnetlink_acct answer said: the packets of the object asked
 * about. */
struct acct_answer {
	uint64_t packets;
	bool found;
};

static int
acct_attr(const struct nlattr *a, void *data)
{
	struct acct_answer *ans = data;

	if (mnl_attr_get_type(a) == NFACCT_PKTS &&
	    mnl_attr_validate(a, MNL_TYPE_U64) == 0) {
		ans->packets = be64toh(mnl_attr_get_u64(a));
		ans->found = true;
	}
	return MNL_CB_OK;
}

static int
acct_msg(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct nfgenmsg), acct_attr, data);
}

/*
 * One request about the counter name to nfnetlink_acct (NEW, GET or DEL),
 * and its answer into ans (GET).  Returns 0, or -1 with errno: ENOENT no
 * such counter, EBUSY a NEW of one that exists or a DEL of one a rule
 * still uses.  The kernel answers within the send, so the reads do not
 * wait.
 */
static int
acct_request(uint16_t type, const char *name, struct acct_answer *ans)
{
	uint8_t buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER,
						 SOCK_CLOEXEC);
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	uint32_t seq = (uint32_t)time(NULL), portid;
	int ret = MNL_CB_ERROR, err;

	if (!nl)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		goto out;
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ACCT << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	mnl_attr_put_strz(nlh, NFACCT_NAME, name);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto out;
	do {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (n < 0) {
			ret = MNL_CB_ERROR;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, portid,
				 ans ? acct_msg : NULL, ans);
	} while (ret > MNL_CB_STOP);
out:
	err = errno;
	mnl_socket_close(nl);
	errno = err;
	return ret < 0 ? -1 : 0;
}

/* The packets the counter name counted: 0, or -1 (errno). */
static int
acct_packets(const char *name, uint64_t *packets)
{
	struct acct_answer ans = { 0, false };

	if (acct_request(NFNL_MSG_ACCT_GET, name, &ans) < 0)
		return -1;
	if (!ans.found) {
		errno = ENOENT;
		return -1;
	}
	*packets = ans.packets;
	return 0;
}

int
rules_fragment_drops(uint8_t family, uint64_t *packets)
{
	return acct_packets(fragments_acct(family), packets);
}

int
rules_spoofed_drops(uint8_t family, uint64_t *packets)
{
	return acct_packets(spoofed_acct(family), packets);
}

/* The family's counters made, or kept with their counts when they exist
 * (a reinstall).  Returns 0, or -1 having said why. */
static int
acct_make(const char *prog, uint8_t family)
{
	const char *names[] = { fragments_acct(family), spoofed_acct(family) };
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (acct_request(NFNL_MSG_ACCT_NEW, names[i], NULL) == 0 ||
		    errno == EBUSY)
			continue;
		fprintf(stderr, "%s: the rules' counter nfacct %s: %s\n", prog,
			names[i], strerror(errno));
		return -1;
	}
	return 0;
}

/* A counter deleted, once the rules that used it are gone: the kernel
 * may release a deleted nft rule's match a moment later (EBUSY until
 * then), so the delete is tried for up to a second. */
static void
acct_delete(const char *prog, const char *name)
{
	const struct timespec pause = { 0, 10L * 1000 * 1000 };
	int tries;

	for (tries = 0; tries < 100; tries++) {
		if (acct_request(NFNL_MSG_ACCT_DEL, name, NULL) == 0 ||
		    errno != EBUSY)
			return;
		nanosleep(&pause, NULL);
	}
	fprintf(stderr, "%s: nfacct %s: still in use, left in place\n", prog,
		name);
}

static void
acct_remove(const char *prog, uint8_t family)
{
	acct_delete(prog, fragments_acct(family));
	acct_delete(prog, spoofed_acct(family));
}

bool
rules_takes_txn(const struct config *cfg, const struct service *s)
{
	return !s->upstream && s->pol.tcpct && cfg->tcpct_txn &&
	       s->port == RULES_DNS_PORT;
}

/*
 * The backend's UDP answers to the queries tcpctd makes for TCPCT
 * transactions (gateway/txn.h): from port 53 to the worker's port range,
 * to that worker's flow queue, untracked; from the clients' side,
 * dropped.
 */
static int
txn_rules(const char *prog, const struct config *cfg, const char *addr,
	  uint8_t family, FILE *print)
{
	unsigned i;
	int failed = 0;
	struct cmd c;

	for (i = 0; i < cfg->queues; i++) {
		int j;

		for (j = 0; j < 3; j++) {
			cmd_init(&c, prog);
			cmd_add(&c, "-A");
			cmd_add(&c, CHAIN_IN);
			cmd_add(&c, "-p");
			cmd_add(&c, "udp");
			cmd_add(&c, "-s");
			cmd_add(&c, addr);
			cmd_add(&c, "--sport");
			cmd_add(&c, "53");
			cmd_add(&c, "--dport");
			cmd_add(&c, cmd_fmt(&c, "%u:%u",
					    RULES_TXN_PORT_BASE +
					    i * RULES_TXN_PORTS,
					    RULES_TXN_PORT_BASE +
					    (i + 1) * RULES_TXN_PORTS - 1));
			if (j == 0) {
				add_spoofed_drop(&c, family);
			} else if (j == 1) {
				add_notrack(&c);
			} else {
				cmd_add(&c, "-j");
				cmd_add(&c, "NFQUEUE");
				cmd_add(&c, "--queue-num");
				cmd_add(&c, cmd_fmt(&c, "%u",
						    cfg->queue_base + i, 0));
				if (cfg->bypass)
					cmd_add(&c, "--queue-bypass");
			}
			failed += cmd_run(&c, print, false) != 0;
		}
	}
	return failed;
}

/*
 * Per service, both directions: toward the backend, and from it.  Protected
 * traffic is untracked: tcpctd rewrites sequence numbers, which conntrack's
 * window tracking would take for invalid packets.  Toward the backend, bare
 * SYNs go to the SYN queues, everything else to the flow queues; from it,
 * everything to the flow queues; a worker's share is by client port
 * (rules_port_share), so a flood from one address still reaches every
 * worker.  What has the backend's address and port but comes in where
 * the route to the backend does not go out is dropped first (rules.h).
 */
/* A service's address as the rules match it: an upstream's prefix. */
static void
service_addr(const struct service *s, char *buf, size_t len)
{
	if (s->upstream) {
		struct prefix p = { s->family, s->plen, s->addr };

		prefix_format(&p, buf, len);
	} else {
		inet_ntop(s->family, s->addr.b, buf, (socklen_t)len);
	}
}

/* A service's segments toward its backend (an upstream's far servers), in
 * chain: untracked, SYNs to the SYN queues, the rest to the flow queues,
 * each by its share of the client's ports. */
static int
to_backend_rules(const char *prog, const struct config *cfg,
		 const char *chain, const char *addr, const char *port,
		 FILE *print)
{
	int failed = 0;
	unsigned i;
	struct cmd c;

	rule_begin(&c, prog, chain, addr, port, TO_BACKEND, false);
	add_notrack(&c);
	failed += cmd_run(&c, print, false) != 0;
	for (i = 0; i < cfg->queues; i++) {
		rule_begin(&c, prog, chain, addr, port, TO_BACKEND, false);
		cmd_add(&c, "--tcp-flags");
		cmd_add(&c, "SYN,ACK,FIN,RST");
		cmd_add(&c, "SYN");
		add_port_share(&c, cfg, i, "--sports");
		add_queue(&c, cfg, cfg->queue_base + cfg->queues + i);
		failed += cmd_run(&c, print, false) != 0;
	}
	for (i = 0; i < cfg->queues; i++) {
		rule_begin(&c, prog, chain, addr, port, TO_BACKEND, false);
		add_port_share(&c, cfg, i, "--sports");
		add_queue(&c, cfg, cfg->queue_base + i);
		failed += cmd_run(&c, print, false) != 0;
	}
	return failed;
}

/* A backend's segments to the flow queues (TCPCTD), by the client's port
 * share; local: to the gateway's own addresses too. */
static int
from_backend_queues(const char *prog, const struct config *cfg,
		    const char *addr, const char *port, bool local,
		    FILE *print)
{
	int failed = 0;
	unsigned i;
	struct cmd c;

	for (i = 0; i < cfg->queues; i++) {
		rule_begin(&c, prog, CHAIN_IN, addr, port, FROM_BACKEND,
			   local);
		add_port_share(&c, cfg, i, "--dports");
		add_queue(&c, cfg, cfg->queue_base + i);
		failed += cmd_run(&c, print, false) != 0;
	}
	return failed;
}

/* A resolver on the gateway itself: its segments leave through OUTPUT,
 * after the rule that lets tcpctd's own go (chain_rules). */
static int
upstream_out_rules(const char *prog, const struct config *cfg,
		   const char *addr, const char *port, FILE *print)
{
	return to_backend_rules(prog, cfg, CHAIN_OUT, addr, port, print);
}

/*
 * An upstream service (gateway/upstream.h) is a resolver's way out: its
 * SYNs and segments to the far servers, from a resolver behind the gateway
 * (TCPCTD, from PREROUTING) or on the gateway itself (TCPCTD_OUT, from
 * OUTPUT: upstream_out_rules), and the far servers' back, to either.
 * Those to a local resolver are not the gateway's probes (there are none
 * upstream); the segments tcpctd sends one (marked) come back in over lo,
 * and go on.
 */
static int
upstream_rules(const char *prog, const struct config *cfg,
	       const struct service *s, const char *addr, const char *port,
	       FILE *print)
{
	char mark[16];
	int failed;
	struct cmd c;

	snprintf(mark, sizeof(mark), "0x%x", cfg->mark);
	failed = to_backend_rules(prog, cfg, CHAIN_IN, addr, port, print);
	rule_begin(&c, prog, CHAIN_IN, addr, port, FROM_BACKEND, true);
	add_spoofed_drop(&c, s->family);
	failed += cmd_run(&c, print, false) != 0;
	rule_begin(&c, prog, CHAIN_IN, addr, port, FROM_BACKEND, true);
	add_notrack(&c);
	failed += cmd_run(&c, print, false) != 0;
	rule_begin(&c, prog, CHAIN_IN, addr, port, FROM_BACKEND, true);
	cmd_add(&c, "-m");
	cmd_add(&c, "mark");
	cmd_add(&c, "--mark");
	cmd_add(&c, mark);
	cmd_add(&c, "-j");
	cmd_add(&c, "RETURN");
	failed += cmd_run(&c, print, false) != 0;
	return failed + from_backend_queues(prog, cfg, addr, port, true,
					    print);
}

static bool
family_upstream(const struct config *cfg, uint8_t family)
{
	for (unsigned i = 0; i < cfg->nservices; i++)
		if (cfg->services[i].upstream &&
		    cfg->services[i].family == family)
			return true;
	return false;
}

static int
service_rules(const char *prog, const struct config *cfg,
	      const struct service *s, FILE *print)
{
	char addr[INET6_ADDRSTRLEN + 4], port[8];
	int failed = 0;
	struct cmd c;

	service_addr(s, addr, sizeof(addr));
	snprintf(port, sizeof(port), "%u", s->port);
	failed += list_rules(prog, cfg, addr, port, s->family, print);
	if (s->upstream)
		return failed + upstream_rules(prog, cfg, s, addr, port, print);

	failed += to_backend_rules(prog, cfg, CHAIN_IN, addr, port, print);
	rule_start(&c, prog, addr, port, FROM_BACKEND);
	add_spoofed_drop(&c, s->family);
	failed += cmd_run(&c, print, false) != 0;
	rule_start(&c, prog, addr, port, FROM_BACKEND);
	add_notrack(&c);
	failed += cmd_run(&c, print, false) != 0;
	failed += from_backend_queues(prog, cfg, addr, port, false, print);
	if (rules_takes_txn(cfg, s))
		failed += txn_rules(prog, cfg, addr, s->family, print);
	return failed;
}

/*
 * A segment of a flow the kernel shield carries (its mark: kernel-flows)
 * was judged and translated there: it goes on untracked, past the queues.
 * Only the shield sets that mark, and it clears it on whatever else it
 * passes.  The rules have it whatever the configuration says, so that
 * rules installed by another invocation (a reload's, the unit's) never
 * queue again what the kernel translated.
 */
static int
carried_rules(const char *prog, const struct config *cfg, FILE *out)
{
	char mark[16];
	int failed = 0, k;

	snprintf(mark, sizeof(mark), "0x%x", POLICY_CARRIED_MARK(cfg));
	for (k = 0; k < 2; k++) {
		struct cmd c;

		cmd_init(&c, prog);
		cmd_add(&c, "-A");
		cmd_add(&c, CHAIN_IN);
		cmd_add(&c, "-m");
		cmd_add(&c, "mark");
		cmd_add(&c, "--mark");
		cmd_add(&c, mark);
		if (k == 0) {
			add_notrack(&c);
		} else {
			cmd_add(&c, "-j");
			cmd_add(&c, "ACCEPT");
		}
		failed += cmd_run(&c, out, false) != 0;
	}
	return failed;
}

/* The rules of both chains for one family, as `prog -w -t raw -A ...`
 * lines. */
static int
chain_rules(const char *prog, const struct config *cfg, uint8_t family,
	    FILE *out)
{
	int failed = 0;
	unsigned i;
	struct cmd c;
	char mark[16];

	/* Fragments first, once per address (or prefix), ahead of the
	 * allow list. */
	for (i = 0; i < cfg->nservices; i++) {
		const struct service *s = &cfg->services[i];
		char addr[INET6_ADDRSTRLEN + 4];
		unsigned j;

		if (s->family != family)
			continue;
		for (j = 0; j < i; j++)
			if (cfg->services[j].family == family &&
			    cfg->services[j].upstream == s->upstream &&
			    cfg->services[j].plen == s->plen &&
			    !memcmp(cfg->services[j].addr.b, s->addr.b,
				    pkt_addrlen(family)))
				break;
		if (j < i)
			continue;
		service_addr(s, addr, sizeof(addr));
		failed += fragment_rule(prog, family, addr, out);
	}
	/* Then what the kernel carried (never a fragment). */
	failed += carried_rules(prog, cfg, out);
	for (i = 0; i < cfg->nservices; i++)
		if (cfg->services[i].family == family)
			failed += service_rules(prog, cfg, &cfg->services[i], out);
	snprintf(mark, sizeof(mark), "0x%x", cfg->mark);
	cmd_init(&c, prog);
	cmd_add(&c, "-A");
	cmd_add(&c, CHAIN_OUT);
	cmd_add(&c, "-m");
	cmd_add(&c, "mark");
	cmd_add(&c, "--mark");
	cmd_add(&c, mark);
	add_notrack(&c);
	failed += cmd_run(&c, out, false) != 0;
	if (!family_upstream(cfg, family))
		return failed;
	/* What tcpctd sends is not queued again, to an upstream's far
	 * servers (in a resolver's name) least of all. */
	cmd_init(&c, prog);
	cmd_add(&c, "-A");
	cmd_add(&c, CHAIN_OUT);
	cmd_add(&c, "-m");
	cmd_add(&c, "mark");
	cmd_add(&c, "--mark");
	cmd_add(&c, mark);
	cmd_add(&c, "-j");
	cmd_add(&c, "RETURN");
	failed += cmd_run(&c, out, false) != 0;
	for (i = 0; i < cfg->nservices; i++) {
		const struct service *s = &cfg->services[i];
		char addr[INET6_ADDRSTRLEN + 4], port[8];

		if (s->family != family || !s->upstream)
			continue;
		service_addr(s, addr, sizeof(addr));
		snprintf(port, sizeof(port), "%u", s->port);
		failed += upstream_out_rules(prog, cfg, addr, port, out);
	}
	return failed;
}

/* Runs `prog-restore --noflush -w` with text on its standard input;
 * returns its exit status. */
static int
restore(const char *prog, const char *text, size_t len)
{
	posix_spawn_file_actions_t fa;
	char cmd[80];
	const char *argv[] = { cmd, "--noflush", "-w", NULL };
	int fds[2], status;
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "%s-restore", prog);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return 127;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, cmd, &fa, NULL, (char **)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(fds[0]);
		close(fds[1]);
		return 127;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	while (len) {
		ssize_t n = write(fds[1], text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		text += n;
		len -= (size_t)n;
	}
	close(fds[1]);
	status = wait_exit(pid);
	return len ? 128 : status;
}

/*
 * Installing fills both chains in one iptables-restore transaction, so
 * that a second install (a reload) swaps the old rules for the new at
 * once: no packet of a spliced connection slips past the queues between
 * the two.  The chains and the jumps to them are made first when missing.
 */
static int
install(const char *prog, const struct config *cfg, uint8_t family)
{
	char *lines = NULL, *text = NULL, *l, *save = NULL;
	size_t llen = 0, tlen = 0;
	FILE *f = open_memstream(&lines, &llen), *t;
	int failed;

	if (!f)
		return 1;
	failed = chain_rules(prog, cfg, family, f);
	fclose(f);
	t = open_memstream(&text, &tlen);
	if (!t) {
		free(lines);
		return 1;
	}
	fprintf(t, "*raw\n-F %s\n-F %s\n", CHAIN_IN, CHAIN_OUT);
	/* Each line less its `prog -w -t raw`. */
	for (l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		const char *rule = strstr(l, " -t raw ");

		if (rule)
			fprintf(t, "%s\n", rule + strlen(" -t raw "));
	}
	fputs("COMMIT\n", t);
	fclose(t);
	free(lines);
	simple(prog, NULL, true, "-N", CHAIN_IN, NULL, NULL);
	simple(prog, NULL, true, "-N", CHAIN_OUT, NULL, NULL);
	failed += acct_make(prog, family) != 0;
	failed += restore(prog, text, tlen) != 0;
	free(text);
	if (simple(prog, NULL, true, "-C", "PREROUTING", "-j", CHAIN_IN) != 0)
		failed += simple(prog, NULL, false, "-I", "PREROUTING", "-j",
				 CHAIN_IN) != 0;
	if (simple(prog, NULL, true, "-C", "OUTPUT", "-j", CHAIN_OUT) != 0)
		failed += simple(prog, NULL, false, "-I", "OUTPUT", "-j",
				 CHAIN_OUT) != 0;
	return failed;
}

/*
 * Deletes every copy of the jump from chain to ours, as long as `-C` finds
 * one and `-D` deletes it.  An install makes one; copies come from hands or
 * a race of two installs, never more than a few, so a `-C` that still says
 * yes after JUMP_COPIES_MAX deletions (a wrapper, a broken binary) is not
 * believed: returns 1, having said so, rather than loop for ever.
 */
#define JUMP_COPIES_MAX	64

static int
remove_jumps(const char *prog, const char *chain, const char *target)
{
	int n;

	for (n = 0; n < JUMP_COPIES_MAX; n++)
		if (simple(prog, NULL, true, "-C", chain, "-j", target) != 0 ||
		    simple(prog, NULL, true, "-D", chain, "-j", target) != 0)
			return 0;
	fprintf(stderr, "%s: %s still jumps to %s after %d deletions: "
		"given up\n", prog, chain, target, JUMP_COPIES_MAX);
	return 1;
}

static int
family_apply(const struct config *cfg, uint8_t family,
	     enum rules_action action, FILE *print)
{
	const char *prog = family == AF_INET ? cfg->iptables : cfg->ip6tables;
	FILE *p = action == RULES_PRINT ? print : NULL;
	bool found = false;
	int failed = 0;

	if (action == RULES_INSTALL)
		return install(prog, cfg, family);
	/* Drop the jumps (all copies), then the chains: a clean slate. */
	if (action != RULES_PRINT) {
		failed += remove_jumps(prog, "PREROUTING", CHAIN_IN);
		failed += remove_jumps(prog, "OUTPUT", CHAIN_OUT);
		simple(prog, NULL, true, "-F", CHAIN_IN, NULL, NULL);
		simple(prog, NULL, true, "-F", CHAIN_OUT, NULL, NULL);
		found = simple(prog, NULL, true, "-X", CHAIN_IN, NULL, NULL) == 0;
		found |= simple(prog, NULL, true, "-X", CHAIN_OUT, NULL, NULL) == 0;
		acct_remove(prog, family);
	}
	if (action == RULES_REMOVE) {
		/* Said for a removal asked for, not for the family an install
		 * has nothing to protect in. */
		if (print)
			fprintf(print, "%s: %s\n", prog, found ?
				"the " CHAIN_IN " and " CHAIN_OUT " chains removed" :
				"no rules of tcpctd's to remove");
		return failed;
	}

	/* The counters the rules name, as nfacct(8) makes them. */
	if (p)
		fprintf(p, "nfacct add %s\nnfacct add %s\n",
			fragments_acct(family), spoofed_acct(family));
	failed += simple(prog, p, false, "-N", CHAIN_IN, NULL, NULL) != 0;
	failed += simple(prog, p, false, "-N", CHAIN_OUT, NULL, NULL) != 0;
	failed += chain_rules(prog, cfg, family, p);
	failed += simple(prog, p, false, "-I", "PREROUTING", "-j",
			 CHAIN_IN) != 0;
	failed += simple(prog, p, false, "-I", "OUTPUT", "-j", CHAIN_OUT) != 0;
	return failed;
}

int
rules_apply(const struct config *c, enum rules_action action, FILE *out)
{
	bool v4 = false, v6 = false;
	int failed = 0;
	unsigned i;

	for (i = 0; i < c->nservices; i++) {
		v4 |= c->services[i].family == AF_INET;
		v6 |= c->services[i].family == AF_INET6;
	}
	/* A family with nothing to protect has its rules removed, so that an
	 * install never leaves a previous configuration's rules behind. */
	if (v4 || action != RULES_PRINT)
		failed += family_apply(c, AF_INET, v4 ? action : RULES_REMOVE,
				       action == RULES_INSTALL && !v4 ? NULL : out);
	if (v6 || action != RULES_PRINT)
		failed += family_apply(c, AF_INET6, v6 ? action : RULES_REMOVE,
				       action == RULES_INSTALL && !v6 ? NULL : out);
	return failed;
}
