// fakenccl.c: NCCL's API over host memory, for testing package dataparallel/nccl without GPUs. Ranks live
// in one process; buffers are host pointers of float32 (the only data type supported). A
// collective completes when every rank of its communicator has issued it (the n-th collective of
// each rank is matched with the n-th of the others), as NCCL orders them. Calls between
// ncclGroupStart and ncclGroupEnd on a thread are issued together at ncclGroupEnd, so one thread
// may drive every rank. It also exports cuCtxGetCurrent/cuCtxSetCurrent (a per-thread pointer), so
// it can stand in for the driver library too. Build: cc -shared -fPIC -o libfakenccl.so fakenccl.c
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
enum { ok = 0, invalidArgument = 4, invalidUsage = 5 };
typedef struct { char internal[128]; } ncclUniqueId;
enum { kAllReduce, kReduceScatter, kAllGather };
#define MAXRANKS 64
#define SLOTS 256

typedef struct {
	int kind, dtype, redop;
	const float *send;
	float *recv;
	size_t count;
} op_t;

typedef struct clique {
	ncclUniqueId id;
	int nranks, joined, refs;
	int arrived[SLOTS], done[SLOTS];
	op_t ops[SLOTS][MAXRANKS];
	struct clique *next;
} clique_t;

typedef struct {
	clique_t *cl;
	int rank, dev;
	unsigned seq;
} comm_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static clique_t *cliques;
static unsigned long long ids;

typedef struct {
	comm_t *comm;
	op_t op;
} pending_t;
static __thread int groupDepth;
static __thread pending_t pending[1024];
static __thread int npending;
static __thread void *currentCtx;

int cuCtxGetCurrent(void **ctx) { *ctx = currentCtx; return 0; }
int cuCtxSetCurrent(void *ctx) { currentCtx = ctx; return 0; }

ncclResult_t ncclGetVersion(int *v) { *v = 21899; return ok; }

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ok: return "no error";
	case invalidArgument: return "fake: invalid argument";
	case invalidUsage: return "fake: invalid usage";
	}
	return "fake: unknown";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	memset(id, 0, sizeof *id);
	pthread_mutex_lock(&mu);
	unsigned long long n = ++ids;
	pthread_mutex_unlock(&mu);
	memcpy(id->internal, "fake", 4);
	memcpy(id->internal + 8, &n, sizeof n);
	return ok;
}

static clique_t *newClique(int n) {
	clique_t *c = calloc(1, sizeof *c);
	c->nranks = n;
	c->next = cliques;
	cliques = c;
	return c;
}

ncclResult_t ncclCommInitAll(comm_t **comms, int n, const int *devs) {
	if (n < 1 || n > MAXRANKS) return invalidArgument;
	pthread_mutex_lock(&mu);
	clique_t *c = newClique(n);
	c->joined = c->refs = n;
	for (int i = 0; i < n; i++) {
		comms[i] = calloc(1, sizeof(comm_t));
		comms[i]->cl = c;
		comms[i]->rank = i;
		comms[i]->dev = devs ? devs[i] : i;
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

// ncclCommInitRank joins the clique named by id; outside a group it waits for every rank.
ncclResult_t ncclCommInitRank(comm_t **comm, int n, ncclUniqueId id, int rank) {
	if (n < 1 || n > MAXRANKS || rank < 0 || rank >= n) return invalidArgument;
	pthread_mutex_lock(&mu);
	clique_t *c = cliques;
	while (c && memcmp(&c->id, &id, sizeof id) != 0) c = c->next;
	if (!c) {
		c = newClique(n);
		c->id = id;
	}
	if (c->nranks != n) {
		pthread_mutex_unlock(&mu);
		return invalidUsage;
	}
	c->joined++;
	c->refs++;
	*comm = calloc(1, sizeof(comm_t));
	(*comm)->cl = c;
	(*comm)->rank = rank;
	(*comm)->dev = (int)(intptr_t)currentCtx; // the tests pass the device ordinal as the "context"
	pthread_cond_broadcast(&cv);
	while (groupDepth == 0 && c->joined < c->nranks) pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return ok;
}

ncclResult_t ncclCommDestroy(comm_t *c) {
	if (!c) return invalidArgument;
	free(c); // cliques are kept: tests are short
	return ok;
}

ncclResult_t ncclCommCount(const comm_t *c, int *n) { *n = c->cl->nranks; return ok; }
ncclResult_t ncclCommUserRank(const comm_t *c, int *r) { *r = c->rank; return ok; }
ncclResult_t ncclCommCuDevice(const comm_t *c, int *d) { *d = c->dev; return ok; }
ncclResult_t ncclCommGetAsyncError(comm_t *c, ncclResult_t *r) { (void)c; *r = ok; return ok; }

static float reduce(int redop, float a, float b) {
	switch (redop) {
	case 1: return a * b;
	case 2: return a > b ? a : b;
	case 3: return a < b ? a : b;
	}
	return a + b; // sum (and avg, divided afterwards)
}

// perform runs slot's collective once every rank has issued it (mu held).
static void perform(clique_t *c, int slot) {
	op_t *ops = c->ops[slot];
	int n = c->nranks;
	size_t count = ops[0].count, total = ops[0].kind == kAllReduce ? count : count * n;
	float *tmp = malloc(total * sizeof(float) + 1);
	switch (ops[0].kind) {
	case kAllReduce:
	case kReduceScatter:
		for (size_t i = 0; i < total; i++) {
			float v = ops[0].send[i];
			for (int r = 1; r < n; r++) v = reduce(ops[0].redop, v, ops[r].send[i]);
			tmp[i] = ops[0].redop == 4 ? v / n : v;
		}
		for (int r = 0; r < n; r++) {
			if (ops[0].kind == kAllReduce) memcpy(ops[r].recv, tmp, count * sizeof(float));
			else memcpy(ops[r].recv, tmp + r * count, count * sizeof(float));
		}
		break;
	case kAllGather:
		for (int r = 0; r < n; r++) memcpy(tmp + r * count, ops[r].send, count * sizeof(float));
		for (int r = 0; r < n; r++) memcpy(ops[r].recv, tmp, total * sizeof(float));
		break;
	}
	free(tmp);
	c->done[slot] = 1;
}

// issue records comm's next collective (mu held) and returns its slot.
static int issue(comm_t *comm, op_t op) {
	clique_t *c = comm->cl;
	int slot = comm->seq++ % SLOTS;
	c->ops[slot][comm->rank] = op;
	if (++c->arrived[slot] == 1) c->done[slot] = 0;
	if (c->arrived[slot] == c->nranks) {
		perform(c, slot);
		c->arrived[slot] = 0;
		pthread_cond_broadcast(&cv);
	}
	return slot;
}

static ncclResult_t submit(comm_t *comm, op_t op) {
	if (!comm || op.dtype != 7 || op.redop < 0 || op.redop > 4) return invalidArgument;
	if (groupDepth > 0) {
		pending[npending].comm = comm;
		pending[npending].op = op;
		npending++;
		return ok;
	}
	pthread_mutex_lock(&mu);
	int slot = issue(comm, op);
	while (!comm->cl->done[slot]) pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return ok;
}

ncclResult_t ncclGroupStart(void) { groupDepth++; return ok; }

ncclResult_t ncclGroupEnd(void) {
	if (groupDepth == 0) return invalidUsage;
	if (--groupDepth > 0) return ok;
	int slots[1024];
	pthread_mutex_lock(&mu);
	for (int i = 0; i < npending; i++) slots[i] = issue(pending[i].comm, pending[i].op);
	for (int i = 0; i < npending; i++)
		while (!pending[i].comm->cl->done[slots[i]]) pthread_cond_wait(&cv, &mu);
	pthread_cond_broadcast(&cv); // ranks that joined inside the group
	pthread_mutex_unlock(&mu);
	npending = 0;
	return ok;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t *c, void *st) {
	(void)st;
	return submit(c, (op_t){kAllReduce, dt, op, s, r, n});
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, comm_t *c, void *st) {
	(void)st;
	return submit(c, (op_t){kReduceScatter, dt, op, s, r, n});
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int dt, comm_t *c, void *st) {
	(void)st;
	return submit(c, (op_t){kAllGather, dt, 0, s, r, n});
}
