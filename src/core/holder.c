/*
 * holder.c: who holds a lease, and whether that holder is gone.
 *
 * A claim writes its holder into the lease's name (",hHOLDER", name.c):
 * it costs the claim no system call, and a lease whose name one rename
 * made can never say another holder.  Which process that is: its pid and
 * its start (clock ticks after boot, which a pid used again does not
 * share), in which pid space (a hash of the boot's ID and of the pid and
 * time namespaces: where that pid and that start mean that process), its
 * user, and when this attempt was claimed.
 *
 * A worker or mq-relay push holds what it claims while it lives (bound,
 * mq_holder_bind): when it is gone (no such pid, another process under
 * that pid, a zombie) and so are the process groups of the jobs it ran
 * (a job's children outlive its first process), its hold is gone too, and
 * the next claim or sweep ends those leases at once (mq_orphans), as if
 * they had run out.  mq-recv hands its receipts to whoever reads them: its
 * leases run to their end whatever becomes of it.  A holder of another pid
 * space (a container's pid namespace, another host, another boot) is
 * never judged: its lease runs to its end.  Nor is anything where this
 * process cannot tell (no /proc, or one of another pid namespace).
 *
 * holders/ in the spool root holds what a name has no room for:
 *	holders/SPACE			a pid space: host=, boot=, pidns=, timens=
 *	holders/SPACE.PID.START		a bound holder: tool=, command=, jobs=
 * (the numbers in hex, as in the name; jobs: the process groups of the
 * jobs it runs).  A bound holder's file is the claims' index of whom to
 * look at: made before its first claim, written again as its jobs start,
 * removed at its exit (mq_holder_leave), or once it is gone and its
 * leases were ended.  Files are written whole (tmp/ID,holder, then a
 * rename) and not synced: after a power cut a holder unknown is judged
 * by mq-sweep's look at every lease.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define HOLDERS		"holders"
/* The gone holders one look deals with; the rest, the next. */
#define GONE_MAX	64
/* The jobs a bound holder's file names. */
#define JOBS_MAX	64
/* Holders described that a listing keeps (mq-ls, mq-top). */
#define DESCRIBED_MAX	16

/* This process, as a holder. */
static struct {
	int	 ready;
	struct mq_holder h;	/* since: 0 */
	char	 host[256];
	char	 boot[64];
	unsigned long long ns[2];	/* pid, time namespaces */
	int	 bound;
	char	 tool[32];
	char	 command[512];
	long	 jobs[JOBS_MAX];
	size_t	 njobs;
} self;

/* FNV-1a: the pid space's name, 32 bits. */
static uint32_t
fnv1a(const char *s, uint32_t h)
{
	while (*s != '\0') {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

/*
 * This process: pid, user, start, and its pid space, known only where
 * its own start is: a space says that its holders' starts can be judged.
 */
static void
self_init(void)
{
	unsigned long long start;
	char ns[64];
	int zombie;

	if (self.ready)
		return;
	self.ready = 1;
	self.h.kind = self.bound ? MQ_HOLDER_BOUND : MQ_HOLDER_RECEIPT;
	self.h.pid = getpid();
	self.h.uid = getuid();
	if (mq_proc_start(self.h.pid, &start, &zombie) == -1 ||
	    mq_proc_space(self.boot, sizeof(self.boot), self.ns) == -1)
		return;
	self.h.start = start;
	snprintf(ns, sizeof(ns), ":%llu:%llu", self.ns[0], self.ns[1]);
	self.h.space = fnv1a(ns, fnv1a(self.boot, 2166136261u));
	if (self.h.space == 0)
		self.h.space = 1;
}

static const char *
self_host(void)
{
	struct utsname u;

	if (self.host[0] == '\0' && uname(&u) == 0)
		strlcpy(self.host, u.nodename, sizeof(self.host));
	return self.host;
}

/*
 * From now on this process holds what it claims while it lives (a
 * worker, mq-relay push); tool and command say what it is.  Before its
 * first claim.
 */
void
mq_holder_bind(const char *tool, const char *command)
{
	self.bound = 1;
	if (self.ready)
		self.h.kind = MQ_HOLDER_BOUND;
	strlcpy(self.tool, tool, sizeof(self.tool));
	strlcpy(self.command, command, sizeof(self.command));
}

/* This process as the holder of a claim made at now_ms. */
void
mq_holder_self(struct mq_holder *h, uint64_t now_ms)
{
	self_init();
	*h = self.h;
	h->since = now_ms / 1000;
}

/* holders/, made if need be. */
static int
holders_dir(struct mq_spool *sp, int make)
{
	if (sp->holders == -1 &&
	    (sp->holders = mq_opendirat(sp->fd, HOLDERS)) == -1 &&
	    errno == ENOENT && make)
		sp->holders = mq_spool_topdir(sp, HOLDERS);
	return sp->holders;
}

/* Appends KEY=VALUE and a newline to buf (len so far): control bytes '?'. */
static size_t
put(char *buf, size_t size, size_t len, const char *key, const char *v)
{
	len += snprintf(buf + len, size - len, "%s=", key);
	for (; *v != '\0' && len + 2 < size; v++)
		buf[len++] = (unsigned char)*v < ' ' || *v == 0x7f ? '?' : *v;
	buf[len++] = '\n';
	buf[len] = '\0';
	return len;
}

/*
 * Writes holders/name whole: in tmp/ first (as "ID,holder", which
 * mq-sweep removes if a crash leaves it), then renamed.
 */
static int
record(struct mq_spool *sp, const char *name, int space)
{
	char tmp[MQ_ID_LEN + 16], text[1536], v[64 + 21 * JOBS_MAX];
	size_t len = 0, i, vlen;
	int fd, r, saved;

	if (space) {
		len = put(text, sizeof(text), len, "host", self_host());
		len = put(text, sizeof(text), len, "boot", self.boot);
		snprintf(v, sizeof(v), "%llu", self.ns[0]);
		len = put(text, sizeof(text), len, "pidns", v);
		snprintf(v, sizeof(v), "%llu", self.ns[1]);
		len = put(text, sizeof(text), len, "timens", v);
	} else {
		len = put(text, sizeof(text), len, "tool", self.tool);
		len = put(text, sizeof(text), len, "command", self.command);
		v[0] = '\0';
		for (i = vlen = 0; i < self.njobs; i++)
			vlen += snprintf(v + vlen, sizeof(v) - vlen, "%s%ld",
			    i > 0 ? " " : "", self.jobs[i]);
		len = put(text, sizeof(text), len, "jobs", v);
	}
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	mq_id_new(tmp);
	strlcat(tmp, MQ_HOLDER_TMP, sizeof(tmp));
	if ((fd = openat(sp->tmp, tmp, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, sp->fmode)) == -1)
		return -1;
	r = write(fd, text, len) == (ssize_t)len ? 0 : -1;
	saved = errno;
	close(fd);
	if (r == 0 && renameat(sp->tmp, tmp, sp->holders, name) == 0)
		return 0;
	if (r == 0)
		saved = errno;
	(void)unlinkat(sp->tmp, tmp, 0);
	errno = saved;
	return -1;
}

static void
space_name(char *buf, size_t size, uint32_t space)
{
	snprintf(buf, size, "%08" PRIx32, space);
}

static void
bound_name(char *buf, size_t size, const struct mq_holder *h)
{
	snprintf(buf, size, "%08" PRIx32 ".%" PRIx32 ".%" PRIx64, h->space,
	    h->pid, h->start);
}

/*
 * Before a process' first claim from sp: its pid space is recorded, and a
 * bound holder itself.  A failure costs only what the record would have
 * told: the claim goes on.
 */
void
mq_holder_enter(struct mq_spool *sp)
{
	char name[64];

	if (sp->holder_entered)
		return;
	sp->holder_entered = 1;
	self_init();
	if (self.h.space == 0 || holders_dir(sp, 1) == -1)
		return;
	space_name(name, sizeof(name), self.h.space);
	if (faccessat(sp->holders, name, F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    errno == ENOENT)
		(void)record(sp, name, 1);
	if (self.bound) {
		bound_name(name, sizeof(name), &self.h);
		(void)record(sp, name, 0);
	}
}

/*
 * A bound holder's jobs now (their process groups): its file says them,
 * so that it is not judged gone while one of them runs on without it.
 * Written as soon as a job is started.
 */
int
mq_holder_jobs(struct mq_spool *sp, const long *pgids, size_t n)
{
	char name[64];

	if (!sp->holder_entered || !self.bound || self.h.space == 0 ||
	    sp->holders == -1)
		return 0;
	self.njobs = n < JOBS_MAX ? n : JOBS_MAX;
	memcpy(self.jobs, pgids, self.njobs * sizeof(*pgids));
	bound_name(name, sizeof(name), &self.h);
	return record(sp, name, 0);
}

/* At a bound holder's end: it holds nothing any more. */
void
mq_holder_leave(struct mq_spool *sp)
{
	char name[64];

	if (!sp->holder_entered || !self.bound || sp->holders == -1)
		return;
	bound_name(name, sizeof(name), &self.h);
	(void)unlinkat(sp->holders, name, 0);
}

/*
 * Reads holders/name's KEY=VALUE lines: the value of key into buf ("" when
 * none).  -1 when the file cannot be read.
 */
static int
lookup(struct mq_spool *sp, const char *name, const char *key, char *buf,
    size_t size)
{
	char text[2048], *line, *next;
	size_t klen = strlen(key);
	ssize_t n;
	int fd, saved;

	buf[0] = '\0';
	if (holders_dir(sp, 0) == -1 ||
	    (fd = openat(sp->holders, name, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return -1;
	text[n] = '\0';
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
			strlcpy(buf, line + klen + 1, size);
			return 0;
		}
	}
	return 0;
}

/*
 * Whether holders/SPACE of our space is ours: its boot and namespaces
 * ours, not those of another space whose hash is the same.  Known once.
 */
static int
space_ours(struct mq_spool *sp)
{
	char name[16], v[64], ns[32];
	int ok;

	if (sp->space_ok != 0)
		return sp->space_ok == 1;
	space_name(name, sizeof(name), self.h.space);
	ok = lookup(sp, name, "boot", v, sizeof(v)) == 0 &&
	    strcmp(v, self.boot) == 0;
	snprintf(ns, sizeof(ns), "%llu", self.ns[0]);
	ok = ok && lookup(sp, name, "pidns", v, sizeof(v)) == 0 &&
	    strcmp(v, ns) == 0;
	snprintf(ns, sizeof(ns), "%llu", self.ns[1]);
	ok = ok && lookup(sp, name, "timens", v, sizeof(v)) == 0 &&
	    strcmp(v, ns) == 0;
	sp->space_ok = ok ? 1 : -1;
	return ok;
}

/* Whether a job of the bound holder h runs on: a process group of it. */
static int
jobs_live(struct mq_spool *sp, const struct mq_holder *h)
{
	char name[64], v[64 + 21 * JOBS_MAX], *p, *end;
	long pgid;

	bound_name(name, sizeof(name), h);
	if (lookup(sp, name, "jobs", v, sizeof(v)) == -1)
		return 0;
	for (p = v; *p != '\0'; p = end) {
		pgid = strtol(p, &end, 10);
		if (end == p || pgid <= 1)
			break;
		if (kill(-pgid, 0) == 0 || errno != ESRCH)
			return 1;
		while (*end == ' ')
			end++;
	}
	return 0;
}

/*
 * Whether the process h names is gone, as this process can prove: 1 gone,
 * 0 alive or not known.
 */
static int
judge(struct mq_spool *sp, const struct mq_holder *h)
{
	unsigned long long start;
	int zombie;

	if (h->kind != MQ_HOLDER_BOUND || h->space == 0)
		return 0;
	self_init();
	if (self.h.space == 0 || h->space != self.h.space)
		return 0;
	if (h->pid == self.h.pid && h->start == self.h.start)
		return 0;
	if (!space_ours(sp))
		return 0;
	if (kill(h->pid, 0) == 0 || errno != ESRCH) {
		/* Alive, or ours to know nothing of (hidepid): not proven. */
		if (mq_proc_start(h->pid, &start, &zombie) == -1)
			return 0;
		if (!zombie && start == h->start)
			return 0;
	}
	return !jobs_live(sp, h);
}

/* Whether h is gone (1) or not known to be (0); verdicts kept in j. */
int
mq_holder_gone(struct mq_judge *j, struct mq_spool *sp,
    const struct mq_holder *h)
{
	size_t i;
	int gone;

	if (h->kind != MQ_HOLDER_BOUND)
		return 0;
	for (i = 0; i < j->n; i++)
		if (j->v[i].space == h->space && j->v[i].pid == h->pid &&
		    j->v[i].start == h->start)
			return j->v[i].gone;
	gone = judge(sp, h);
	i = j->n < MQ_JUDGE_MAX ? j->n++ : j->next++ % MQ_JUDGE_MAX;
	j->v[i].space = h->space;
	j->v[i].pid = h->pid;
	j->v[i].start = h->start;
	j->v[i].gone = gone;
	return gone;
}

/*
 * What is known of h besides its name: the host (ours when it is of our
 * pid space), the process' start, and a bound holder's tool and command.
 * Empty when unknown.  The holders described last are kept: a listing
 * meets each many times.
 */
void
mq_holder_describe(struct mq_spool *sp, const struct mq_holder *h,
    struct mq_holder_info *info)
{
	static struct {
		struct mq_holder h;
		dev_t	 dev;
		ino_t	 ino;
		struct mq_holder_info info;
	} kept[DESCRIBED_MAX];
	static size_t nkept, next;
	unsigned long long ms;
	char name[64];
	size_t i;

	for (i = 0; i < nkept; i++)
		if (kept[i].h.kind == h->kind && kept[i].h.space == h->space &&
		    kept[i].h.pid == h->pid && kept[i].h.start == h->start &&
		    kept[i].dev == sp->dev && kept[i].ino == sp->ino) {
			*info = kept[i].info;
			return;
		}
	memset(info, 0, sizeof(*info));
	self_init();
	if (h->space != 0 && h->space == self.h.space) {
		strlcpy(info->host, self_host(), sizeof(info->host));
		if (mq_proc_started_ms(h->start, &ms) == 0)
			info->started_ms = ms;
	} else if (h->space != 0) {
		space_name(name, sizeof(name), h->space);
		(void)lookup(sp, name, "host", info->host, sizeof(info->host));
	}
	if (h->kind == MQ_HOLDER_BOUND) {
		bound_name(name, sizeof(name), h);
		(void)lookup(sp, name, "tool", info->tool, sizeof(info->tool));
		(void)lookup(sp, name, "command", info->command,
		    sizeof(info->command));
	}
	i = nkept < DESCRIBED_MAX ? nkept++ : next++ % DESCRIBED_MAX;
	kept[i].h = *h;
	kept[i].dev = sp->dev;
	kept[i].ino = sp->ino;
	kept[i].info = *info;
}

/* A bound holder's file name, parsed. */
static int
bound_parse(const char *s, struct mq_holder *h)
{
	char *end;
	unsigned long long v;

	memset(h, 0, sizeof(*h));
	h->kind = MQ_HOLDER_BOUND;
	if (strlen(s) < 10 || s[8] != '.')
		return -1;
	errno = 0;
	h->space = strtoul(s, &end, 16);
	if (end != s + 8 || (v = strtoull(s + 9, &end, 16), *end != '.') ||
	    v > UINT32_MAX)
		return -1;
	h->pid = v;
	h->start = strtoull(end + 1, &end, 16);
	return *end == '\0' && errno == 0 ? 0 : -1;
}

static int
is_bound(const char *s)
{
	struct mq_holder h;

	return bound_parse(s, &h) == 0;
}

/* What one look for orphans found and does. */
struct orphans {
	struct mq_spool	*sp;
	uint64_t	 now;
	int		 every;		/* judge every lease, not the gone only */
	struct mq_judge	*judge;
	struct mq_holder gone[GONE_MAX];
	size_t		 ngone;
	struct mq_bucket to;		/* cur/'s bucket of now */
	int		 failed;
	int		 ended;
};

static int
is_gone(const struct orphans *o, const struct mq_holder *h)
{
	size_t i;

	for (i = 0; i < o->ngone; i++)
		if (o->gone[i].space == h->space && o->gone[i].pid == h->pid &&
		    o->gone[i].start == h->start)
			return 1;
	return 0;
}

/* A lease of cur/: ended now if its holder is gone. */
static int
end_one(void *arg, int dirfd, const char *name)
{
	struct orphans *o = arg;
	struct mq_name nm;
	char newname[MQ_NAME_MAX];
	uint64_t secs;

	if (mq_name_parse(name, MQ_CUR, &nm) == -1 || nm.ms <= o->now ||
	    nm.holder.kind != MQ_HOLDER_BOUND)
		return 0;
	if (o->every ? !mq_holder_gone(o->judge, o->sp, &nm.holder) :
	    !is_gone(o, &nm.holder))
		return 0;
	nm.ms = o->now;
	secs = mq_cur_bucket(nm.ms);
	if (mq_name_format(newname, sizeof(newname), MQ_CUR, &nm) == -1)
		goto fail;
	if (o->to.fd == -1 || o->to.secs != secs) {
		mq_closefd(&o->to.fd);
		if (mq_cur_bucket_format(o->to.name, sizeof(o->to.name),
		    secs) == -1 || (o->to.fd = mq_spool_subdir(o->sp,
		    o->sp->cur, o->to.name, MQ_SUBDIR_SPARES)) == -1)
			goto fail;
		o->to.secs = secs;
	}
	/* Its holder is gone: no one but a claimer or a sweep moves it. */
	if (renameat(dirfd, name, o->to.fd, newname) == -1) {
		if (errno == ENOENT)
			return 0;
		goto fail;
	}
	o->ended++;
	mq_log_begin(o->sp, "orphan", nm.id);
	mq_log_num("attempt", nm.attempts);
	mq_log_num("holder_pid", nm.holder.pid);
	mq_log_end();
	return 0;
fail:
	o->failed = errno != 0 ? errno : EIO;
	return 0;
}

static int
bucket_one(void *arg, int curfd, const char *name)
{
	struct orphans *o = arg;
	uint64_t secs;
	int fd;

	/* Leases that ran out already are the expired pass's. */
	if (mq_cur_bucket_parse(name, &secs) == -1 || secs * 1000 <= o->now)
		return 0;
	if ((fd = mq_opendirat(curfd, name)) == -1)
		return 0;
	if (mq_dir_each(fd, DT_REG, end_one, o) == -1 && errno == ENOMEM)
		o->failed = ENOMEM;
	close(fd);
	return 0;
}

/*
 * Reads holders/: the gone among the bound; those alive of our pid space,
 * which may go at any moment, counted in sp (a waiting claimer looks
 * again for them).
 */
static int
find_gone(struct orphans *o)
{
	struct mq_names names;
	struct mq_holder h;
	size_t i;

	o->sp->holders_live = 0;
	if (holders_dir(o->sp, 0) == -1)
		return errno == ENOENT ? 0 : -1;
	if (mq_names_read(o->sp->holders, DT_REG, is_bound, &names) == -1)
		return -1;
	for (i = 0; i < names.n; i++) {
		bound_parse(names.v[i], &h);
		if (h.space != self.h.space || (h.pid == self.h.pid &&
		    h.start == self.h.start))
			continue;
		if (!mq_holder_gone(o->judge, o->sp, &h))
			o->sp->holders_live++;
		else if (o->ngone < GONE_MAX)
			o->gone[o->ngone++] = h;
	}
	mq_names_free(&names);
	return 0;
}

/*
 * Ends at once every lease whose bound holder is gone (its deadline made
 * now: the next claim takes it as a lease run out, its attempt counted as
 * for one), and forgets those holders.  A claim looks (every 0) only at
 * those holders/ lists, and at most once a second unless force; mq-sweep
 * judges every lease.  Returns the leases ended, or -1.
 */
int
mq_orphans(struct mq_spool *sp, uint64_t now, int every, int force)
{
	struct mq_judge judge = { 0 };
	struct orphans o;
	char name[64];
	size_t i;

	if (!force && sp->orphans_looked != 0 &&
	    now < sp->orphans_looked + MQ_ORPHANS_EVERY_MS)
		return 0;
	sp->orphans_looked = now;
	self_init();
	if (self.h.space == 0)
		return 0;
	memset(&o, 0, sizeof(o));
	o.sp = sp;
	o.now = now;
	o.every = every;
	o.judge = &judge;
	o.to.fd = -1;
	if (find_gone(&o) == -1)
		return -1;
	if (!every && o.ngone == 0)
		return 0;
	if (mq_dir_each(sp->cur, DT_DIR, bucket_one, &o) == -1 &&
	    o.failed == 0)
		o.failed = errno;
	mq_closefd(&o.to.fd);
	if (o.failed != 0) {
		errno = o.failed;
		return -1;
	}
	/* Every lease of theirs ended: they are forgotten. */
	for (i = 0; i < o.ngone; i++) {
		bound_name(name, sizeof(name), &o.gone[i]);
		(void)unlinkat(sp->holders, name, 0);
	}
	return o.ended;
}
