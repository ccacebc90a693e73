/*
 * dead.c: dead letters.  dead/ID,DIED,ATTEMPTS holds the body; reason/ID
 * holds the reason, byte for byte, unless a full file system left no room
 * for it.  reason/ is dead letters' only: the reason a live message's last
 * release gave is last/ID, a name no dead letter uses, so that a release
 * that comes too late (its lease lost to a burial) never touches a dead
 * letter's reason, and a burial that loses its rename never touches a
 * live message's.
 *
 *	bury	new/... or cur/...	-> dead/ID,DIED,A[,TTL]	mq_burial_bury
 *		tmp/ID',reason		=> reason/ID (a link)	mq_burial_bury
 *		last/ID			-> (unlinked), once buried
 *	release	tmp/ID',reason		-> last/ID, synced	mq_reason_keep
 *		(a release's reason, before its rename: receipt.c; taken
 *		back if the rename finds the lease lost: mq_reason_unkeep)
 *	redrive	deaths/ID (N records)	=> deaths/ID (N + 1)	mq_history_carry
 *		last/ID			-> (unlinked)
 *		dead/ID,DIED,A[,TTL][,dN] -> new/T/M/L/ID,0,NOW,TTL,dN+1
 *						mq_dead_redrive
 *	purge	dead/ID,DIED,A[,TTL]	-> (unlinked), and deaths/ID, last/ID
 *						mq_dead_purge
 *	sweep	reason/ID or last/ID	-> tmp/ID',reason -> (unlinked), if
 *		still the file the sweep saw	mq_reason_remove_same
 *
 * A redrive and a purge hold an flock(2) on dead/ for the whole of one
 * message (mq_dead_lock), and do nothing if dead/NAME is gone by then: two
 * of them on one dead letter never interleave, so a redrive never writes
 * a history from a stale name.  Burials, claims and acks do not take it.
 *
 * A burial of the head of an ordered group hands the group's turn on as
 * it goes, and a redrive of one of a group puts it back into its group
 * (mq_group_leave: group.c; mq_land: land.c).
 *
 * (a redrive's rename is mq_land's, land.c).  A run of burials for one
 * reason (a claim that meets expired messages, a sweep) writes the reason
 * once, in tmp/, and links it as reason/ID for each: mq_bury is a run of
 * one.  A reason is never written in place, so reasons may share a file.
 *
 * A redrive into a spool on another file system copies the body to that
 * spool's tmp/ and syncs it before the original goes (send.c writes it);
 * the reason is removed after the body moved, by redrive and purge alike,
 * and only once that is durable (mq_dead_redriven after the placer's
 * sync, mq_dead_purged after dead/'s): a power cut must not bring a dead
 * letter back without its reason.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define REASON_MAX	MQ_REASON_MAX

/*
 * Writes a reason as reason/ID, through tmp/ so that it is whole or absent.
 * The errno of a failure is kept.  This is what a burial does where hard
 * links cannot be made.
 */
static int
reason_put(struct mq_spool *sp, const char *id, const char *reason,
    size_t len)
{
	struct mq_tmpfile tf;
	char tmpname[MQ_NAME_MAX];

	snprintf(tmpname, sizeof(tmpname), "%s,reason", id);
	/* A crashed bury may have left its tmp file. */
	mq_tmp_remove(sp, tmpname);
	if (mq_tmp_create(&tf, sp, tmpname) == -1)
		return -1;
	if (mq_tmp_write(&tf, reason, len) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1 ||
	    mq_tmp_commit(&tf, sp->reason, id) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/*
 * last/, opened once per spool (sp->last); with create, made if it is
 * missing, and the root synced when it was made: a reason kept must not
 * be lost with the directory that holds it.  -1 with ENOENT: there is
 * none (no release has given a reason here yet).
 */
int
mq_last_dir(struct mq_spool *sp, int create)
{
	int made;

	if (sp->last != -1)
		return sp->last;
	if (create && (mq_mkdirat(sp->fd, MQ_DIR_LAST, sp->dmode, &made) ==
	    -1 || (made && mq_fsync_dir(sp->fd) == -1)))
		return -1;
	sp->last = mq_opendirat(sp->fd, MQ_DIR_LAST);
	return sp->last;
}

/*
 * The reason a release gives (mq-ack -r --reason, a failed job), kept as
 * last/ID while the message lives, for its death for attempts to name
 * (mq_bury_spent).  A name no dead letter uses: a release that comes too
 * late (its lease lost, the message buried meanwhile) can leave a last/ID
 * beside a dead letter, never touch the dead letter's reason/ID.  Written
 * under a name of its own in tmp/ and renamed over any earlier one, whole
 * or absent, and durable before the release's rename: a crash must not
 * leave the release done and its reason lost.  *k says which file it is,
 * for a release that then finds its lease lost to take it back.
 */
int
mq_reason_keep(struct mq_spool *sp, const char *id, const char *reason,
    size_t len, struct mq_kept *k)
{
	struct mq_tmpfile tf;
	struct stat st;
	char tid[MQ_ID_LEN + 1], tmpname[MQ_NAME_MAX];
	int last;

	if (mq_spool_need(sp, 0) == -1 || (last = mq_last_dir(sp, 1)) == -1)
		return -1;
	mq_id_new(tid);
	snprintf(tmpname, sizeof(tmpname), "%s,reason", tid);
	if (mq_tmp_create(&tf, sp, tmpname) == -1)
		return -1;
	if (mq_tmp_write(&tf, reason, len) == -1 ||
	    fstat(tf.fd, &st) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1 ||
	    mq_tmp_commit(&tf, last, id) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	return mq_fsync_dir(last);
}

/*
 * Removes dirfd/id (of last/ or reason/) only if it is still the file was
 * describes: the same device and inode, and the same mtime.  It is taken
 * into tmp/ first, under a name of its own, and looked at there, so that
 * a file renamed into its place meanwhile (a release's reason, a burial's)
 * is never the one removed: one taken by mistake is linked back, unless a
 * newer one is there by then.  Returns 0 when removed; -1 if not (errno;
 * ESTALE: another file is there now).
 */
int
mq_reason_remove_same(struct mq_spool *sp, int dirfd, const char *id,
    const struct stat *was)
{
	struct stat st;
	char tid[MQ_ID_LEN + 1], tname[MQ_NAME_MAX];

	if (mq_spool_need(sp, 0) == -1)
		return -1;
	mq_id_new(tid);
	snprintf(tname, sizeof(tname), "%s,reason", tid);
	if (renameat(dirfd, id, sp->tmp, tname) == -1)
		return -1;
	if (fstatat(sp->tmp, tname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == was->st_dev && st.st_ino == was->st_ino &&
	    st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == was->st_mtim.tv_nsec)
		return unlinkat(sp->tmp, tname, 0);
	/* Not the one listed: back in place, unless a newer one is there. */
	if (linkat(sp->tmp, tname, dirfd, id, 0) == 0 || errno == EEXIST)
		unlinkat(sp->tmp, tname, 0);
	errno = ESTALE;
	return -1;
}

/*
 * A release that gave a reason (*k) and then found its lease lost takes
 * its reason back if it is still the one it wrote: the message may be a
 * dead letter by now, and a last/ID beside one is of no use.
 */
void
mq_reason_unkeep(struct mq_spool *sp, const char *id, const struct mq_kept *k)
{
	struct stat st;
	int saved = errno;

	if (sp->last != -1 &&
	    fstatat(sp->last, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == k->dev && st.st_ino == k->ino)
		(void)mq_reason_remove_same(sp, sp->last, id, &st);
	errno = saved;
}

/*
 * The last release's reason of id is of no more use (its message buried,
 * redriven, purged, or released with a reason that found no room): it is
 * removed, as far as it can be.
 */
void
mq_reason_drop(struct mq_spool *sp, const char *id)
{
	int saved = errno;

	if (mq_last_dir(sp, 0) != -1)
		unlinkat(sp->last, id, 0);
	errno = saved;
}

/*
 * The reason of a death for attempts, one form wherever it is buried:
 * "max attempts; last: LAST" (LAST: the last release's reason, cut to
 * what a reason may hold), or "max attempts" without one (or an empty
 * one).  The caller frees it; NULL (ENOMEM) when memory ran out.
 */
char *
mq_reason_spent(const char *last, size_t len, size_t *outlen)
{
	static const char head[] = MQ_REASON_MAX_ATTEMPTS "; last: ";
	size_t hlen = sizeof(head) - 1;
	char *r;

	if (len == 0) {
		*outlen = strlen(MQ_REASON_MAX_ATTEMPTS);
		return strdup(MQ_REASON_MAX_ATTEMPTS);
	}
	if (len > REASON_MAX - hlen)
		len = REASON_MAX - hlen;
	if ((r = malloc(hlen + len + 1)) == NULL)
		return NULL;
	memcpy(r, head, hlen);
	memcpy(r + hlen, last, len);
	r[hlen + len] = '\0';
	*outlen = hlen + len;
	return r;
}

/*
 * Writes the reason that the burials of b share, as tmp/ID,reason, its
 * data durable (one fsync for the run): each link to it is made durable
 * before a rename into dead/, and a link to a reason whose data was not
 * written yet comes back from a power cut as an empty file.
 */
static int
shared_make(struct mq_burial *b)
{
	struct mq_tmpfile tf;
	struct stat st;
	char id[MQ_ID_LEN + 1];

	mq_id_new(id);
	snprintf(b->shared, sizeof(b->shared), "%s,reason", id);
	if (mq_tmp_create(&tf, b->sp, b->shared) == -1) {
		b->shared[0] = '\0';
		return -1;
	}
	if (mq_tmp_write(&tf, b->reason, b->len) == -1 ||
	    fstat(tf.fd, &st) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1) {
		mq_tmp_abort(&tf);
		b->shared[0] = '\0';
		return -1;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	return 0;
}

static void
shared_drop(struct mq_burial *b)
{
	if (b->shared[0] != '\0')
		mq_tmp_remove(b->sp, b->shared);
	b->shared[0] = '\0';
}

/*
 * Puts a link to the shared reason in place of reason/id, which is there:
 * linked in tmp/ first and renamed over it, so that a burier killed half
 * way leaves a reason there all the same.
 */
static int
reason_replace(struct mq_burial *b, const char *id)
{
	char tid[MQ_ID_LEN + 1], tname[MQ_NAME_MAX];
	int saved;

	mq_id_new(tid);
	snprintf(tname, sizeof(tname), "%s,reason", tid);
	if (linkat(b->sp->tmp, b->shared, b->sp->tmp, tname, 0) == -1)
		return -1;
	if (renameat(b->sp->tmp, tname, b->sp->reason, id) == -1) {
		saved = errno;
		unlinkat(b->sp->tmp, tname, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/*
 * Gives message id its reason: a hard link to the shared one (made at the
 * first burial), which costs one link(2) where writing a file costs four
 * calls and an inode.  reason/ holds dead letters' reasons only (a live
 * message's is in last/), so a reason in the way is an earlier death's
 * (a redrive stopped before it removed it) or that of another burier
 * racing for the same message: it is replaced, and *mine is then 0 (a
 * burial that then loses leaves it: it may be the winner's).  A shared
 * reason with all the links it can have is replaced by a new one.
 */
static int
reason_link(struct mq_burial *b, const char *id, int *mine)
{
	int i;

	*mine = 1;
	if (b->nolink)
		return reason_put(b->sp, id, b->reason, b->len);
	for (i = 0; i < MQ_RETRIES; i++) {
		if (b->shared[0] == '\0' && shared_make(b) == -1)
			return -1;
		if (linkat(b->sp->tmp, b->shared, b->sp->reason, id, 0) == 0)
			return 0;
		if (errno == EEXIST) {
			*mine = 0;
			if (reason_replace(b, id) == 0)
				return 0;
		}
		if (errno == EMLINK) {
			shared_drop(b);
		} else if (errno == EPERM || errno == ENOTSUP ||
		    errno == EOPNOTSUPP || errno == EXDEV) {
			/* No hard links here (a file system without them). */
			shared_drop(b);
			b->nolink = 1;
			return reason_put(b->sp, id, b->reason, b->len);
		} else
			return -1;
	}
	return -1;
}

/*
 * Whether reason/id is still the link this run made, not one that another
 * burier of the same message put in its place.  (Where each reason is a
 * file of its own, it is taken to be.)
 */
static int
still_mine(struct mq_burial *b, const char *id)
{
	struct stat st;

	if (b->nolink)
		return 1;
	return fstatat(b->sp->reason, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_ino == b->ino && st.st_dev == b->dev;
}

/*
 * A burial of a run of expired ones whose reason is linked, waiting for
 * the one sync of reason/ that a batch of them shares before their
 * renames (from: a dup of the caller's directory).
 */
struct mq_interment {
	int		 from;
	int		 mine;
	struct mq_name	 nm;
	char		 name[MQ_NAME_MAX];
	char		 deadname[MQ_NAME_MAX];
};

#define INTERMENTS	64	/* burials a sync of reason/ is shared by */

/* A run of burials for one reason; nothing is made before the first. */
void
mq_burial_init(struct mq_burial *b, struct mq_spool *sp, const char *reason,
    size_t len, enum mq_cause cause)
{
	memset(b, 0, sizeof(*b));
	b->sp = sp;
	b->reason = reason;
	b->len = len;
	b->cause = cause;
}

/* A burial done: counted and logged (count.c, log.c). */
static void
buried(struct mq_burial *b, const struct mq_name *nm)
{
	mq_count(b->sp, mq_count_dead(b->cause), 1);
	mq_log_begin(b->sp, "dead", nm->id);
	mq_log_str("cause", mq_cause_word[b->cause],
	    strlen(mq_cause_word[b->cause]));
	mq_log_num("attempt", nm->attempts);
	mq_log_str("reason", b->reason, b->len);
	mq_log_end();
}

/*
 * A run of burials of messages past their time to live (the spool's: ttl,
 * 0 none), with the reason "ttl": each is dead as of its expiry, not
 * of the time some claim or tool met it, so that every tool tells the
 * same time of death (mq-ls gives a message not buried yet its expiry).
 */
void
mq_burial_expired(struct mq_burial *b, struct mq_spool *sp, uint64_t ttl)
{
	mq_burial_init(b, sp, MQ_REASON_TTL, strlen(MQ_REASON_TTL),
	    MQ_CAUSE_TTL);
	b->expiry = 1;
	b->ttl = ttl;
	b->batch = 1;
}

/*
 * The renames of the burials queued (a run of expired ones), after one
 * sync of reason/ for all their reasons; one whose message is gone by
 * then takes its reason back, as mq_burial_bury does.  -1 if the sync
 * failed: nothing was renamed, and each is where it was, to be buried
 * another time.
 */
static int
inter(struct mq_burial *b)
{
	struct mq_spool *sp = b->sp;
	struct mq_interment *q;
	size_t i;
	int synced, saved = 0;

	if (b->nqueue == 0)
		return 0;
	if (!(synced = mq_fsync_dir(sp->reason) == 0))
		saved = errno;
	for (i = 0; i < b->nqueue; i++) {
		q = &b->queue[i];
		if (synced && renameat(q->from, q->name, sp->dead,
		    q->deadname) == 0) {
			mq_reason_drop(sp, q->nm.id);
			buried(b, &q->nm);
		}
		else if (q->mine && still_mine(b, q->nm.id))
			unlinkat(sp->reason, q->nm.id, 0);
		close(q->from);
	}
	b->nqueue = 0;
	errno = saved;
	return synced ? 0 : -1;
}

/*
 * The reason goes in first, so that a dead letter has one whenever there
 * is room for it; if the message is gone by the time of the rename, the
 * reason is taken back, unless it found another's in its way: two buriers
 * racing for one message (two workers meeting the same expired one) would
 * otherwise leave the winner's dead letter without its reason.  With no
 * room for a reason the message is buried without one: the body must get
 * out of the way of a full file system, and a missing reason says why it
 * is missing (see mq-dlq(1)); an earlier death's reason is then removed,
 * once the burial is done, so that it does not stand for this one.  Only
 * then does the message's last release reason (last/ID) go: a burial that
 * loses its rename leaves a live message's as it was.  The reason is
 * durable before the rename (its data, then reason/), so that a power cut
 * cannot keep the dead letter and lose or empty its reason; the rename
 * itself is not synced: after a crash it happened or the message is where
 * it was, and is buried again.
 */
int
mq_burial_bury(struct mq_burial *b, int from, const char *name,
    const struct mq_name *nm)
{
	struct mq_spool *sp = b->sp;
	struct mq_name dead = *nm;
	struct stat st;
	char deadname[MQ_NAME_MAX];
	uint64_t now = mq_now_ms(), expiry;
	int saved, with, mine, lock, r;

	dead.ms = now;
	if (b->expiry && (expiry = mq_name_expiry(nm, b->ttl)) < now)
		dead.ms = expiry;
	if (mq_spool_need(sp, 0) == -1 ||
	    mq_name_format(deadname, sizeof(deadname), MQ_DEAD, &dead) == -1)
		return -1;
	/*
	 * Buried already by another (ENOENT): its reason is not to be
	 * touched.  This only narrows the race that still_mine settles where
	 * reasons are links; where they are files of their own (no hard
	 * links), a loser that passed this look just before the winner's
	 * rename may still replace or take back the winner's reason.
	 */
	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (!(with = reason_link(b, nm->id, &mine) == 0) &&
	    !mq_spool_full(errno))
		return -1;
	/*
	 * An expired one (not of a group, which goes under its lock) waits
	 * for the sync of reason/ that a batch shares: one per burial would
	 * cost a run of a million expired messages a million syncs.  It
	 * counts as buried; if it is gone by its rename, it was buried or
	 * claimed by another, as a lost rename here would say.
	 */
	if (with && b->batch && nm->group[0] == '\0') {
		struct mq_interment *q;

		if (b->queue == NULL)
			b->queue = reallocarray(NULL, INTERMENTS,
			    sizeof(*b->queue));
		q = b->queue != NULL ? &b->queue[b->nqueue] : NULL;
		if (q == NULL ||
		    (q->from = fcntl(from, F_DUPFD_CLOEXEC, 0)) == -1) {
			saved = errno;
			if (mine && still_mine(b, nm->id))
				unlinkat(sp->reason, nm->id, 0);
			errno = saved;
			return -1;
		}
		q->mine = mine;
		q->nm = *nm;
		strlcpy(q->name, name, sizeof(q->name));
		strlcpy(q->deadname, deadname, sizeof(q->deadname));
		if (++b->nqueue == INTERMENTS)
			(void)inter(b);
		return 0;
	}
	if (with && (inter(b) == -1 || mq_fsync_dir(sp->reason) == -1)) {
		saved = errno;
		if (mine && still_mine(b, nm->id))
			unlinkat(sp->reason, nm->id, 0);
		errno = saved;
		return -1;
	}
	/*
	 * The head of a group is buried by mq_group_leave, which hands its
	 * turn on as it goes (1); another message of a group is buried
	 * under the group's lock (0: group.c).
	 */
	if ((r = mq_group_leave(sp, from, name, nm, deadname, NULL,
	    &lock)) == -1 ||
	    (r == 0 && renameat(from, name, sp->dead, deadname) == -1)) {
		saved = errno;
		mq_group_unlock(&lock);
		if (with && mine && still_mine(b, nm->id))
			unlinkat(sp->reason, nm->id, 0);
		errno = saved;
		return -1;
	}
	mq_group_unlock(&lock);
	/* A reason of an earlier death must not stand for this one. */
	if (!with)
		unlinkat(sp->reason, nm->id, 0);
	mq_reason_drop(sp, nm->id);
	buried(b, nm);
	return 0;
}

/*
 * Ends a run of burials: the burials queued are made, and the shared
 * reason leaves tmp/.
 */
void
mq_burial_end(struct mq_burial *b)
{
	int saved = errno;

	(void)inter(b);
	free(b->queue);
	b->queue = NULL;
	shared_drop(b);
	errno = saved;
}

/* One burial: from/name, a message named as nm, with reason (len bytes). */
int
mq_bury(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm, const char *reason, size_t len,
    enum mq_cause cause)
{
	struct mq_burial b;
	int r;

	mq_burial_init(&b, sp, reason, len, cause);
	r = mq_burial_bury(&b, from, name, nm);
	mq_burial_end(&b);
	return r;
}

/*
 * A message that has had its attempts, buried by whoever meets it (a
 * claim, a sweep's reclaim): its reason says the last one its releases
 * gave (last/ID: mq_reason_keep), if any; that goes once the burial is
 * done (mq_burial_bury), and stays if another took the message first.
 */
int
mq_bury_spent(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm)
{
	char *last, *reason;
	size_t len, rlen;
	int r, saved;

	/*
	 * A last reason that cannot be read is left out; memory run out
	 * buries nothing, as it would bury the message without it.
	 */
	if ((r = mq_reason_last(sp, nm->id, &last, &len)) != 0) {
		len = 0;
		if (r == -1 && errno == ENOMEM)
			return -1;
	}
	reason = mq_reason_spent(last, len, &rlen);
	free(last);
	if (reason == NULL)
		return -1;
	r = mq_bury(sp, from, name, nm, reason, rlen, MQ_CAUSE_ATTEMPTS);
	saved = errno;
	free(reason);
	errno = saved;
	return r;
}

/* What a listing of dead/ collects from look.c's walk. */
struct listing {
	struct mq_dead	*v;
	size_t		 n, cap;
	int		 by_id;		/* a search: any file of the name met */
	struct mq_matches *matches;	/* a prefix's: the IDs met, only */
	int		 failed;	/* dead/ could not be read: its errno */
};

static int
dead_met(void *arg, const struct mq_look *m)
{
	struct listing *ls = arg;
	struct mq_dead *v;
	struct stat st;

	/* A search by ID is handed any file of that name: a letter's only. */
	if (ls->by_id && (fstatat(m->dirfd, m->name, &st,
	    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISREG(st.st_mode)))
		return 0;
	if (ls->matches != NULL) {
		mq_matches_add(ls->matches, m->n.id);
		return 0;
	}
	if ((v = mq_grow(ls->v, &ls->cap, ls->n, SIZE_MAX, sizeof(*v))) ==
	    NULL)
		return -1;
	ls->v = v;
	strlcpy(ls->v[ls->n].name, m->name, sizeof(ls->v[ls->n].name));
	ls->v[ls->n++].n = m->n;
	return 0;
}

static void
dead_unread(void *arg, const char *where, int e)
{
	(void)where;
	((struct listing *)arg)->failed = e;
}

static int
dead_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mq_dead *)a)->name,
	    ((const struct mq_dead *)b)->name);
}

/*
 * The dead letters of dead/ (id: that one only; NULL: all), in ID
 * (enqueue) order: mq-ls's walk (look.c), its dead state, buried only.
 * With matches, id is a prefix, and the IDs that start with it are added
 * there, no letter listed.
 */
static int
dead_look(struct mq_spool *sp, const char *id, struct mq_matches *matches,
    struct listing *ls)
{
	struct mq_looker lk = { .states = 1u << MQ_LOOK_DEAD,
	    .buried_only = 1, .id = id, .prefix = matches != NULL,
	    .fn = dead_met, .fail = dead_unread, .arg = ls };

	memset(ls, 0, sizeof(*ls));
	ls->by_id = id != NULL;
	ls->matches = matches;
	lk.now = mq_now_ms();
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	if (mq_look(sp, &lk) == -1 || ls->failed != 0) {
		if (ls->failed != 0)
			errno = ls->failed;
		free(ls->v);
		return -1;
	}
	if (ls->n > 1)
		qsort(ls->v, ls->n, sizeof(*ls->v), dead_cmp);
	return 0;
}

/* Every dead letter, in ID (enqueue) order. */
int
mq_dead_list(struct mq_spool *sp, struct mq_dead **out, size_t *count)
{
	struct listing ls;

	if (dead_look(sp, NULL, NULL, &ls) == -1)
		return -1;
	/* Never NULL: a caller may bsearch it, whose base must not be. */
	if (ls.v == NULL && (ls.v = malloc(sizeof(*ls.v))) == NULL)
		return -1;
	*out = ls.v;
	*count = ls.n;
	return 0;
}

/*
 * Finds the dead letter with this ID; ENOENT when there is none, EINVAL
 * when id is no ID.
 */
int
mq_dead_find(struct mq_spool *sp, const char *id, struct mq_dead *out)
{
	struct listing ls;

	if (!mq_id_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	if (dead_look(sp, id, NULL, &ls) == -1)
		return -1;
	if (ls.n > 0)
		*out = ls.v[0];
	free(ls.v);
	if (ls.n == 0) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/*
 * The dead letter that s names, as an operator gives an ID: as
 * mq_find_match, among the dead letters of dead/ only.
 */
int
mq_dead_match(struct mq_spool *sp, const char *s, struct mq_matches *m)
{
	struct listing ls;
	int r;

	if ((r = mq_matches_init(m, s)) != 1)
		return r == 0 ? MQ_EX_OK : MQ_EX_USAGE;
	if (dead_look(sp, s, m, &ls) == -1)
		return MQ_EX_SYS;
	free(ls.v);
	return mq_matches_status(m);
}

/*
 * Reads dirfd/id, a reason, into *buf (the caller frees it).  Returns 1
 * (and no bytes) when there is none; -1 (and no bytes) when it cannot be
 * read: not a regular file (EBADMSG), a symbolic link (ELOOP), a read
 * error.
 */
static int
reason_read(int dirfd, const char *id, char **buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd, saved;

	fd = openat(dirfd, id, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 1 : -1;
	if (fstat(fd, &st) == -1)
		saved = errno;
	else
		saved = S_ISREG(st.st_mode) ? 0 : EBADMSG;
	if (saved != 0) {
		close(fd);
		errno = saved;
		return -1;
	}
	while (*len < REASON_MAX) {
		n = read(fd, *buf + *len, REASON_MAX - *len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			saved = errno;
			close(fd);
			*len = 0;
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		*len += n;
	}
	close(fd);
	return 0;
}

/*
 * A dead letter's stored reason (reason/ID); the caller frees *buf.
 * Returns 1 (and no bytes) when there is none: a message buried on a full
 * file system has none; -1 (and no bytes) when it cannot be read, or
 * memory ran out (ENOMEM, *buf NULL).
 */
int
mq_dead_reason(struct mq_spool *sp, const char *id, char **buf, size_t *len)
{
	*len = 0;
	if ((*buf = malloc(REASON_MAX)) == NULL)
		return -1;
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	return reason_read(sp->reason, id, buf, len);
}

/*
 * The reason of a live message's last release (last/ID), as
 * mq_dead_reason: 1 when there is none (nor last/ itself).
 */
int
mq_reason_last(struct mq_spool *sp, const char *id, char **buf, size_t *len)
{
	*len = 0;
	if ((*buf = malloc(REASON_MAX)) == NULL)
		return -1;
	if (mq_last_dir(sp, 0) == -1)
		return errno == ENOENT ? 1 : -1;
	return reason_read(sp->last, id, buf, len);
}

/* Opens a dead letter's body to be read. */
int
mq_dead_open(struct mq_spool *sp, const struct mq_dead *d)
{
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	return openat(sp->dead, d->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
}

/* Copies a dead letter into another spool's tmp/, synced. */
static int
copy_out(struct mq_spool *sp, const struct mq_dead *d, struct mq_spool *to)
{
	struct mq_tmpfile tf;
	int in, saved;

	if ((in = mq_dead_open(sp, d)) == -1)
		return -1;
	if (mq_tmp_create(&tf, to, d->n.id) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		return -1;
	}
	if (mq_copy_fd(in, tf.fd) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		mq_tmp_abort(&tf);
		return -1;
	}
	close(in);
	if (mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/* Whether two open spools are one (a -t naming the spool itself). */
static int
same_spool(const struct mq_spool *a, const struct mq_spool *b)
{
	return a == b || (a->dev == b->dev && a->ino == b->ino);
}

/*
 * The history the redrive of d gives its message in the placer's spool:
 * its own, and this death (history.c), in place before the body moves.
 * nm gets its count.  What cannot be read does not hold it back: a reason
 * that cannot be read is carried as none (NULL), a history as far as it
 * reads; only the writing of the new history can fail it, or memory run
 * out, which would otherwise carry it short.
 */
static int
history_carry(struct mq_spool *sp, const struct mq_dead *d,
    struct mq_placer *pl, struct mq_name *nm)
{
	char *reason;
	size_t len;
	int got, saved;

	got = mq_dead_reason(sp, d->n.id, &reason, &len);
	if (got == -1 && errno == ENOMEM)
		return -1;
	got = mq_history_carry(sp, pl->sp, &d->n, got != 0 ? NULL : reason,
	    len, &nm->deaths);
	saved = errno;
	free(reason);
	errno = saved;
	return got;
}

/*
 * The lock of every redrive and purge of sp's dead letters, one message
 * at a time: an flock(2) on dead/.  A redrive writes a history before its
 * body moves; two of them (or a redrive and a purge) of one dead letter
 * must not interleave, or the one that loses the race writes from a name
 * that is gone.  Nothing else takes it: a burial, a claim, an ack write
 * no history.
 */
int
mq_dead_lock(struct mq_spool *sp)
{
	while (flock(sp->dead, LOCK_EX) == -1)
		if (errno != EINTR)
			return -1;
	return 0;
}

void
mq_dead_unlock(struct mq_spool *sp)
{
	int saved = errno;

	flock(sp->dead, LOCK_UN);
	errno = saved;
}

/* Whether dead/NAME is still there (under the lock); ENOENT if not. */
static int
still_dead(struct mq_spool *sp, const struct mq_dead *d)
{
	struct stat st;

	return fstatat(sp->dead, d->name, &st, AT_SYMLINK_NOFOLLOW);
}

static int
redrive(struct mq_spool *sp, const struct mq_dead *d, struct mq_placer *pl,
    int *history)
{
	struct mq_name nm = d->n;
	char newname[MQ_NAME_MAX];
	uint64_t now = mq_now_ms();
	int synced, saved, away = !same_spool(sp, pl->sp);

	nm.attempts = 0;
	nm.sent = now;
	if (still_dead(sp, d) == -1)
		return -1;
	*history = 1;
	if (history_carry(sp, d, pl, &nm) == -1)
		return -1;
	*history = 0;
	/* A name that cannot be made fails before anything changes. */
	if (mq_name_format(newname, sizeof(newname), MQ_NEW, &nm) == -1)
		return -1;
	/*
	 * A last release reason left beside the dead letter (by a release
	 * that came too late) must not be its next death's "last": it goes
	 * before the body moves, when no release of the message can have
	 * written a fresh one.
	 */
	mq_reason_drop(sp, d->n.id);
	/* A message of a group goes back into its group, in ID order. */
	if (mq_land(pl, sp->dead, d->name, &nm, now) == -1) {
		if (errno != EXDEV)
			return -1;
		if (copy_out(sp, d, pl->sp) == -1)
			return -1;
		if (mq_tmp_land(pl, &nm, now) == -1)
			return -1;
		/*
		 * It landed: it is queued there, whatever its sync says, and
		 * is no dead letter any more (a retry would queue it twice).
		 */
		synced = mq_placer_flush(pl);
		saved = errno;
		if (unlinkat(sp->dead, d->name, 0) == -1 && errno != ENOENT)
			return -1;
		unlinkat(sp->reason, d->n.id, 0);
		if (away)
			(void)mq_history_forget(sp, &d->n);
		errno = saved;
		return synced;
	}
	/* Its reason and history here go once it is durable there. */
	return 0;
}

/*
 * What a redrive by rename (not a copy) leaves of the dead letter d, to
 * go once the placer has synced where it went (mq_placer_flush): its
 * reason, and its history if it went to another spool.  Removed before,
 * a power cut could keep the removal and undo the rename, and the dead
 * letter come back without them.  The reason goes only if it is still
 * the one the redrive saw (why, from mq_dead_redrive): meanwhile the
 * message may have been claimed and buried again, with a reason of its
 * new death.
 */
void
mq_dead_redriven(struct mq_spool *sp, const struct mq_dead *d,
    const struct mq_spool *to, const struct stat *why)
{
	struct stat st;

	/* Copied, it is gone already; a failed rename left it here. */
	if (fstatat(sp->dead, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return;
	/* A directory in its place is no reason, and is left as it is. */
	if (why->st_ino != 0 && !S_ISDIR(why->st_mode))
		(void)mq_reason_remove_same(sp, sp->reason, d->n.id, why);
	if (!same_spool(sp, to) && mq_dead_lock(sp) == 0) {
		(void)mq_history_forget(sp, &d->n);
		mq_dead_unlock(sp);
	}
}

/*
 * Back to new/ of the placer's spool, attempts reset, enqueued anew: its
 * time to live (kept) counts from now.  Its death goes into its history
 * first (history.c says why that order); a history left in another spool
 * goes once the body moved.  All of it under the lock of sp's dead/, and
 * only if dead/NAME is still there then (ENOENT if not: nothing written).
 * On failure *history says what failed: 1 the writing of the target's
 * deaths/ID, 0 the rest (dead/NAME).
 */
int
mq_dead_redrive(struct mq_spool *sp, const struct mq_dead *d,
    struct mq_placer *pl, int *history, struct stat *why)
{
	int r;

	*history = 0;
	if (mq_spool_need(sp, 0) == -1 || mq_dead_lock(sp) == -1)
		return -1;
	/* The reason as it is now, for mq_dead_redriven to remove only it. */
	if (fstatat(sp->reason, d->n.id, why, AT_SYMLINK_NOFOLLOW) == -1)
		why->st_ino = 0;
	r = redrive(sp, d, pl, history);
	mq_dead_unlock(sp);
	return r;
}

