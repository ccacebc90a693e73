/*
 * holder.c: who holds a lease, and whether that holder is gone.
 *
 * A claim writes its holder into the lease's name (",hHOLDER", name.c):
 * it costs the claim no system call, and a lease whose name one rename
 * made can never say another holder.  Which process that is: its pid and
 * its start (clock ticks after boot, which a pid used again does not
 * share), in which pid space (a hash of the boot's ID and the pid
 * namespace: where that pid means that process), its user, and when this
 * attempt was claimed.
 *
 * A worker or mq-relay push holds what it claims while it lives (bound,
 * mq_holder_bind): when it is gone (no such pid, another process under
 * that pid, a zombie, or its host booted since) so is its hold, and the
 * next claim or sweep ends those leases at once (mq_orphans), as if they
 * had run out.  mq-recv hands its receipts to whoever reads them: its
 * leases run to their end whatever becomes of it.  A holder in another
 * pid space of this boot (a container's pid namespace), or on another
 * host, is never judged: its lease runs to its end.
 *
 * holders/ in the spool root holds what a name has no room for:
 *	holders/SPACE			a pid space: host=, boot=, pidns=
 *	holders/SPACE.PID.START		a bound holder: tool=, command=
 * (the numbers in hex, as in the name).  A bound holder's file is the
 * claims' index of whom to look at: made before its first claim,
 * removed at its exit (mq_holder_leave), or once it is gone and its
 * leases were ended.  The files are not synced: after a power cut a
 * holder unknown is judged by mq-sweep's look at every lease.
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

/* This process, as a holder. */
static struct {
	int	 ready;
	struct mq_holder h;	/* since: 0 */
	char	 host[256];
	char	 boot[64];
	unsigned long long pidns;
	int	 bound;
	char	 tool[32];
	char	 command[512];
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

static void
self_init(void)
{
	struct utsname u;
	unsigned long long start;
	char ns[32];
	int zombie;

	if (self.ready)
		return;
	self.ready = 1;
	self.h.kind = self.bound ? MQ_HOLDER_BOUND : MQ_HOLDER_RECEIPT;
	self.h.pid = getpid();
	self.h.uid = getuid();
	if (uname(&u) == 0)
		strlcpy(self.host, u.nodename, sizeof(self.host));
	if (mq_proc_start(self.h.pid, &start, &zombie) == 0)
		self.h.start = start;
	if (mq_proc_space(self.boot, sizeof(self.boot), &self.pidns) == 0) {
		snprintf(ns, sizeof(ns), ":%llu", self.pidns);
		self.h.space = fnv1a(ns, fnv1a(self.boot, 2166136261u));
		if (self.h.space == 0)
			self.h.space = 1;
	}
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
	if (sp->holders == -1)
		sp->holders = make ? mq_spool_topdir(sp, HOLDERS) :
		    mq_opendirat(sp->fd, HOLDERS);
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

/* Writes holders/name whole (by a rename): the pid space's or ours. */
static int
record(struct mq_spool *sp, const char *name, int space)
{
	char tmp[64], text[1024], ns[32];
	size_t len = 0;
	int fd, r, saved;

	if (space) {
		len = put(text, sizeof(text), len, "host", self.host);
		len = put(text, sizeof(text), len, "boot", self.boot);
		snprintf(ns, sizeof(ns), "%llu", self.pidns);
		len = put(text, sizeof(text), len, "pidns", ns);
	} else {
		len = put(text, sizeof(text), len, "tool", self.tool);
		len = put(text, sizeof(text), len, "command", self.command);
	}
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	if ((fd = openat(sp->holders, tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, sp->fmode)) == -1)
		return -1;
	r = write(fd, text, len) == (ssize_t)len ? 0 : -1;
	saved = errno;
	close(fd);
	if (r == 0 && renameat(sp->holders, tmp, sp->holders, name) == 0)
		return 0;
	if (r == 0)
		saved = errno;
	(void)unlinkat(sp->holders, tmp, 0);
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
 * Whether the process h names is gone, as this process can prove: 1 gone,
 * 0 alive or not known.
 */
static int
judge(struct mq_spool *sp, const struct mq_holder *h)
{
	unsigned long long start;
	char name[64], host[256], boot[64];
	int zombie;

	if (h->kind != MQ_HOLDER_BOUND || h->space == 0)
		return 0;
	self_init();
	if (self.h.space == 0)
		return 0;
	if (h->space == self.h.space) {
		if (h->pid == self.h.pid)
			return h->start != self.h.start;
		if (kill(h->pid, 0) == -1 && errno == ESRCH)
			return 1;
		/* Alive, or ours to know nothing of (hidepid): not proven. */
		if (mq_proc_start(h->pid, &start, &zombie) == -1)
			return 0;
		return zombie || start != h->start;
	}
	/* This host in an earlier boot: every process of it is gone. */
	space_name(name, sizeof(name), h->space);
	if (lookup(sp, name, "host", host, sizeof(host)) == -1 ||
	    lookup(sp, name, "boot", boot, sizeof(boot)) == -1)
		return 0;
	return host[0] != '\0' && boot[0] != '\0' &&
	    strcmp(host, self.host) == 0 && strcmp(boot, self.boot) != 0;
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
 * Empty when unknown.  The last holder described is kept: a listing
 * meets each many times in a row.
 */
void
mq_holder_describe(struct mq_spool *sp, const struct mq_holder *h,
    struct mq_holder_info *info)
{
	static struct mq_holder last;
	static dev_t last_dev;
	static ino_t last_ino;
	static struct mq_holder_info known;
	static unsigned long long boot_ms;
	static long hz;
	char name[64];

	if (last.kind != 0 && last.kind == h->kind && last_dev == sp->dev &&
	    last_ino == sp->ino &&
	    last.space == h->space && last.pid == h->pid &&
	    last.start == h->start) {
		*info = known;
		return;
	}
	memset(info, 0, sizeof(*info));
	self_init();
	if (h->space != 0 && h->space == self.h.space) {
		strlcpy(info->host, self.host, sizeof(info->host));
		if (boot_ms == 0 && mq_boot_ms(&boot_ms) == 0)
			hz = sysconf(_SC_CLK_TCK);
		if (boot_ms != 0 && hz > 0)
			info->started_ms = boot_ms + h->start * 1000 / hz;
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
	last = *h;
	last_dev = sp->dev;
	last_ino = sp->ino;
	known = *info;
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

/* Reads holders/: the gone among the bound; live ones counted in sp. */
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
		if (h.space == self.h.space && h.pid == self.h.pid &&
		    h.start == self.h.start)
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
 * for one), and forgets those holders.  A claim looks (every) only at
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
