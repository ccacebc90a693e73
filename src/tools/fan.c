/*
 * fan.c: what one mq-send call adds messages to: one spool, or several
 * (mq-send -d A -d B ...), each a target with its own enqueue (keys,
 * admission, landing and sync: enqueue.c) and settings; the batch in
 * flight to them all; and what is said of it.
 *
 * Each message has one ID.  Its body is written once, into tmp/ of the
 * first target still taking messages, and every other target gets it in
 * its own tmp/ under the same name as soon as it is closed: a hard link
 * where the two spools would make the file alike, else a copy
 * (mq_tmp_link).  A batch (up to a leaf's worth, or what came before the
 * input paused) is then made durable, once per inode or file system (see
 * sync_data), renamed into each target's new/ and each target's
 * directories synced; only then are its IDs printed, each once: an ID
 * printed is durable in every spool that took it.
 *
 *	tmp/ID of the first	=> tmp/ID of each other	(mq_tmp_link)
 *	tmp/ID			-> new/T/M/L/ID,0...	(place_one, each target)
 *
 * A target that fails (no permission, an I/O error, no room, full at its
 * max-depth) is named on stderr, what it holds of the batch that is not in
 * its new/ is taken back, and it takes no more of the call; the others go
 * on, and the call's status is the worst (mq_worse).  A message written
 * into a target that fails is moved on to the next with what was written
 * of it, so every target that can take a message gets it, whatever their
 * order.  Once a message is in new/ of any target it is queued whatever
 * fails next, so its ID is printed even then: a producer that retries on
 * failure must retry only what has no ID (see mq-send(1)).
 *
 * With a target's max-depth set, messages are admitted to it on credit
 * (enqueue.c).  When a target has no room the batch so far is published to
 * all, and that target drops out
 * (exit 6), is waited for (-w: the others wait with it, their messages
 * already placed), or, with overflow=drop-oldest, has the oldest waiting
 * messages dead-lettered to make room for each batch.  Without max-depth
 * nothing is counted; with one target, nothing is linked: a plain send
 * costs what it did before there were several.
 *
 * -p and -g name every message (f->name), and place_one puts it in each
 * target's tree of its priority or in its group there.  With -g or -k each
 * target gets a copy, never a link (see separate).  -k sends one message,
 * added in each target under that target's lock of keys/ only where the
 * key is missing (keyed_flush), before any count of max-depth: a held key
 * needs no room.
 */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

static int
live(const struct mq_target *t)
{
	return t->status == MQ_EX_OK;
}

static int
nlive(const struct mq_fan *f)
{
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		n += live(&f->t[i]);
	return n;
}

void
mq_fan_init(struct mq_fan *f)
{
	memset(f, 0, sizeof(*f));
	f->sync = 1;
	f->tf.fd = -1;
	f->first = -1;
}

/* Adds a spool to send to (-d), to be opened by mq_fan_open. */
void
mq_fan_dir(struct mq_fan *f, const char *dir)
{
	const char **v;

	if (*dir == '\0')
		errx(MQ_EX_USAGE, "-d: empty spool name");
	if (f->n == 0)
		v = &f->dir1;
	else {
		v = xreallocarray(f->dirs == &f->dir1 ? NULL : f->dirs,
		    f->n + 1, sizeof(*v));
		if (f->dirs == &f->dir1)
			v[0] = f->dir1;
	}
	v[f->n++] = dir;
	f->dirs = v;
}

static void	fail_tmp(struct mq_fan *, struct mq_target *, const char *);

/*
 * The message being written in the first target goes on in the next that
 * takes it, with what was written of it so far (a write that failed part
 * way may have left some more); it is then no longer in the first.
 * Returns -1 when no target takes it: it is then taken back.
 */
static int
relocate(struct mq_fan *f)
{
	struct mq_target *from = &f->t[f->first], *t;
	struct mq_tmpfile tf, old;
	int i;

	for (i = f->first + 1; i < f->n; i++) {
		t = &f->t[i];
		if (!live(t))
			continue;
		if (mq_tmp_copy(&tf, &t->sp, &from->sp, f->id) == 0 &&
		    ftruncate(tf.fd, f->size) == 0 &&
		    lseek(tf.fd, f->size, SEEK_SET) != -1) {
			old = f->tf;
			f->tf = tf;
			f->first = i;
			mq_tmp_abort(&old);
			return 0;
		}
		mq_tmp_abort(&tf);
		fail_tmp(f, t, f->id);
	}
	mq_tmp_abort(&f->tf);
	f->writing = 0;
	return -1;
}

/*
 * t takes no more of this call: what it holds of the batch and not yet in
 * its new/ is taken back, and a message being written in it goes on in the
 * next target.  Other targets may hold links to its files, whose data it
 * will not sync now: from here on each syncs its own.
 */
static void
drop_target(struct mq_fan *f, struct mq_target *t, int status)
{
	int saved = errno, i;

	if (f->writing && t == &f->t[f->first])
		(void)relocate(f);
	for (i = t->landed; i < f->nbatch; i++)
		mq_tmp_remove(&t->sp, f->batch[i]);
	t->status = status;
	f->status = mq_worse(f->status, status);
	for (i = 0; i < f->n; i++)
		f->t[i].own = 1;
	errno = saved;
}

/* Names what failed in t (and why: errno), and drops t. */
static void
fail(struct mq_fan *f, struct mq_target *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	drop_target(f, t, MQ_EX_SYS);
}

/* A spool error names the message's file in tmp/, not the input. */
static void
fail_tmp(struct mq_fan *f, struct mq_target *t, const char *id)
{
	fail(f, t, "%s/%s/%s", t->sp.path, MQ_DIR_TMP, id);
}

static int
target_open(struct mq_target *t, const char *path)
{
	if (mq_spool_open(&t->sp, path, 1) == -1) {
		if (errno == ENOTDIR)
			warnx("%s: not a spool", path);
		else
			warn("%s", path);
		return -1;
	}
	if (mq_settings_reread(&t->sp) == -1)
		return -1;
	return 0;
}

/*
 * Opens every spool given (or the one of $MQ_DIR, else the default), making
 * those missing.  One that cannot be opened is named and left out; the
 * same spool twice is a usage error.  Returns -1 when none is open.
 */
int
mq_fan_open(struct mq_fan *f)
{
	struct mq_target *t, *u;
	const char *path;
	int i, j;

	if (f->n == 0) {
		if ((path = mq_spool_dir(NULL)) == NULL)
			err(MQ_EX_SYS, "no spool: set MQ_DIR or HOME");
		mq_fan_dir(f, path);
	}
	f->t = f->n == 1 ? &f->one : xreallocarray(NULL, f->n, sizeof(*f->t));
	memset(f->t, 0, f->n * sizeof(*f->t));
	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		mq_enq_init(&t->eq, &t->sp, f->sync);
		if (target_open(t, f->dirs[i]) == -1) {
			t->status = MQ_EX_SYS;
			f->status = mq_worse(f->status, MQ_EX_SYS);
		} else	/* It starts from new/, open now. */
			mq_enq_init(&t->eq, &t->sp, f->sync);
		t->eq.pl.fresh = 1;
	}
	for (i = 0; i < f->n; i++)
		for (j = 0; j < i; j++) {
			t = &f->t[i];
			u = &f->t[j];
			if (live(t) && live(u) && t->sp.dev == u->sp.dev &&
			    t->sp.ino == u->sp.ino)
				errx(MQ_EX_USAGE, "%s, %s: the same spool",
				    f->dirs[j], f->dirs[i]);
		}
	return nlive(f) > 0 ? 0 : -1;
}

/*
 * Makes the batch's data durable before any of it is renamed.  Where one
 * syncfs(2) does a batch (mq_tmp_sync), one per file system that holds
 * files of it; else one fsync(2) per file, at mq_tmp_sync for a lone
 * message or as each was closed.  A target whose files are all links to
 * another's has nothing of its own to sync.
 */
static void
sync_data(struct mq_fan *f)
{
	struct mq_target *t, *u;
	const char *failed;
	int i, j, again;

	for (i = 0; i < f->n; i++)
		f->t[i].synced = 0;
	do {
		again = 0;
		for (i = 0; i < f->n && !again; i++) {
			t = &f->t[i];
			if (!live(t) || !t->own || t->synced)
				continue;
			t->synced = 1;
			for (j = 0; MQ_HAVE_SYNCFS && f->nbatch > 1 && j < f->n;
			    j++) {
				u = &f->t[j];
				if (u != t && live(u) && u->synced && u->own &&
				    u->sp.dev == t->sp.dev)
					break;
			}
			if (MQ_HAVE_SYNCFS && f->nbatch > 1 && j < f->n)
				continue;
			if (mq_tmp_sync(&t->sp, f->batch, f->nbatch,
			    &failed) == -1) {
				if (failed != NULL)
					fail_tmp(f, t, failed);
				else
					fail(f, t, "%s/%s", t->sp.path,
					    MQ_DIR_TMP);
				/* Its links elsewhere are not synced: again. */
				again = 1;
			}
		}
	} while (again);
}

/*
 * Puts message i of the batch into t's new/: the one place where a message
 * enters one target, and where a check of one spool for one message goes.
 * A message of a group is parked while its group has a head in t.
 */
static int
place_one(struct mq_fan *f, struct mq_target *t, int i)
{
	memcpy(f->name.id, f->batch[i], sizeof(f->name.id));
	/*
	 * A keyed copy completed under its holder's (older) ID is sent now:
	 * its time to live counts from now, not from that ID's time, as a
	 * redrive's does.
	 */
	f->name.sent = f->key != NULL && strcmp(f->name.id, f->id) != 0 ?
	    mq_now_ms() : 0;
	return mq_enq_land(&t->eq, &f->name, f->due ? f->due : mq_now_ms());
}

/*
 * -k, after the rename into t's new/ (landed) or its failure: lets the
 * lock of t's keys/ go, the key's hold taken back first if it failed.
 */
static void
unkeyed(struct mq_fan *f, struct mq_target *t)
{
	mq_enq_key_done(&t->eq, f->name.keyhash, f->batch[0], t->landed);
}

struct dropping {
	struct mq_fan	*f;
	struct mq_target *t;
};

static void
dropped(void *arg, const char *id)
{
	struct dropping *d = arg;

	if (!d->f->vflag)
		return;
	if (d->f->n > 1)
		warnx("%s: dead in %s: %s", id, d->t->sp.path,
		    MQ_REASON_MAXLEN);
	else
		warnx("%s: dead: %s", id, MQ_REASON_MAXLEN);
}

/*
 * overflow=drop-oldest, before the batch is placed in t: the oldest
 * waiting messages dead-lettered to make room for it (enqueue.c), each
 * named with -v.
 */
static int
drop(struct mq_fan *f, struct mq_target *t)
{
	struct dropping d = { f, t };

	if (mq_enq_make_room(&t->eq, f->nbatch, dropped, &d) == -1) {
		fail(f, t, "%s/%s", t->sp.path, MQ_DIR_NEW);
		return -1;
	}
	return 0;
}

/*
 * Renames the batch into t's new/, in order, and syncs t's directories.
 * What did land stays, and counts as taken, even when the rest failed.
 */
static void
place(struct mq_fan *f, struct mq_target *t)
{
	int i, saved = 0;

	if (drop(f, t) == -1) {
		if (f->key != NULL)
			unkeyed(f, t);
		return;
	}
	for (i = 0; i < f->nbatch; i++)
		if (place_one(f, t, i) == -1) {
			saved = errno;
			break;
		}
	t->landed = i;
	if (f->key != NULL)
		unkeyed(f, t);
	if (mq_enq_flush(&t->eq, 1) == -1 && saved == 0)
		saved = errno;
	if (saved != 0) {
		errno = saved;
		fail(f, t, "%s/%s", t->sp.path, MQ_DIR_NEW);
	}
}

/*
 * Makes the batch durable, visible, and known: data first, then in each
 * target one rename each into new/ and its directories; an ID is printed
 * once its message is in new/ of every target that took it, and would
 * survive a crash there (or is in new/ somewhere when what follows
 * failed).  Returns -1 when no target is left.
 */
static int	keyed_flush(struct mq_fan *);

int
mq_fan_flush(struct mq_fan *f)
{
	struct mq_target *t;
	int i, j, took = 0;

	if (f->nbatch > 0 && f->sync)
		sync_data(f);
	if (f->nbatch > 0 && f->key != NULL)
		return keyed_flush(f);
	for (i = 0; f->nbatch > 0 && i < f->n; i++) {
		t = &f->t[i];
		if (live(t))
			place(f, t);
		if (t->landed > took)
			took = t->landed;
	}
	for (j = 0; j < took; j++) {
		puts(f->batch[j]);
		if (!f->vflag)
			continue;
		warnx("%s: queued from %s", f->batch[j], f->from[j]);
		for (i = 0; f->n > 1 && i < f->n; i++)
			if (j < f->t[i].landed)
				warnx("%s: queued in %s", f->batch[j],
				    f->t[i].sp.path);
	}
	for (i = 0; i < f->n; i++)
		f->t[i].landed = f->t[i].own = 0;
	f->nbatch = 0;
	if (fflush(stdout) == EOF)
		err(MQ_EX_SYS, "stdout");
	return nlive(f) > 0 ? 0 : -1;
}

/* No room in t, and no more waiting for it: it takes no more. */
static void
full(struct mq_fan *f, struct mq_target *t)
{
	warnx("%s: full (max-depth %s)", t->sp.path,
	    mq_conf_value(&t->sp.conf, MQ_CONF_MAX_DEPTH));
	drop_target(f, t, MQ_EX_FULL);
}

/*
 * No room in t: with -w, waits for room (enqueue.c) and reads t's
 * settings again; gives up after wait_ms.
 */
static void
await(struct mq_fan *f, struct mq_target *t)
{
	if (f->wflag && mq_enq_await(&t->eq, f->wait_ms) == 0) {
		if (mq_settings_reread(&t->sp) == -1)
			drop_target(f, t, MQ_EX_SYS);
	} else if (!f->wflag || errno == ETIMEDOUT)
		full(f, t);
	else if (errno == ENOENT) {
		warnx("%s: spool removed", t->sp.path);
		drop_target(f, t, MQ_EX_SYS);
	} else
		fail(f, t, "%s/%s", t->sp.path, MQ_DIR_NEW);
}

/*
 * Counts t for room (enqueue.c): 1 room, 0 none, -1 t failed (named,
 * dropped).
 */
static int
room(struct mq_fan *f, struct mq_target *t)
{
	int r;

	if ((r = mq_enq_admit(&t->eq)) == -1)
		fail(f, t, "%s/%s", t->sp.path, MQ_DIR_NEW);
	return r;
}

/*
 * -k: takes the lock of t's keys/ and looks the key up: MQ_KEY_FREE or
 * MQ_KEY_HELD (the holder's ID in holder), the lock then held; -1 when t
 * failed (named, dropped, unlocked).
 */
static int
look(struct mq_fan *f, struct mq_target *t, char *holder)
{
	const char *hash = f->name.keyhash;
	int r;

	if (mq_enq_key_lock(&t->eq) == -1) {
		fail(f, t, "%s/%s", t->sp.path, MQ_DIR_KEYS);
		return -1;
	}
	r = mq_enq_key_look(&t->eq, f->key, f->keylen, holder);
	if (r == MQ_KEY_FREE || r == MQ_KEY_HELD)
		return r;
	if (r == -1)
		fail(f, t, "%s/%s/%s", t->sp.path, MQ_DIR_KEYS, hash);
	else {
		warnx("%s/%s/%s: %s", t->sp.path, MQ_DIR_KEYS, hash,
		    r == MQ_KEY_OTHER ? "another key has this hash" :
		    "not a key record");
		drop_target(f, t, MQ_EX_SYS);
	}
	return -1;
}

/*
 * -k, the message written and synced in t's tmp/: under the lock of t's
 * keys/ (held to its rename into new/: see unkeyed), the key held: the
 * message is taken back (returns 0, the holder's ID in holder); free, once
 * there is room: the message is made the key's holder, durably, and placed
 * (returns 1).  A full spool is waited for without the lock.  -1: t failed.
 */
static int
keyed(struct mq_fan *f, struct mq_target *t, char *holder)
{
	int r;

	for (;;) {
		if ((r = look(f, t, holder)) == -1)
			return -1;
		if (r == MQ_KEY_HELD) {
			mq_enq_key_unlock(&t->eq);
			mq_tmp_remove(&t->sp, f->batch[0]);
			return 0;
		}
		if ((r = room(f, t)) == 1)
			break;
		mq_enq_key_unlock(&t->eq);
		if (r == -1)
			return -1;
		await(f, t);
		if (!live(t))
			return -1;
	}
	if (mq_enq_key_hold(&t->eq, f->key, f->keylen, f->batch[0]) == -1) {
		fail(f, t, "%s/%s/%s", t->sp.path, MQ_DIR_KEYS, f->batch[0]);
		return -1;
	}
	place(f, t);
	return live(t) || t->landed ? 1 : -1;
}

/*
 * With several targets, the key is looked up in each first: the ID of its
 * holder in the first that has it is the one the message is added under
 * where it is missing, so that a rerun after a partial failure completes
 * the message under one ID.  The copies in tmp/ are renamed to it (kid),
 * but where that name is taken (its own sender is still at work there, or
 * no link can be made) the copy keeps its own: each target decides under
 * its own lock, so a spool gets one message per key either way.
 * Returns whether a holder was found (its ID in id).
 */
static int
found(struct mq_fan *f, char *id)
{
	struct mq_target *t;
	char holder[MQ_ID_LEN + 1];
	int i, r, got = 0;

	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		if (!live(t) || (r = look(f, t, holder)) == -1)
			continue;
		mq_enq_key_unlock(&t->eq);
		if (r != MQ_KEY_HELD)
			continue;
		t->has = 1;
		mq_tmp_remove(&t->sp, f->batch[0]);
		if (!got)
			memcpy(id, holder, MQ_ID_LEN + 1);
		got = 1;
	}
	for (i = 0; got && strcmp(id, f->batch[0]) != 0 && i < f->n; i++) {
		t = &f->t[i];
		if (live(t) && !t->has &&
		    mq_tmp_rename(&t->sp, f->batch[0], id) == 0)
			memcpy(t->kid, id, MQ_ID_LEN + 1);
	}
	return got;
}

/*
 * -k: the one message, a copy in each target's tmp/, written and synced.
 * In each target that does not have the key, under the lock of its keys/:
 * held (by a sender since) -> nothing added there; free -> added.  One ID
 * is printed: the one added under or first found.
 */
static int
keyed_flush(struct mq_fan *f)
{
	struct mq_target *t;
	char id[MQ_ID_LEN + 1], holder[MQ_ID_LEN + 1];
	int i, r, shown = 0;

	for (i = 0; i < f->n; i++)
		memcpy(f->t[i].kid, f->batch[0], MQ_ID_LEN + 1);
	if (f->n > 1)
		shown = found(f, id);
	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		if (!live(t) || t->has)
			continue;
		/* What t's copy is named: each step on t goes by batch[0]. */
		memcpy(f->batch[0], t->kid, MQ_ID_LEN + 1);
		if ((r = keyed(f, t, holder)) == -1)
			continue;
		if (r == 1 && !shown)
			memcpy(id, f->batch[0], sizeof(id));
		else if (r == 0 && !shown)
			memcpy(id, holder, sizeof(id));
		shown = 1;
		if (!f->vflag)
			continue;
		if (r == 0 && f->n > 1)
			warnx("%s: held by key in %s", holder, t->sp.path);
		else if (r == 0)
			warnx("%s: held by key", holder);
		else if (f->n > 1)
			warnx("%s: queued in %s", f->batch[0], t->sp.path);
		else
			warnx("%s: queued from %s", f->batch[0], f->from[0]);
	}
	if (shown)
		puts(id);
	for (i = 0; i < f->n; i++)
		f->t[i].landed = f->t[i].own = f->t[i].has = 0;
	f->nbatch = 0;
	if (fflush(stdout) == EOF)
		err(MQ_EX_SYS, "stdout");
	return nlive(f) > 0 ? 0 : -1;
}

/*
 * Before a message is begun, once t's last credit is used up (enqueue.c):
 * publishes the batch so far and counts again.  With overflow=reject and
 * no room, t takes no more, unless -w waits for room.  drop-oldest makes
 * its room as it publishes (drop).
 */
static void
admit(struct mq_fan *f, struct mq_target *t)
{
	enum mq_enq_next next = mq_enq_next(&t->eq, f->nbatch);

	if (next == MQ_ENQ_GO)
		return;
	(void)mq_fan_flush(f);
	while (next == MQ_ENQ_COUNT && live(t) && room(f, t) == 0)
		await(f, t);
}

/*
 * Begins a message: admitted by every target with a max-depth, then
 * created in the first target that takes it.  Returns -1 when no target is
 * left.
 */
int
mq_fan_begin(struct mq_fan *f)
{
	struct mq_target *t;
	int i;

	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		/* A keyed send looks its key up first: a held key needs no room. */
		if (live(t) && f->key == NULL)
			admit(f, t);
	}
	mq_id_new(f->id);
	f->size = 0;
	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		if (!live(t))
			continue;
		if (mq_tmp_create(&f->tf, &t->sp, f->id) == 0) {
			f->first = i;
			f->writing = 1;
			return 0;
		}
		fail_tmp(f, t, f->id);
	}
	return -1;
}

/* Writing into the first target failed: it is named (errno) and dropped. */
static int
move(struct mq_fan *f)
{
	struct mq_target *t = &f->t[f->first];

	fail_tmp(f, t, f->id);
	return f->writing ? 0 : -1;
}

int
mq_fan_write(struct mq_fan *f, const void *buf, size_t len)
{
	while (mq_tmp_write(&f->tf, buf, len) == -1)
		if (move(f) == -1)
			return -1;
	f->size += len;
	return 0;
}

/*
 * Whether each target gets its own copy of a message, never a link to
 * another's: keys and groups tell from an inode's link count whether the
 * message is still in their spool (keys/ID, groups/G/turn), which a body
 * shared with another spool would keep up after its ack here.
 */
static int
separate(const struct mq_fan *f)
{
	return f->key != NULL || f->name.group[0] != '\0';
}

/*
 * Ends the message: closed (synced now if no batch sync will do it), then
 * linked or copied into every other target, and added to the batch, which
 * is flushed when it is a leaf's worth.
 */
int
mq_fan_end(struct mq_fan *f)
{
	struct mq_target *t;
	enum mq_tmp_sync sync = f->sync ? MQ_TMP_SYNC_BATCH : MQ_TMP_SYNC_NONE;
	int i, copied;

	/* A failed fsync leaves it open; what was written is moved on. */
	while (mq_tmp_close(&f->tf, sync) == -1)
		if (move(f) == -1)
			return -1;
	f->t[f->first].own = 1;
	for (i = f->first + 1; i < f->n; i++) {
		t = &f->t[i];
		if (!live(t))
			continue;
		if (mq_tmp_link(&f->t[f->first].sp, f->id, &t->sp, sync,
		    !separate(f), &copied) == -1)
			fail_tmp(f, t, f->id);
		else if (copied)
			t->own = 1;
	}
	f->writing = 0;
	f->from[f->nbatch] = f->input;
	memcpy(f->batch[f->nbatch++], f->id, sizeof(f->id));
	if (f->nbatch == MQ_BATCH_MAX)
		return mq_fan_flush(f);
	return 0;
}

/* Takes back every message not yet visible anywhere; errno is kept. */
void
mq_fan_abort(struct mq_fan *f)
{
	struct mq_target *t;
	int saved = errno, i, j;

	if (f->writing)
		mq_tmp_abort(&f->tf);
	f->writing = 0;
	for (i = 0; i < f->n; i++) {
		t = &f->t[i];
		for (j = t->landed; live(t) && j < f->nbatch; j++)
			mq_tmp_remove(&t->sp, f->batch[j]);
	}
	f->nbatch = 0;
	errno = saved;
}

/* Publishes what is left, closes all; returns the worst status seen. */
int
mq_fan_close(struct mq_fan *f)
{
	struct mq_target *t;
	int i;

	if (f->t != NULL)
		(void)mq_fan_flush(f);
	for (i = 0; f->t != NULL && i < f->n; i++) {
		t = &f->t[i];
		mq_enq_close(&t->eq);
		mq_spool_close(&t->sp);
	}
	if (f->t != &f->one)
		free(f->t);
	if (f->dirs != &f->dir1)
		free(f->dirs);
	f->t = NULL;
	f->dirs = NULL;
	mq_stdout_close();
	return f->status;
}
