/*
 * mq-send: add messages to a spool.  Messages are written to tmp/ in
 * batches (up to a leaf's worth, or what came before the input paused);
 * a batch is made durable, renamed into new/, the directories synced, and
 * only then are its IDs printed.  Nothing partial is ever visible: a
 * failure leaves at most tmp/ files, which are removed (or, after a crash,
 * swept by mq-sweep).
 *
 * Once a message is in new/ it is queued whatever fails next, so its ID
 * is printed even then: a producer that retries on failure must retry
 * only what has no ID, or it queues messages twice (see mq-send(1)).
 *
 * With the spool's max-depth set, messages are admitted on credit: a count
 * of new/ (mq_depth, bounded by max-depth; messages past their time to
 * live are not counted but buried) grants an eighth of the room it found,
 * at least one, and is taken again once that is used up.  So a call
 * alone never passes max-depth, and each concurrent sender can overshoot
 * by at most one credit (mq-send(1) gives the bound).  When there is no
 * room the batch so far is published and the call stops (exit 6), waits
 * for a claim to ring the doorbell (-w), or, with overflow=drop-oldest,
 * dead-letters the oldest waiting messages to make room for each batch.
 * Without max-depth nothing is counted.
 *
 * With -k KEY the call sends one message, written and synced like any,
 * then looked up and held under the lock of keys/ (key.c) until its rename
 * into new/: a sender that finds the key held takes its message back and
 * prints the holder's ID instead.  A held key needs no room, so the key is
 * looked up before max-depth is.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define BATCH_MAX	MQ_LEAF_MAX

/* A count grants room / CREDIT_DIV messages (at least one). */
#define CREDIT_DIV	8
/*
 * A sender waiting for room counts again at least this often, for room
 * made without a ring (a worker started before max-depth was set).
 */
#define ROOM_POLL_MS	1000

struct sender {
	struct mq_spool	 sp;
	struct mq_placer pl;
	int		 sync;
	uint64_t	 due;	/* 0: visible at once */
	struct mq_name	 name;	/* what each is named with but its ID */
	struct mq_tmpfile tf;	/* the message being written (tf.fd != -1) */
	char		 id[MQ_ID_LEN + 1];
	char		 batch[BATCH_MAX][MQ_ID_LEN + 1];
	const char	*from[BATCH_MAX];	/* each one's input, for -v */
	int		 nbatch;
	const char	*input;	/* the file being read */
	int		 vflag;
	int		 status;	/* of the files that could not be read */
	struct mq_conf	 conf;	/* max-depth and overflow */
	uint64_t	 credit;	/* messages to admit before counting */
	int		 wflag;		/* wait for room */
	uint64_t	 wait_ms;	/* that long; UINT64_MAX: forever */
	uint64_t	 until;		/* end of this wait; 0: not waiting */
	int		 watching;	/* w is open */
	struct mq_waiter w;
	const char	*key;		/* -k: the dedup key, or NULL */
	size_t		 keylen;
	struct mq_keys	 keys;
};

static void flush(struct sender *);
static void drop(struct sender *);
static int keyed(struct sender *);
static void unkeyed(struct sender *, int);

#define USAGE	"usage: mq-send [-0lSv] [-d dir] [-D secs | -g group] [-k key] " \
	"[-p prio]\n               [-w [secs]] [--ttl secs] [file ...]\n"

/* The long option without a short one. */
#define OPT_TTL	256

static void __dead
usage(void)
{
	fputs(USAGE, stderr);
	exit(MQ_EX_USAGE);
}

static void
help(void)
{
	printf(USAGE
	    "Add each file (or standard input) as a message; print its ID.\n"
	    "  -0       every NUL-terminated record is a message\n"
	    "  -l       every line is a message\n"
	    "  -D secs  not visible before secs from now\n"
	    "  -k key   dedup key: while a message sent with it is in the\n"
	    "           spool (and dedup-window after), add nothing and print\n"
	    "           that message's ID; one message (no -l, -0, 2 files)\n"
	    "  -g group one at a time and in send order with the others of\n"
	    "           group (1-64 of A-Z a-z 0-9 . _ -, no leading dot);\n"
	    "           not with -D\n"
	    "  -p prio  priority, 0 (the default) to 9: higher ones are\n"
	    "           claimed first\n"
	    "  --ttl secs  dead (reason expired) if not claimed within secs\n"
	    "           of the send (the spool's ttl applies if lower)\n"
	    "  -S       skip fsync (faster, not crash-safe)\n"
	    "  -w secs  when the spool is at its max-depth (mq-conf), wait\n"
	    "           up to secs (-w alone: forever) for room\n"
	    "  -d dir   spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
	    "           else ~/.local/state/mq; made if missing)\n"
	    "Exit 6: the spool is full (max-depth); the IDs printed were "
	    "sent.\n"
	    "See mq-send(1).\n");
}

/*
 * Takes back every message not yet visible, then dies with the error
 * named by fmt.
 */
static void __dead
fail(struct sender *s, const char *fmt, ...)
{
	va_list ap;
	int saved = errno, i;

	if (s->tf.fd != -1)
		mq_tmp_abort(&s->tf);
	for (i = 0; i < s->nbatch; i++)
		mq_tmp_remove(&s->sp, s->batch[i]);
	errno = saved;
	va_start(ap, fmt);
	verr(MQ_EX_SYS, fmt, ap);
}

/* A spool error names the message's file in tmp/, not the input. */
static void __dead
fail_tmp(struct sender *s, const char *id)
{
	fail(s, "%s/%s/%s", s->sp.path, MQ_DIR_TMP, id);
}

static void	admit(struct sender *);

static void
begin(struct sender *s)
{
	/* A keyed send looks its key up first: a held key needs no room. */
	if (s->key == NULL && s->conf.max_depth > 0 &&
	    (uint64_t)s->nbatch >= s->credit)
		admit(s);
	mq_id_new(s->id);
	if (mq_tmp_create(&s->tf, &s->sp, s->id) == -1)
		fail_tmp(s, s->id);
}

static void
put(struct sender *s, const char *p, size_t len)
{
	if (mq_tmp_write(&s->tf, p, len) == -1)
		fail_tmp(s, s->id);
}

static void
end(struct sender *s)
{
	/* A failed fsync leaves it open, and fail() takes it back. */
	if (mq_tmp_close(&s->tf, s->sync ? MQ_TMP_SYNC_BATCH :
	    MQ_TMP_SYNC_NONE) == -1) {
		if (s->tf.fd == -1)
			mq_tmp_abort(&s->tf);
		fail_tmp(s, s->id);
	}
	s->from[s->nbatch] = s->input;
	memcpy(s->batch[s->nbatch++], s->id, sizeof(s->id));
	if (s->nbatch == BATCH_MAX)
		flush(s);
}

/*
 * Makes the batch durable, visible, and known: data first (mq_tmp_sync),
 * then one rename each into new/, then
 * the directories; an ID is printed only once its message would survive a
 * crash, or once it is in new/ when what follows fails: the rest of the
 * batch is then taken back.
 */
static void
flush(struct sender *s)
{
	const char *failed;
	int i, landed, saved = 0;

	if (s->nbatch == 0)
		return;
	if (s->sync && mq_tmp_sync(&s->sp, s->batch, s->nbatch,
	    &failed) == -1) {
		if (failed != NULL)
			fail_tmp(s, failed);
		fail(s, "%s/%s", s->sp.path, MQ_DIR_TMP);
	}
	if (s->key != NULL && !keyed(s))
		return;
	if (s->conf.max_depth > 0 && s->conf.drop_oldest &&
	    (uint64_t)s->nbatch > s->credit)
		drop(s);
	for (i = 0; i < s->nbatch; i++) {
		memcpy(s->name.id, s->batch[i], sizeof(s->name.id));
		/* A message of a group is parked while its group has a head. */
		if ((s->name.group[0] != '\0' ? mq_group_tmp_place :
		    mq_tmp_place)(&s->pl, &s->name,
		    s->due ? s->due : mq_now_ms()) == -1) {
			saved = errno;
			break;
		}
	}
	landed = i;
	if (s->key != NULL)
		unkeyed(s, landed);
	s->credit -= s->credit < (uint64_t)landed ? s->credit :
	    (uint64_t)landed;
	/* What did land is synced even when the rest failed. */
	if (mq_placer_flush(&s->pl) == -1 && saved == 0)
		saved = errno;
	for (i = 0; i < landed; i++) {
		puts(s->batch[i]);
		if (s->vflag)
			warnx("%s: queued from %s", s->batch[i], s->from[i]);
	}
	memmove(s->batch, s->batch + landed,
	    (s->nbatch - landed) * sizeof(s->batch[0]));
	memmove(s->from, s->from + landed,
	    (s->nbatch - landed) * sizeof(s->from[0]));
	s->nbatch -= landed;
	if (fflush(stdout) == EOF)
		fail(s, "stdout");
	if (saved != 0) {
		errno = saved;
		fail(s, "%s/%s", s->sp.path, MQ_DIR_NEW);
	}
}

static uint64_t
depth(struct sender *s, uint64_t limit)
{
	uint64_t n;

	if (mq_depth(&s->sp, limit, s->conf.ttl_ms, mq_now_ms(), &n) == -1)
		fail(s, "%s/%s", s->sp.path, MQ_DIR_NEW);
	return n;
}

/* What a count that found room grants: an eighth of it, at least one. */
static uint64_t
grant(uint64_t room)
{
	return room / CREDIT_DIV > 0 ? room / CREDIT_DIV : 1;
}

static void
dropped(void *arg, const char *id)
{
	struct sender *s = arg;

	if (s->vflag)
		warnx("%s: dead: %s", id, MQ_REASON_MAXLEN);
}

/*
 * overflow=drop-oldest, before the batch is placed: dead-letters as many
 * of the oldest waiting messages as it needs room for, once the count has
 * buried the expired ones (as "expired": they make room without a drop).
 * The count goes as far as max-depth plus the batch, so that what
 * concurrent senders put beyond max-depth is taken off too.
 */
static void
drop(struct sender *s)
{
	uint64_t max = s->conf.max_depth, n;

	n = depth(s, max + s->nbatch);
	if (n + s->nbatch > max && mq_depth_drop(&s->sp, n + s->nbatch - max,
	    s->conf.ttl_ms, mq_now_ms(), dropped, s) == -1)
		fail(s, "%s/%s", s->sp.path, MQ_DIR_NEW);
	/* Credit for the batch, and for what room is left after it. */
	n = n + s->nbatch >= max ? 0 : grant(max - n - s->nbatch);
	s->credit = s->nbatch + n;
}

/* No room, and no more waiting for it: the rest of the input stays. */
static void __dead
full(struct sender *s)
{
	int i;

	/* A keyed send's message, written before its look-up. */
	for (i = 0; i < s->nbatch; i++)
		mq_tmp_remove(&s->sp, s->batch[i]);
	mq_stdout_close();
	errx(mq_worse(s->status, MQ_EX_FULL), "%s: full (max-depth %s)",
	    s->sp.path, mq_conf_value(&s->conf, MQ_CONF_MAX_DEPTH));
}

/*
 * -w: waits for the doorbell (rung by claims while max-depth is set, by
 * mq-conf, and by counts that buried expired messages) or ROOM_POLL_MS,
 * then reads the settings again: raising or lifting max-depth lets a
 * waiting sender go on, and the count that follows buries what expired
 * meanwhile, so expiry makes room with no consumer.  Gives up after
 * wait_ms.
 */
static void
await(struct sender *s)
{
	uint64_t now = mq_now_ms(), left;

	if (!s->wflag)
		full(s);
	if (s->until == 0)
		s->until = s->wait_ms == UINT64_MAX ? UINT64_MAX :
		    now + s->wait_ms;
	if (now >= s->until)
		full(s);
	/* Opened before the count that follows, so no claim goes unseen. */
	if (!s->watching) {
		if (mq_wait_open(&s->w, &s->sp) == -1)
			goto failed;
		s->watching = 1;
		return;
	}
	left = s->until - now;
	if (mq_wait(&s->w, left < ROOM_POLL_MS ? (int64_t)left :
	    ROOM_POLL_MS) == -1)
		goto failed;
	mq_conf_xread(&s->sp, &s->conf);
	return;
failed:
	if (errno == ENOENT)
		errx(MQ_EX_SYS, "%s: spool removed", s->sp.path);
	err(MQ_EX_SYS, "%s/%s", s->sp.path, MQ_DIR_NEW);
}

/*
 * Before a message is begun, with max-depth, once the last count's credit
 * is used up: publishes the batch so far and counts again.  With
 * overflow=reject and no room, that batch is all this call sends, unless
 * -w waits for room.  drop-oldest makes its room as it publishes (drop).
 */
static void
admit(struct sender *s)
{
	uint64_t n;

	/* A batch past its credit is bounded as a credit is. */
	if (s->conf.drop_oldest) {
		if ((uint64_t)s->nbatch >= grant(s->conf.max_depth))
			flush(s);
		return;
	}
	flush(s);
	while (s->conf.max_depth > 0 && !s->conf.drop_oldest) {
		if ((n = depth(s, s->conf.max_depth)) < s->conf.max_depth) {
			s->credit = grant(s->conf.max_depth - n);
			s->until = 0;
			return;
		}
		await(s);
	}
	/* The settings changed while waiting: the next flush counts. */
	s->credit = 0;
}

/* -k: one message, a key mq-send takes. */
static void
keycheck(struct sender *s, int delim, int nfiles)
{
	mq_keys_init(&s->keys, &s->sp);
	if (s->key == NULL)
		return;
	if (delim != -1 || nfiles > 1)
		errx(MQ_EX_USAGE, "-k sends one message: not with %s",
		    delim != -1 ? "-l or -0" : "several files");
	s->keylen = strlen(s->key);
	if (!mq_key_valid(s->key, s->keylen))
		errx(MQ_EX_USAGE, "-k: a key is 1 to %d bytes, no newline",
		    MQ_KEY_MAX);
	mq_key_hash(s->key, s->keylen, s->name.keyhash);
}

/* Whether a keyed send has room to add its message (max-depth). */
static int
room(struct sender *s)
{
	return s->conf.max_depth == 0 || s->conf.drop_oldest ||
	    depth(s, s->conf.max_depth) < s->conf.max_depth;
}

/*
 * -k, the message written and synced in tmp/: takes the lock of keys/
 * (held to its rename into new/: see unkeyed) and looks the key up.  Held:
 * the message is taken back and the holder's ID printed (returns 0).
 * Free, once there is room: the message is made the key's holder, durably
 * (returns 1).  A full spool is waited for without the lock.
 */
static int
keyed(struct sender *s)
{
	char holder[MQ_ID_LEN + 1];
	const char *hash = s->name.keyhash;
	int r;

	if (mq_keys_open(&s->keys, 1) == -1)
		fail(s, "%s/%s", s->sp.path, MQ_DIR_KEYS);
	for (;;) {
		if (mq_keys_lock(&s->keys) == -1)
			fail(s, "%s/%s", s->sp.path, MQ_DIR_KEYS);
		r = mq_key_look(&s->keys, s->key, s->keylen,
		    s->conf.dedup_window_ms, holder);
		if (r == -1)
			fail(s, "%s/%s/%s", s->sp.path, MQ_DIR_KEYS, hash);
		if (r == MQ_KEY_OTHER || r == MQ_KEY_BAD) {
			mq_tmp_remove(&s->sp, s->batch[0]);
			errx(MQ_EX_SYS, "%s/%s/%s: %s", s->sp.path, MQ_DIR_KEYS,
			    hash, r == MQ_KEY_OTHER ? "another key has this "
			    "hash" : "not a key record");
		}
		if (r == MQ_KEY_HELD)
			break;
		if (room(s)) {
			memcpy(s->name.id, s->batch[0], sizeof(s->name.id));
			if (mq_key_hold(&s->keys, s->key, s->keylen,
			    s->name.id, s->sync) == -1)
				fail(s, "%s/%s/%s", s->sp.path, MQ_DIR_KEYS,
				    s->name.id);
			return 1;
		}
		mq_keys_unlock(&s->keys);
		await(s);
	}
	mq_keys_unlock(&s->keys);
	mq_tmp_remove(&s->sp, s->batch[0]);
	s->nbatch = 0;
	puts(holder);
	if (s->vflag)
		warnx("%s: held by key", holder);
	if (fflush(stdout) == EOF)
		err(MQ_EX_SYS, "stdout");
	return 0;
}

/*
 * After the rename into new/ (landed 1) or its failure (0, the message
 * then taken back by fail: its key first), lets the lock of keys/ go.
 */
static void
unkeyed(struct sender *s, int landed)
{
	if (!landed)
		mq_key_drop(&s->keys, s->name.keyhash, s->batch[0]);
	mq_keys_unlock(&s->keys);
}

static void
group(struct sender *s, const char *g)
{
	if (!mq_group_valid(g))
		errx(MQ_EX_USAGE, "-g %s: invalid group (1-%d of A-Z a-z 0-9 "
		    ". _ -, not starting with a dot)", g, MQ_GROUP_MAX);
	strlcpy(s->name.group, g, sizeof(s->name.group));
}

/*
 * Order within a group is send order: a delay would break it, or hold the
 * whole group back (SQS FIFO has no per-message delay either).
 */
static void
exclusive(const struct sender *s, uint64_t delay)
{
	if (delay != UINT64_MAX && s->name.group[0] != '\0')
		errx(MQ_EX_USAGE, "-g and -D exclude each other");
}

static void
send_whole(struct sender *s, int fd, const char *name)
{
	char buf[65536];
	ssize_t n;

	begin(s);
	for (;;) {
		if ((n = read(fd, buf, sizeof(buf))) == -1) {
			if (errno == EINTR)
				continue;
			fail(s, "%s", name);
		}
		if (n == 0)
			break;
		put(s, buf, n);
	}
	end(s);
}

static void
send_records(struct sender *s, int fd, int delim, const char *name)
{
	struct mq_reader r;
	const char *p;
	size_t len;
	int rc, endrec;

	mq_reader_init(&r, fd);
	for (;;) {
		/* A slow producer gets each message sent as it comes. */
		if (!mq_reader_pending(&r))
			flush(s);
		if ((rc = mq_reader_chunk(&r, delim, &p, &len, &endrec)) == -1)
			fail(s, "%s", name);
		if (rc == 0)
			break;
		if (s->tf.fd == -1)
			begin(s);
		put(s, p, len);
		if (endrec)
			end(s);
	}
	if (s->tf.fd != -1)
		end(s);
	mq_reader_free(&r);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "ttl", required_argument, NULL, OPT_TTL },
		{ NULL, 0, NULL, 0 }
	};
	static struct sender s;
	const char *dir = NULL, *name;
	uint64_t delay = UINT64_MAX;	/* no -D */
	int ch, i, fd, delim = -1, status = MQ_EX_OK;

	memset(&s, 0, sizeof(s));
	s.sync = 1;
	s.tf.fd = -1;
	while ((ch = getopt_long(argc, argv, MQ_OPTS("0lSvd:D:g:k:p:w::hV"),
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '0':
		case 'l':
			if (delim != -1 && delim != (ch == '0' ? '\0' : '\n'))
				errx(MQ_EX_USAGE, "-l and -0 exclude each "
				    "other");
			delim = ch == '0' ? '\0' : '\n';
			break;
		case 'S':
			s.sync = 0;
			break;
		case 'v':
			s.vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'D':
			delay = xsecs("-D", optarg, 0);
			break;
		case 'g':
			group(&s, optarg);
			break;
		case 'p':
			s.name.prio = xnumber("-p", optarg, 0, MQ_PRIORITY_MAX);
			break;
		case OPT_TTL:
			s.name.ttl = xsecs("--ttl", optarg, 1);
			break;
		case 'k':
			s.key = optarg;
			break;
		case 'w':
			s.wflag = 1;
			name = mq_optional_secs(optarg, argc, argv);
			s.wait_ms = name != NULL ? xsecs("-w", name, 0) :
			    UINT64_MAX;
			break;
		case 'h':
			help();
			return MQ_EX_OK;
		case 'V':
			mq_version();
			return MQ_EX_OK;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	keycheck(&s, delim, argc);
	exclusive(&s, delay);

	/* Past a file size limit, fail with EFBIG rather than die silently. */
	signal(SIGXFSZ, SIG_IGN);
	mq_spool_xopen(&s.sp, dir, 1);
	mq_conf_xread(&s.sp, &s.conf);
	mq_placer_init(&s.pl, &s.sp, s.sync);
	if (delay > 0 && delay != UINT64_MAX)
		s.due = mq_now_ms() + delay;

	for (i = 0; i < (argc ? argc : 1); i++) {
		name = argc ? argv[i] : "-";
		if (strcmp(name, "-") == 0) {
			fd = STDIN_FILENO;
			name = "stdin";
		} else if ((fd = open(name, O_RDONLY | O_CLOEXEC)) == -1) {
			warnx("%s: %s%s", name, strerror(errno), errno == ENOENT ?
			    " (operands are files; to send text, use: "
			    "echo TEXT | mq-send)" : "");
			s.status = status = MQ_EX_SYS;
			continue;
		}
		s.input = name;
		if (delim == -1)
			send_whole(&s, fd, name);
		else
			send_records(&s, fd, delim, name);
		if (fd != STDIN_FILENO)
			close(fd);
	}
	flush(&s);
	if (s.watching)
		mq_wait_close(&s.w);
	mq_placer_close(&s.pl);
	mq_keys_close(&s.keys);
	mq_spool_close(&s.sp);
	mq_stdout_close();
	return status;
}
