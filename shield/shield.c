#include "shield.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* shield/object.S */
extern const char shield_bpf_obj[];
extern const uint64_t shield_bpf_obj_len;

#define TC_HANDLE	1
#define TC_PRIORITY	1
#define STALE_PASSES	3	/* tries at removing a stale shield */
/* The tickets map, mapped whole (a page multiple). */
#define TICKETS_BYTES	\
	((size_t)SHIELD_MAX_WORKERS * SHIELD_MAX_SERVICES * sizeof(uint64_t))

#define SHIELD_NAME(name, str, help) [SHIELD_##name] = { #str, help },
static const struct {
	const char *name, *help;
} counters[SHIELD_COUNTER_MAX] = {
	SHIELD_COUNTERS(SHIELD_NAME)
};
#undef SHIELD_NAME

const char *
shield_counter_name(enum shield_counter c)
{
	return (unsigned)c < SHIELD_COUNTER_MAX ? counters[c].name : "unknown";
}

const char *
shield_counter_help(enum shield_counter c)
{
	return (unsigned)c < SHIELD_COUNTER_MAX ? counters[c].help : "";
}

/* libbpf's own chatter (the verifier's log, for one) is for a developer
 * with bpftool at hand, not the journal: the caller reports the error. */
static int
quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* The verifier's reasons, when it refuses the program: the line before
 * its closing statistics ("processed N insns ...") says why. */
static char verifier_log[1 << 18];

/* The whole log for a developer: TCPCTD_BPF_LOG=FILE. */
static void
dump_log(const char *log)
{
	const char *path = getenv("TCPCTD_BPF_LOG");
	FILE *f = path ? fopen(path, "w") : NULL;

	if (f) {
		fputs(log, f);
		fclose(f);
	}
}

static const char *
last_line(char *log)
{
	for (;;) {
		size_t n = strlen(log);
		char *nl;

		while (n && log[n - 1] == '\n')
			log[--n] = '\0';
		nl = strrchr(log, '\n');
		if (!nl || strncmp(nl + 1, "processed ", 10) != 0)
			return nl ? nl + 1 : log;
		*nl = '\0';
	}
}

static int
map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	return m ? bpf_map__fd(m) : -1;
}

/* What a predecessor's pins must say to be taken over: this layout of
 * maps.h's maps and of the blocks beside them. */
#define SHIELD_LAYOUT_VERSION	4
#define LAYOUT_PIN		"layout"

/* The maps a pin directory holds: the program's own, not libbpf's. */
static bool
pinnable(const struct bpf_map *m)
{
	return !strncmp(bpf_map__name(m), "shield_", 7);
}

static int
pin_path(const char *dir, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Whether fd is a map of m's type, sizes and flags. */
static bool
same_map(int fd, const struct bpf_map *m)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	       info.type == (__u32)bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) &&
	       info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) &&
	       info.map_flags == bpf_map__map_flags(m);
}

/* The maps pinned under dir, when every one of obj's is there, of its
 * layout: obj reuses them all (1).  0: none reused; -1: some could not be,
 * with obj unusable. */
static int
reuse_pins(struct bpf_object *obj, const char *dir)
{
	int fds[32], layout, n = 0, i, rc = 1;
	struct bpf_map *m;
	char path[512];
	uint64_t v = 0;
	uint32_t zero = 0;
	bool ok = true;

	if (pin_path(dir, LAYOUT_PIN, path, sizeof(path)) < 0)
		return false;
	layout = bpf_obj_get(path);
	if (layout < 0)
		return false;
	if (bpf_map_lookup_elem(layout, &zero, &v) < 0 ||
	    v != SHIELD_LAYOUT_VERSION)
		ok = false;
	close(layout);
	bpf_object__for_each_map(m, obj) {
		if (!ok || !pinnable(m))
			continue;
		if (n == (int)(sizeof(fds) / sizeof(fds[0])) ||
		    pin_path(dir, bpf_map__name(m), path, sizeof(path)) < 0 ||
		    (fds[n] = bpf_obj_get(path)) < 0) {
			ok = false;
			continue;
		}
		if (!same_map(fds[n++], m))
			ok = false;
	}
	if (!ok)
		rc = 0;
	m = NULL;
	for (i = 0; ok && i < n && (m = bpf_object__next_map(obj, m));) {
		if (!pinnable(m))
			continue;
		if (bpf_map__reuse_fd(m, fds[i++]) < 0) {
			rc = -1;
			break;
		}
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

/* Pins every map of obj under dir, then the layout they are of. */
static int
pin_all(struct bpf_object *obj, const char *dir)
{
	struct bpf_map *m;
	char path[512];
	uint64_t v = SHIELD_LAYOUT_VERSION;
	uint32_t zero = 0;
	int fd, rc;

	bpf_object__for_each_map(m, obj) {
		if (!pinnable(m))
			continue;
		if (pin_path(dir, bpf_map__name(m), path, sizeof(path)) < 0 ||
		    bpf_map__pin(m, path) < 0)
			return -1;
	}
	if (pin_path(dir, LAYOUT_PIN, path, sizeof(path)) < 0)
		return -1;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, LAYOUT_PIN, 4, 8, 1, NULL);
	if (fd < 0)
		return -1;
	rc = bpf_map_update_elem(fd, &zero, &v, BPF_ANY) == 0 &&
	     bpf_obj_pin(fd, path) == 0 ? 0 : -1;
	close(fd);
	return rc;
}

int
shield_unpin(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && unlinkat(dirfd(d), e->d_name, 0) == 0)
			n++;
	closedir(d);
	(void)rmdir(dir);
	return n;
}

static int open_shield(struct shield *sh, unsigned max_flows,
		       unsigned rate_words, const char *dir, char *err,
		       size_t errlen);

int
shield_open(struct shield *sh, unsigned max_flows, unsigned rate_words,
	    char *err, size_t errlen)
{
	return open_shield(sh, max_flows, rate_words, NULL, err, errlen);
}

int
shield_open_pinned(struct shield *sh, unsigned max_flows, unsigned rate_words,
		   const char *dir, char *err, size_t errlen)
{
	struct statfs st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (statfs(dir, &st) < 0 || st.f_type != BPF_FS_MAGIC) {
		snprintf(err, errlen, "%s: not a bpf filesystem", dir);
		return -1;
	}
	return open_shield(sh, max_flows, rate_words, dir, err, errlen);
}

static int
open_shield(struct shield *sh, unsigned max_flows, unsigned rate_words,
	    const char *dir, char *err, size_t errlen)
{
	struct bpf_program *prog;
	struct bpf_map *flows, *rate, *recs, *tickets;
	int ncpus, rc, i;

	memset(sh, 0, sizeof(*sh));
	libbpf_set_print(quiet);
	sh->obj = bpf_object__open_mem(shield_bpf_obj,
				       (size_t)shield_bpf_obj_len, NULL);
	if (!sh->obj) {
		snprintf(err, errlen, "BPF object: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < SHIELD_MAX_WORKERS; i++)
		sh->ring_fd[i] = -1;
	flows = bpf_object__find_map_by_name(sh->obj, "shield_flows");
	rate = bpf_object__find_map_by_name(sh->obj, "shield_rate");
	recs = bpf_object__find_map_by_name(sh->obj, "shield_recs");
	tickets = bpf_object__find_map_by_name(sh->obj, "shield_tickets");
	if (!max_flows)
		max_flows = 1;
	if (!flows || !rate || !recs || !tickets ||
	    bpf_map__set_max_entries(flows, max_flows) < 0 ||
	    bpf_map__set_max_entries(recs, max_flows) < 0 ||
	    bpf_map__set_max_entries(rate, rate_words ? rate_words : 2) < 0) {
		snprintf(err, errlen, "BPF object: no flow or rate map");
		goto fail;
	}
	if (dir) {
		snprintf(sh->pin_dir, sizeof(sh->pin_dir), "%s", dir);
		sh->pinned = true;
		rc = reuse_pins(sh->obj, dir);
		if (rc < 0) {
			snprintf(err, errlen, "%s: cannot take its maps over: %s",
				 dir, strerror(errno));
			goto fail;
		}
		sh->kept = rc == 1;
		/* Another layout's, or a part: none of it is taken. */
		if (!sh->kept)
			(void)shield_unpin(dir);
		if (!sh->kept && mkdir(dir, 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			goto fail;
		}
	}
	prog = bpf_object__find_program_by_name(sh->obj, "shield");
	if (prog)
		bpf_program__set_log_buf(prog, verifier_log,
					 sizeof(verifier_log));
	verifier_log[0] = '\0';
	rc = bpf_object__load(sh->obj);
	if (rc < 0) {
		dump_log(verifier_log);
		snprintf(err, errlen, "the kernel refused the program: %s%s%s",
			 strerror(-rc), verifier_log[0] ? "; verifier: " : "",
			 last_line(verifier_log));
		goto fail;
	}
	if (dir && !sh->kept && pin_all(sh->obj, dir) < 0) {
		snprintf(err, errlen, "%s: cannot pin its maps: %s", dir,
			 strerror(errno));
		(void)shield_unpin(dir);
		goto fail;
	}
	ncpus = libbpf_num_possible_cpus();
	sh->prog_fd = prog ? bpf_program__fd(prog) : -1;
	sh->config_fd = map_fd(sh->obj, "shield_config");
	sh->services_fd = map_fd(sh->obj, "shield_services");
	sh->addrs_fd = map_fd(sh->obj, "shield_addrs");
	sh->flows_fd = map_fd(sh->obj, "shield_flows");
	sh->counters_fd = map_fd(sh->obj, "shield_counters");
	sh->allow_fd = map_fd(sh->obj, "shield_allow");
	sh->deny_fd = map_fd(sh->obj, "shield_deny");
	sh->recs_fd = map_fd(sh->obj, "shield_recs");
	sh->rings_fd = map_fd(sh->obj, "shield_rings");
	if (sh->prog_fd < 0 || sh->config_fd < 0 || sh->services_fd < 0 ||
	    sh->addrs_fd < 0 || sh->flows_fd < 0 || sh->counters_fd < 0 || sh->allow_fd < 0 ||
	    sh->deny_fd < 0 || sh->recs_fd < 0 || sh->rings_fd < 0 ||
	    ncpus <= 0) {
		snprintf(err, errlen, "BPF object: incomplete");
		goto fail;
	}
	sh->ncpus = (unsigned)ncpus;
	sh->rate_len = (size_t)(rate_words ? rate_words : 2) * sizeof(uint64_t);
	sh->rate = mmap(NULL, sh->rate_len, PROT_READ | PROT_WRITE,
			MAP_SHARED, bpf_map__fd(rate), 0);
	if (sh->rate == MAP_FAILED) {
		snprintf(err, errlen, "rate map: %s", strerror(errno));
		sh->rate = NULL;
		goto fail;
	}
	sh->nrecs = max_flows;
	sh->recs = mmap(NULL, sh->nrecs * sizeof(*sh->recs),
			PROT_READ | PROT_WRITE, MAP_SHARED, sh->recs_fd, 0);
	if (sh->recs == MAP_FAILED) {
		snprintf(err, errlen, "records map: %s", strerror(errno));
		sh->recs = NULL;
		goto fail;
	}
	sh->tickets = mmap(NULL, TICKETS_BYTES, PROT_READ | PROT_WRITE,
			   MAP_SHARED, bpf_map__fd(tickets), 0);
	if (sh->tickets == MAP_FAILED) {
		snprintf(err, errlen, "tickets map: %s", strerror(errno));
		sh->tickets = NULL;
		goto fail;
	}
	return 0;
fail:
	if (sh->recs)
		munmap(sh->recs, sh->nrecs * sizeof(*sh->recs));
	if (sh->rate)
		munmap(sh->rate, sh->rate_len);
	bpf_object__close(sh->obj);
	memset(sh, 0, sizeof(*sh));
	return -1;
}

static void
detach(struct shield *sh, unsigned i)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = sh->ifindex[i],
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE,
		    .priority = TC_PRIORITY);

	(void)bpf_tc_detach(&hook, &opts);
	if (sh->hook_made[i]) {
		/* Both directions: destroying the clsact qdisc. */
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		(void)bpf_tc_hook_destroy(&hook);
	}
}

void
shield_close(struct shield *sh)
{
	unsigned i;

	/* Left for a successor: the filters hold the program, the pins the
	 * maps and blocks. */
	if (!(sh->leave && sh->pinned))
		for (i = 0; i < sh->ndevs; i++)
			detach(sh, i);
	if (sh->pinned && !sh->leave)
		(void)shield_unpin(sh->pin_dir);
	for (i = 0; i < sh->nblocks; i++)
		munmap(sh->blocks[i].mem, sh->blocks[i].len);
	for (i = 0; i < SHIELD_MAX_WORKERS; i++)
		if (sh->ring_fd[i] >= 0)
			close(sh->ring_fd[i]);
	if (sh->tickets)
		munmap(sh->tickets, TICKETS_BYTES);
	if (sh->recs)
		munmap(sh->recs, sh->nrecs * sizeof(*sh->recs));
	if (sh->rate)
		munmap(sh->rate, sh->rate_len);
	if (sh->obj)
		bpf_object__close(sh->obj);
	memset(sh, 0, sizeof(*sh));
}

int
shield_attach(struct shield *sh, int ifindex, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = sh->prog_fd,
		    .handle = TC_HANDLE, .priority = TC_PRIORITY,
		    .flags = BPF_TC_F_REPLACE);
	unsigned i = sh->ndevs;
	int rc;

	if (i == SHIELD_MAX_DEVS) {
		snprintf(err, errlen, "more than %d interfaces",
			 SHIELD_MAX_DEVS);
		return -1;
	}
	rc = bpf_tc_hook_create(&hook);
	if (rc < 0 && rc != -EEXIST) {
		snprintf(err, errlen, "clsact: %s", strerror(-rc));
		return -1;
	}
	sh->ifindex[i] = ifindex;
	sh->hook_made[i] = rc == 0;
	rc = bpf_tc_attach(&hook, &opts);
	if (rc < 0) {
		snprintf(err, errlen, "tc filter: %s", strerror(-rc));
		sh->ndevs = i + 1;
		detach(sh, i);
		sh->ndevs = i;
		return -1;
	}
	sh->ndevs = i + 1;
	return 0;
}

bool
shield_attached(const struct shield *sh, int ifindex)
{
	unsigned i;

	for (i = 0; i < sh->ndevs; i++)
		if (sh->ifindex[i] == ifindex)
			return true;
	return false;
}

void *
shield_block(struct shield *sh, const char *name, size_t bytes, bool *kept)
{
	uint32_t n = (uint32_t)((bytes + 7) / 8);
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	char path[512];
	void *mem;
	int fd = -1;

	*kept = false;
	if (!sh->pinned || sh->nblocks == SHIELD_MAX_BLOCKS ||
	    pin_path(sh->pin_dir, name, path, sizeof(path)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (sh->kept && (fd = bpf_obj_get(path)) >= 0) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		*kept = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
			info.type == BPF_MAP_TYPE_ARRAY &&
			info.value_size == 8 && info.max_entries == n &&
			(info.map_flags & BPF_F_MMAPABLE);
		if (!*kept) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		(void)unlink(path);
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4, 8, n, &o);
		if (fd < 0)
			return NULL;
		if (bpf_obj_pin(fd, path) < 0) {
			close(fd);
			return NULL;
		}
	}
	mem = mmap(NULL, (size_t)n * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return NULL;
	sh->blocks[sh->nblocks].mem = mem;
	sh->blocks[sh->nblocks++].len = (size_t)n * 8;
	return mem;
}

uint64_t *
shield_tickets(struct shield *sh, unsigned worker)
{
	if (!sh->tickets || worker >= SHIELD_MAX_WORKERS)
		return NULL;
	return &sh->tickets[SHIELD_TICKET_SLOT(worker, 0)];
}

int
shield_ring(struct shield *sh, unsigned worker)
{
	uint32_t key = worker, id;
	int fd;

	if (worker >= SHIELD_MAX_WORKERS) {
		errno = EINVAL;
		return -1;
	}
	if (sh->ring_fd[worker] >= 0)
		return sh->ring_fd[worker];
	/* A predecessor's, with what it has not read yet. */
	if (sh->kept && bpf_map_lookup_elem(sh->rings_fd, &key, &id) == 0 &&
	    (fd = bpf_map_get_fd_by_id(id)) >= 0) {
		sh->ring_fd[worker] = fd;
		return fd;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "shield_ring", 0, 0,
			    SHIELD_RING_BYTES, NULL);
	if (fd < 0)
		return -1;
	if (bpf_map_update_elem(sh->rings_fd, &key, &fd, BPF_ANY) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	sh->ring_fd[worker] = fd;
	return fd;
}

int
shield_set_config(struct shield *sh, const struct shield_config *c)
{
	uint32_t zero = 0;

	return bpf_map_update_elem(sh->config_fd, &zero, c, BPF_ANY);
}

int
shield_set_service(struct shield *sh, const struct shield_service_key *k,
		   const struct shield_service *svc)
{
	if (!svc)
		return bpf_map_delete_elem(sh->services_fd, k) < 0 &&
		       errno != ENOENT ? -1 : 0;
	return bpf_map_update_elem(sh->services_fd, k, svc, BPF_ANY);
}

/* Deletes every key of map fd (len bytes each, at most PRUNE_MAX of them)
 * that is not among the n at keep. */
#define PRUNE_MAX	SHIELD_MAX_PREFIXES
#define PRUNE_KEY_MAX	32

static int
prune(int fd, const void *keep, unsigned n, size_t len)
{
	uint8_t k[PRUNE_KEY_MAX], next[PRUNE_KEY_MAX];
	uint8_t gone[PRUNE_MAX][PRUNE_KEY_MAX];
	const void *prev = NULL;
	unsigned i, ngone = 0;

	if (len > PRUNE_KEY_MAX)
		return -1;
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		for (i = 0; i < n; i++)
			if (!memcmp((const uint8_t *)keep + i * len, next, len))
				break;
		if (i == n && ngone < PRUNE_MAX)
			memcpy(gone[ngone++], next, len);
		memcpy(k, next, len);
		prev = k;
	}
	for (i = 0; i < ngone; i++)
		if (bpf_map_delete_elem(fd, gone[i]) < 0 && errno != ENOENT)
			return -1;
	return 0;
}

int
shield_prune_services(struct shield *sh, const struct shield_service_key *keep,
		      unsigned n)
{
	return prune(sh->services_fd, keep, n, sizeof(*keep));
}

/* Map fd holds exactly the n keys at keys, len bytes each. */
static int
set_exactly(int fd, const void *keys, unsigned n, size_t len)
{
	uint8_t one = 1;
	unsigned i;

	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const uint8_t *)keys + i * len,
					&one, BPF_ANY) < 0)
			return -1;
	return prune(fd, keys, n, len);
}

int
shield_set_list(struct shield *sh, bool allow, const struct shield_prefix *p,
		unsigned n)
{
	return set_exactly(allow ? sh->allow_fd : sh->deny_fd, p, n,
			   sizeof(*p));
}

int
shield_set_addrs(struct shield *sh, const struct shield_addr *a, unsigned n)
{
	return set_exactly(sh->addrs_fd, a, n, sizeof(*a));
}

static bool
same_tuple(const struct shield_tuple *a, const struct shield_tuple *b)
{
	return a->cport == b->cport && !memcmp(a, b, sizeof(*a));
}

/* Takes t out of list[0..*n), where it is at most once, and its slot
 * from slots[] beside it when there are any. */
static void
unlist(struct shield_tuple *list, uint32_t *slots, unsigned *n,
       const struct shield_tuple *t)
{
	unsigned i;

	for (i = 0; i < *n; i++)
		if (same_tuple(&list[i], t)) {
			--*n;
			list[i] = list[*n];
			if (slots)
				slots[i] = slots[*n];
			return;
		}
}

unsigned
shield_flows_note(struct shield *sh, struct shield_flows *b,
		  const struct shield_tuple *t, uint32_t slot, bool live)
{
	unsigned refused = 0;

	if (b->nadd == SHIELD_FLOW_BATCH || b->ndel == SHIELD_FLOW_BATCH)
		refused = shield_flows_flush(sh, b);
	/* A tuple ended and made again (or made and ended) in one batch
	 * is written once, as it stands last; an end is written even so,
	 * since the map may hold the tuple from an earlier batch. */
	unlist(b->add, b->slot, &b->nadd, t);
	unlist(b->del, NULL, &b->ndel, t);
	if (live) {
		b->slot[b->nadd] = slot;
		b->add[b->nadd++] = *t;
	} else {
		b->del[b->ndel++] = *t;
	}
	return refused;
}

/* The batch calls stop at the first key that fails (a delete's ENOENT:
 * the tuple's add was refused): that one is skipped and the rest go on. */
unsigned
shield_flows_flush(struct shield *sh, struct shield_flows *b)
{
	unsigned done, refused = 0;

	for (done = 0; done < b->ndel;) {
		uint32_t n = b->ndel - done;

		if (bpf_map_delete_batch(sh->flows_fd, &b->del[done], &n,
					 NULL) < 0) {
			if (errno != ENOENT)
				refused++;
			n++;
		}
		done += n;
	}
	for (done = 0; done < b->nadd;) {
		uint32_t n = b->nadd - done;

		if (bpf_map_update_batch(sh->flows_fd, &b->add[done],
					 &b->slot[done], &n, NULL) < 0) {
			refused++;
			n++;
		}
		done += n;
	}
	b->nadd = b->ndel = 0;
	return refused;
}

int
shield_counters(const struct shield *sh, uint64_t out[SHIELD_COUNTER_MAX])
{
	uint64_t per_cpu[512];
	uint32_t c;
	unsigned i;

	if (sh->ncpus > sizeof(per_cpu) / sizeof(per_cpu[0]))
		return -1;
	for (c = 0; c < SHIELD_COUNTER_MAX; c++) {
		out[c] = 0;
		if (bpf_map_lookup_elem(sh->counters_fd, &c, per_cpu) < 0)
			return -1;
		for (i = 0; i < sh->ncpus; i++)
			out[c] += per_cpu[i];
	}
	return 0;
}

/* One pass over the interfaces: how many shields it removed; *left counts
 * those it found but could not remove. */
static int
remove_stale_pass(int *left)
{
	struct if_nameindex *all = if_nameindex(), *i;
	int removed = 0;

	*left = 0;
	for (i = all; i && i->if_index; i++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)i->if_index,
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE,
			    .priority = TC_PRIORITY);
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd;

		if (bpf_tc_query(&hook, &opts) < 0 || !opts.prog_id)
			continue;
		fd = bpf_prog_get_fd_by_id(opts.prog_id);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
		    !strcmp(info.name, "shield")) {
			LIBBPF_OPTS(bpf_tc_opts, gone, .handle = TC_HANDLE,
				    .priority = TC_PRIORITY);

			if (bpf_tc_detach(&hook, &gone) == 0)
				removed++;
			else
				(*left)++;
		}
		close(fd);
	}
	if (all)
		if_freenameindex(all);
	return removed;
}

int
shield_remove_stale(int *left)
{
	int removed = 0, pass;

	libbpf_set_print(quiet);
	/* Again while some would not go: a netlink request can fail for
	 * a moment (a busy machine, a link changing). */
	for (pass = 0; pass < STALE_PASSES; pass++) {
		removed += remove_stale_pass(left);
		if (!*left)
			break;
	}
	return removed;
}
