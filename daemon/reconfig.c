#include "reconfig.h"

#include <string.h>

const char *
reconfig_needs_restart(const struct config *a, const struct config *b)
{
#define SAME(f, name) if (a->f != b->f) return name
	SAME(queues, "queues");
	SAME(queue_base, "queue-base");
	SAME(queue_maxlen, "queue-maxlen");
	SAME(batch, "batch");
	SAME(mark, "mark");
	SAME(flows, "flows");
	SAME(hold_slots, "hold-slots");
	SAME(limit_slots, "limit-slots");
	SAME(prefix4, "prefix4");
	SAME(prefix6, "prefix6");
	SAME(txn_pending, "txn-pending");
	SAME(upstream_cache, "upstream-cache");
	SAME(key_lifetime, "key-lifetime");
	SAME(gso, "gso");
	SAME(kernel_flows, "kernel-flows");
	if (strcmp(a->pin_dir, b->pin_dir) != 0)
		return "pin-dir";
	SAME(fail_open, "fail-open");
	SAME(shield, "shield");
	SAME(nshield_devs, "shield-dev");
#undef SAME
	if (memcmp(a->shield_devs, b->shield_devs, sizeof(a->shield_devs)) != 0)
		return "shield-dev";
	if (strcmp(a->secret_file, b->secret_file) != 0)
		return "secret-file";
	if (strcmp(a->control_socket, b->control_socket) != 0)
		return "control-socket";
	return NULL;
}

bool
reconfig_keep_order(const struct config *old, struct config *c, FILE *out)
{
	struct service sorted[POLICY_MAX_SERVICES];
	bool used[POLICY_MAX_SERVICES] = { false };
	unsigned i, j, n = 0;

	for (i = 0; i < old->nservices; i++) {
		const struct service *o = &old->services[i];

		for (j = 0; j < c->nservices; j++)
			if (!used[j] && c->services[j].family == o->family &&
			    c->services[j].upstream == o->upstream &&
			    c->services[j].plen == o->plen &&
			    c->services[j].port == o->port &&
			    !memcmp(&c->services[j].addr, &o->addr,
				    sizeof(o->addr)))
				break;
		if (j == c->nservices) {
			char addr[64];

			service_format(o, addr, sizeof(addr));
			fprintf(out, "error: %s (service %s) is gone from the "
				"configuration: removing one needs a restart\n",
				addr, o->name);
			return false;
		}
		used[j] = true;
		sorted[n++] = c->services[j];
	}
	for (j = 0; j < c->nservices; j++)
		if (!used[j])
			sorted[n++] = c->services[j];
	memcpy(c->services, sorted, n * sizeof(sorted[0]));
	return true;
}
