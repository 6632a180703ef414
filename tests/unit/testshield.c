/*
 * The kernel shield on the test bench (testshield.h).
 */
#include "testshield.h"

#include <stdio.h>

#include <CUnit/CUnit.h>

#include "../../gateway/shieldmap.h"

struct shield tshield;
static char load_err[256];
static int loaded = -1;

bool
tshield_ready(void)
{
	if (loaded < 0)
		loaded = shield_open(&tshield, 1024, 2 * 1024, load_err,
				     sizeof(load_err)) == 0;
	if (!loaded)
		fprintf(stderr, "\n  shield: %s\n", load_err);
	return loaded;
}

int
tshield_clean(void)
{
	if (loaded > 0)
		shield_close(&tshield);
	loaded = -1;
	return 0;
}

uint64_t
tshield_counter(enum shield_counter c)
{
	uint64_t v[SHIELD_COUNTER_MAX];

	CU_ASSERT_EQUAL_FATAL(shield_counters(&tshield, v), 0);
	return v[c];
}

void
tshield_sync(struct tgw *g, uint64_t t, uint64_t clock_ns, uint32_t mark)
{
	struct shield_config c;
	unsigned i;

	g->w.now_s = t;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&g->w.keys, t), 0);
	shieldmap_config(&c, &g->w.keys, mark,
			 (int64_t)clock_ns - (int64_t)shieldmap_mono_ns());
	if (g->cfg.kernel_flows)
		c.carried_mark = POLICY_CARRIED_MARK(&g->cfg);
	CU_ASSERT_EQUAL_FATAL(shieldmap_lists(&tshield, &g->cfg, &c), 0);
	CU_ASSERT_EQUAL_FATAL(shieldmap_addrs(&tshield, &g->cfg), 0);
	CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
	for (i = 0; i < g->cfg.nservices; i++) {
		const struct service *svc = &g->cfg.services[i];
		struct shield_service_key k;
		struct shield_service v;
		struct profile prof;

		worker_profile(&g->w, svc, svc->family, &prof);
		shieldmap_service(&k, &v, svc->family, &svc->addr, svc->port,
				  &prof, false, shieldmap_defers(svc), i);
		CU_ASSERT_EQUAL_FATAL(shield_set_service(&tshield, &k, &v), 0);
	}
}
