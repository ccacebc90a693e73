/*
 * mq.h: the spool core shared by the mq tools.
 *
 * A spool is a directory; each message is a regular file whose name holds
 * its ID and, depending on its state, its attempt count and a time.  Every
 * state change is one rename(2) (or unlink(2) for ack and purge), made
 * through directory file descriptors so that no path from user input is
 * ever followed.  The layout is described in mq-spool(5); the words that
 * make it up are the macros below and no tool spells them itself.
 *
 * Core functions return -1 with errno set (or an mq_exit status), ENOMEM
 * when memory runs out, and leave reporting and exiting to the tool.
 * src/README maps the files.
 */
#ifndef MQ_H
#define MQ_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define MQ_VERSION	"0.2.0"

/* State directories of a spool. */
#define MQ_DIR_TMP	"tmp"
#define MQ_DIR_NEW	"new"
#define MQ_DIR_CUR	"cur"
#define MQ_DIR_DEAD	"dead"
#define MQ_DIR_REASON	"reason"	/* a dead letter's reason */
#define MQ_DIR_LAST	"last"		/* a live message's last reason */
#define MQ_DIR_KEYS	"keys"		/* dedup keys: made by a keyed send */
#define MQ_DIR_GROUPS	"groups"	/* ordered groups' turns and queues */
#define MQ_DIR_OUTPUT	"output"	/* jobs' kept output (keep-output) */
#define MQ_DIR_ONCE	"once"		/* the ledger of finished messages */
#define MQ_OUTPUT_MAX	(1024 * 1024)	/* kept of a job: the last MiB, or two */

/* The settings file in the spool root, and its name while written in tmp/. */
#define MQ_CONF		"conf"
#define MQ_CONF_TMP	",conf"
/* A holder's file while written in tmp/ (holder.c). */
#define MQ_HOLDER_TMP	",holder"
#define MQ_CONF_MAX	4096

/*
 * The counters (count.c) and the log (log.c), in the spool root; log.1 is
 * the log before it, while log-age keeps it.
 */
#define MQ_COUNTERS	"counters"
#define MQ_COUNTS_SIZE	4096
#define MQ_LOG		"log"
#define MQ_LOG_OLD	"log.1"
#define MQ_LOG_SIZE	(16ULL << 20)	/* log-size's default */
#define MQ_LOG_SIZE_MAX	(1ULL << 30)
#define MQ_LOG_AGE_MS	(7ULL * 86400 * 1000)	/* log-age's default */

/* The depth cache (depth.c), and its name while written in tmp/. */
#define MQ_DEPTH_CACHE	".depth"
#define MQ_DEPTH_TMP	",depth"

/*
 * new/ is a three-level tree keyed by the time (ms since the epoch) at
 * which a message becomes visible, written as 11 lowercase hex digits:
 * new/TTTTT/TTTTTTTT/TTTTTTTTTTT/ (prefixes of 5, 8 and 11 digits), so no
 * directory has more than 4096 sub-directories whatever the depth.
 */
#define MQ_KEY_DIGITS	11
#define MQ_TOP_DIGITS	5
#define MQ_MID_DIGITS	8

/* A sender stops filling a leaf after this many messages or this long. */
#define MQ_LEAF_MAX	1024
#define MQ_LEAF_SPAN_MS	1000

/*
 * Spare directories kept in tmp/ (tmp/.spare.0 ...), made while there is
 * room, so that a claim or a release on a file system without a free block
 * or inode can rename one into place when mkdir fails: a consumer must be
 * able to drain a full spool, as draining is what frees it.  One release
 * may need three levels of new/, each claim one bucket.
 */
#define MQ_SPARE	".spare."
#define MQ_SPARES	8

/* tmp/ files older than this are fragments of crashed senders (qmail). */
#define MQ_TMP_STALE_SECS	129600

/* Tries when a directory keeps being removed under us (see place.c). */
#define MQ_RETRIES	8

#define MQ_ID_LEN	40	/* 16 hex time '.' pid '.' 12 hex random */
#define MQ_PRIORITY_MAX	9	/* mq-send -p: 0 to 9, higher first */
#define MQ_GROUP_MAX	64	/* mq-send -g: [A-Za-z0-9._-], no leading dot */
#define MQ_KEY_MAX	200	/* mq-send -k: any bytes but NUL and newline */
#define MQ_KEYHASH_LEN	32	/* a key's hash in names: 128 bits, hex */
/*
 * The longest name is one of cur/ with everything: ID (40), ",DEADLINE"
 * (12 digits, '.', 3: 17), ",ATTEMPT" (8), ",SENT" (15 digits: 16),
 * ",TTL" (13 digits: 14), ",pN" (3), ",gGROUP" (66), ",kHASH" (34), ",dN"
 * (6 digits: 8), ",hHOLDER" (49: see struct mq_holder): 255 bytes, the
 * most a name may have, and a NUL.
 */
#define MQ_NAME_MAX	256
#define MQ_BUCKET_MAX	24	/* a cur/ bucket's name: decimal seconds */
#define MQ_RECEIPT_MAX	4096

#define MQ_ATTEMPTS_MAX	1000000
#define MQ_DEATHS_MAX	999999	/* a name's ,dN: the deaths its history holds */
#define MQ_SECS_MAX	1000000000LL	/* about 31 years */
#define MQ_SECS_TOO_LARGE	"too large (the most is 1000000000 seconds)"
/* Short enough for an 80-column line with the program and option. */
#define MQ_DURATION_INVALID	"not a duration (90, 1.5, 250ms, 90s, 1.5m, 2h, 1d)"
#define MQ_DEFAULT_LEASE_MS	30000
#define MQ_DEFAULT_MAX	5

#define MQ_REASON_MAX_ATTEMPTS	"max attempts"
#define MQ_REASON_TTL		"ttl"	/* past its time to live */
#define MQ_REASON_MAXLEN	"maxlen"	/* overflow=drop-oldest */

enum mq_exit {
	MQ_EX_OK = 0,
	MQ_EX_NONE = 1,
	MQ_EX_USAGE = 2,
	MQ_EX_LOST = 3,
	MQ_EX_SYS = 4,
	MQ_EX_FAILED = 5,	/* worker mode: a job did not succeed */
	MQ_EX_FULL = 6		/* mq-send: the spool is at its max-depth */
};

/* A job that exits with this (EX_DATAERR) is dead-lettered at once. */
#define MQ_JOB_DEAD	65

/*
 * Why a message died: the one word for each cause in every tool and
 * output (mq_cause_word), and the counter of deaths for it.
 */
enum mq_cause {
	MQ_CAUSE_ATTEMPTS,	/* its attempts spent */
	MQ_CAUSE_REJECTED,	/* mq-ack -x, a job's exit 65 */
	MQ_CAUSE_TTL,		/* past its time to live */
	MQ_CAUSE_MAXLEN,	/* dropped, the oldest of a full spool */
	MQ_CAUSES
};
extern const char *const mq_cause_word[MQ_CAUSES];

/* The spool's counters (count.c), in this order in the file. */
enum mq_count {
	MQ_COUNT_SENT,
	MQ_COUNT_CLAIMED,
	MQ_COUNT_ACKED,
	MQ_COUNT_RELEASED,
	MQ_COUNT_REDRIVEN,
	MQ_COUNT_REMOVED,
	MQ_COUNT_DEAD_ATTEMPTS,	/* MQ_COUNT_DEAD_ATTEMPTS + cause */
	MQ_COUNT_DEAD_REJECTED,
	MQ_COUNT_DEAD_TTL,
	MQ_COUNT_DEAD_MAXLEN,
	MQ_COUNTS
};

enum mq_state {
	MQ_NEW,
	MQ_CUR,
	MQ_DEAD
};

/* The spool's settings (conf.c, mq-conf(1)) */
enum {
	MQ_CONF_MAX_ATTEMPTS,
	MQ_CONF_LEASE,
	MQ_CONF_MAX_DEPTH,
	MQ_CONF_OVERFLOW,
	MQ_CONF_TTL,
	MQ_CONF_PAUSED,
	MQ_CONF_DEDUP_WINDOW,
	MQ_CONF_LOG_SIZE,
	MQ_CONF_LOG_AGE,
	MQ_CONF_KEEP_OUTPUT,
	MQ_CONF_ONCE_WINDOW,
	MQ_CONF_NKEYS
};
struct mq_conf {
	unsigned max_attempts;
	uint64_t lease_ms;
	uint64_t max_depth;	/* 0: no limit */
	int	 drop_oldest;	/* overflow=drop-oldest, else reject */
	uint64_t ttl_ms;	/* 0: none */
	int	 paused;
	uint64_t paused_until_ms;	/* paused=TIME: then; 0: yes or no */
	uint64_t dedup_window_ms;
	uint64_t log_size;	/* bytes of log and log.1; 0: no log */
	uint64_t log_age_ms;	/* 0: no bound but the size */
	uint64_t keep_output_ms;	/* 0: jobs' output not kept */
	uint64_t once_window_ms;	/* 0: derived (mq_once_window) */
	char	 value[MQ_CONF_NKEYS][32];	/* as set; "": the default */
	char	 other[1024];	/* lines of keys this version does not know */
};
/* What tells that conf changed: its inode, size and times (seen: 0 before
 * the first read; all zero while there is none). */
struct mq_conf_stamp {
	int		 seen;
	dev_t		 dev;
	ino_t		 ino;
	off_t		 size;
	struct timespec	 mtime, ctime;
};

/*
 * Opening a spool allocates nothing: an ack that mallocs nothing pays no
 * heap set-up, and start-up is most of what one costs.
 */
struct mq_spool {
	const char *path;	/* as chosen: -d, $MQ_DIR or the XDG default */
	char	*real;		/* canonical absolute path, for receipts */
	char	 realbuf[PATH_MAX];
	int	 fd;
	int	 tmp, new, cur, dead, reason;
	int	 last;		/* last/, opened when first needed */
	int	 groups;	/* groups/, opened when first needed (group.c) */
	mode_t	 dmode;		/* directories are made like the spool root */
	mode_t	 fmode;
	dev_t	 dev;		/* of the root: which spool, on which fs */
	ino_t	 ino;
	gid_t	 gid;
	/*
	 * The settings as last read (mq_settings, mq_settings_read: conf.c),
	 * what every rule that follows them goes by.
	 */
	struct mq_conf	 conf;
	struct mq_conf_stamp conf_stamp;
	int	 conf_ready;	/* conf holds the defaults, at least */
	uint64_t *counts;	/* the counters, mapped when first counted */
	int	 counts_fd;
	int	 holders;	/* holders/, opened when first needed */
	int	 holder_entered;	/* mq_holder_enter done */
	uint64_t orphans_looked;	/* when mq_orphans last looked */
	unsigned holders_live;	/* other bound holders it found alive */
	int	 space_ok;	/* holders/ names our space: 1, not: -1 */
	int	 once;		/* once/, opened by the first record */
	int	 once_dirty;	/* records made since its last sync */
};

/*
 * Who holds a lease (cur/ names only, ",hKSPACE.PID.START.UID.SINCE"
 * between the deadline and the attempt, which stays the last field of a
 * plain message's name; the numbers in lower-case hex; holder.c): a
 * process that holds what it claims while it lives (kind
 * MQ_HOLDER_BOUND: a worker, mq-relay push) or one that printed receipts
 * for others to settle (MQ_HOLDER_RECEIPT: mq-recv); where its pid means
 * something (space: a hash of the boot and the pid and time namespaces;
 * 0: not known), its pid and start (clock ticks after boot), its user,
 * and when this attempt was claimed (seconds after the epoch).  kind 0:
 * none recorded (a claim of an older release).
 */
#define MQ_HOLDER_BOUND		'w'
#define MQ_HOLDER_RECEIPT	'r'
struct mq_holder {
	char	 kind;
	uint32_t space;
	uint32_t pid;
	uint64_t start;
	uint32_t uid;
	uint64_t since;
};

/*
 * A parsed message name.  ms is the lease deadline in cur/, the time of
 * death in dead/ and unused in new/.  sent and ttl are what its expiry
 * needs (mq_name_expiry): when it was enqueued (its send, or its last
 * redrive; 0 stands for the ID's own time) and its own time to live (0:
 * none), in ms.  dead/ keeps ttl only: a redrive enqueues it anew.
 * prio, group and keyhash are what it was sent with (mq-send -p, -g, -k:
 * the key itself is kept in keys/, under its hash); every state keeps
 * them ("" and 0: none).  deaths is how many past deaths its history,
 * deaths/ID, records (history.c); a dead letter's own death is not one
 * of them.  holder: cur/'s only.
 */
struct mq_name {
	char	 id[MQ_ID_LEN + 1];
	uint64_t ms;
	unsigned attempts;
	uint64_t sent;
	uint64_t ttl;
	unsigned prio;
	char	 group[MQ_GROUP_MAX + 1];
	char	 keyhash[MQ_KEYHASH_LEN + 1];
	unsigned deaths;
	struct mq_holder holder;
};

/*
 * Where messages are put into new/: the open leaf and how full it is.
 * dirty is set when a leaf got messages not yet made durable.
 */
struct mq_placer {
	struct mq_spool *sp;
	int	 root;		/* sp->new; a group's directory (group.c) */
	int	 pdir, top, mid, leaf;	/* pdir: new/pN, for priority N > 0 */
	unsigned prio;		/* of the open leaf */
	uint64_t key;
	int	 count;
	int	 dirty;
	int	 sync;
	/*
	 * Releases may take spare directories (see MQ_SPARES); sends and
	 * redrives may not, or they would use up on a full file system
	 * what consumers need to drain it.
	 */
	int	 spares;
	/*
	 * Placing new messages (a send): the directories it makes need no
	 * sync of their own before the rename, as what is placed was never
	 * durable elsewhere, and the placer syncs every level after it.
	 */
	int	 fresh;
	/*
	 * A sync that failed after its rename (a parked message of a group:
	 * it is queued all the same): the errno the next flush fails with.
	 */
	int	 err;
};

/* spool.c */
const char	*mq_spool_dir(const char *);
int	 mq_spool_open(struct mq_spool *, const char *, int);
const char	*mq_spool_whence(const char *);
const char	*mq_spool_origin(const char *);
int	 mq_spool_real(struct mq_spool *);
int	 mq_spool_need(struct mq_spool *, int);
void	 mq_spool_spares(struct mq_spool *);
int	 mq_spare_take(struct mq_spool *, int, const char *);
int	 mq_spool_full(int);
int	 mq_spool_subdir(struct mq_spool *, int, const char *, int);
#define MQ_SUBDIR_SPARES	1	/* a consumer's: may take a spare */
#define MQ_SUBDIR_UNSYNCED	2	/* one made is not synced: a send's */
int	 mq_spool_topdir(struct mq_spool *, const char *);
int	 mq_spool_sync(struct mq_spool *);
void	 mq_spool_close(struct mq_spool *);

/* name.c */
uint64_t mq_now_ms(void);
int	 mq_time_parse(const char *, size_t, uint64_t *);

/* count.c */
void	 mq_count(struct mq_spool *, enum mq_count, uint64_t);
enum mq_count mq_count_dead(enum mq_cause);
int	 mq_counts_sync(struct mq_spool *);
int	 mq_counts_read(struct mq_spool *, uint64_t[MQ_COUNTS]);
void	 mq_counts_close(struct mq_spool *);

/* log.c */
void	 mq_log_begin(struct mq_spool *, const char *, const char *);
void	 mq_log_str(const char *, const char *, size_t);
void	 mq_log_num(const char *, uint64_t);
void	 mq_log_end(void);
void	 mq_log_flush(void);
int	 mq_log_trim(struct mq_spool *, uint64_t);
int	 mq_log_open(struct mq_spool *, int);

/* once.c: the ledger of finished messages (mq-recv --once) */
#define MQ_ONCE_WINDOW_MS	(7ULL * 86400 * 1000)	/* with no ttl */
/* 'k' HASH or 'i' ID, and a NUL. */
#define MQ_ONCE_NAME_MAX	(1 + MQ_ID_LEN + 1)
int	 mq_once_done(struct mq_spool *, const struct mq_name *);
int	 mq_once_entry(struct mq_spool *, const struct mq_name *, char *,
	    size_t);
struct stat;
int	 mq_once_keeps(struct mq_spool *, const char *, struct stat *);
int	 mq_once_record(struct mq_spool *, const struct mq_name *);
int	 mq_once_sync(struct mq_spool *);
uint64_t mq_once_window(const struct mq_conf *);
int	 mq_once_trim(struct mq_spool *, uint64_t, uint64_t,
	    void (*)(const char *, const char *));

/* output.c */
struct mq_output {
	int	 dir, fd;
	uint64_t size;
	char	 name[MQ_NAME_MAX];
};
int	 mq_output_open(struct mq_output *, struct mq_spool *, const char *,
	    unsigned);
void	 mq_output_write(struct mq_output *, const char *, size_t);
void	 mq_output_close(struct mq_output *);
int	 mq_output_find(struct mq_spool *, const char *, unsigned, int[2],
	    char[MQ_ID_LEN + 1], unsigned *);
int	 mq_output_sweep(struct mq_spool *, uint64_t,
	    void (*)(const char *, const char *));
int	 mq_log_is(struct mq_spool *, int, int);
int	 mq_log_open_both(struct mq_spool *, int[2]);
int	 mq_log_watch(struct mq_spool *);	/* wait.c */
void	 mq_log_watched(int);
void	 mq_id_new(char *);
uint64_t mq_id_ms(const char *);
int	 mq_id_valid(const char *);
/*
 * What an operator gives for an ID (mq-rm, mq-show, mq-dlq): the whole
 * ID, or a prefix of one of MQ_ID_PREFIX_MIN characters or more that one
 * message's ID alone starts with.  mq_matches holds the IDs a search for
 * a prefix met: the first MQ_MATCHES_KEPT in ID order, and how many.
 */
#define MQ_ID_PREFIX_MIN	8
#define MQ_MATCHES_KEPT		10
struct mq_matches {
	size_t	 n;		/* the IDs that start with it */
	size_t	 kept;		/* the first of them: */
	char	 id[MQ_MATCHES_KEPT][MQ_ID_LEN + 1];
};
int	 mq_id_prefix_valid(const char *);
int	 mq_matches_init(struct mq_matches *, const char *);
void	 mq_matches_add(struct mq_matches *, const char *);
int	 mq_matches_status(const struct mq_matches *);
int	 mq_name_parse(const char *, enum mq_state, struct mq_name *);
int	 mq_name_format(char *, size_t, enum mq_state, const struct mq_name *);
int	 mq_group_valid(const char *);
uint64_t mq_name_expiry(const struct mq_name *, uint64_t);
int	 mq_leaf_key_format(char *, size_t, uint64_t, int);
int	 mq_leaf_key_parse(const char *, int, uint64_t *);
uint64_t mq_cur_bucket(uint64_t);
int	 mq_cur_bucket_format(char *, size_t, uint64_t);
int	 mq_cur_bucket_parse(const char *, uint64_t *);
int	 mq_is_cur_bucket(const char *);
int	 mq_secs_parse(const char *, uint64_t *, const char **);
void	 mq_time_iso(char *, size_t, uint64_t);

/* place.c: the new/ tree */
void	 mq_placer_init(struct mq_placer *, struct mq_spool *, int);
void	 mq_placer_release_init(struct mq_placer *, struct mq_spool *);
int	 mq_place(struct mq_placer *, int, const char *, const char *,
	    unsigned, uint64_t);
int	 mq_placer_flush(struct mq_placer *);
int	 mq_place_back(struct mq_placer *, int, const char *,
	    const struct mq_name *, uint64_t);
void	 mq_placer_close(struct mq_placer *);
int	 mq_prio_dir(const char *);

/*
 * One descent of new/'s trees, one per priority, each of three levels
 * (mq_tree_walk).  fn is given each directory with its level
 * (MQ_TOP_DIGITS, MQ_MID_DIGITS, MQ_KEY_DIGITS), its key and the priority
 * of its tree, and answers what to do with it, or -1 on error.
 */
enum mq_tree_step {
	MQ_TREE_NEXT,		/* leave it, go on */
	MQ_TREE_INTO,		/* walk its level; a leaf: to t->leaf */
	MQ_TREE_USED,		/* done with it: remove it if empty, go on */
	MQ_TREE_STOP,		/* end the walk */
	MQ_TREE_LATER		/* end this priority's tree, go on */
};
struct mq_tree {
	int	(*fn)(void *, int, const char *, int, uint64_t, unsigned);
	/* A leaf fn goes into (or every leaf, fn NULL), open: answers as fn. */
	int	(*leaf)(void *, int, uint64_t, unsigned);
	void	*arg;
	int	 sorted;	/* in key order (listed first), else as read */
	int	 remove;	/* remove what is used, and levels passed */
	int	 tolerant;	/* an unreadable level is passed (not ENOMEM) */
	uint64_t now;		/* with remove: only what no sender fills */
	int	 lowfirst;	/* sorted: trees from priority 0 up, else 9 down */
};
int	 mq_tree_walk(const struct mq_tree *, int);

/* send.c: writing into tmp/, then one rename */
struct mq_tmpfile {
	struct mq_spool *sp;
	int	 fd;		/* while being written, else -1 */
	char	 name[MQ_NAME_MAX];	/* in tmp/; "" once committed */
};
int	 mq_tmp_create(struct mq_tmpfile *, struct mq_spool *, const char *);
int	 mq_tmp_write(struct mq_tmpfile *, const void *, size_t);
enum mq_tmp_sync {
	MQ_TMP_SYNC_NONE,
	MQ_TMP_SYNC_BATCH,	/* mq_tmp_sync does it, where it can */
	MQ_TMP_SYNC_NOW
};
int	 mq_tmp_close(struct mq_tmpfile *, enum mq_tmp_sync);
void	 mq_tmp_abort(struct mq_tmpfile *);
int	 mq_tmp_commit(struct mq_tmpfile *, int, const char *);
int	 mq_tmp_sync(struct mq_spool *, char (*)[MQ_ID_LEN + 1], int,
	    const char **);
void	 mq_tmp_remove(struct mq_spool *, const char *);
int	 mq_tmp_copy(struct mq_tmpfile *, struct mq_spool *, struct mq_spool *,
	    const char *);
int	 mq_tmp_link(struct mq_spool *, const char *, struct mq_spool *,
	    enum mq_tmp_sync, int, int *);
int	 mq_tmp_rename(struct mq_spool *, const char *, const char *);

/* key.c: dedup keys (mq-send -k), their records in keys/ */
struct mq_keys {
	struct mq_spool *sp;
	int	 fd;		/* keys/, or -1 */
	int	 locked;
	int	 taken;		/* a gone holder's key was forgotten */
};
enum mq_key_state {
	MQ_KEY_LIVE,		/* its holder is in the spool */
	MQ_KEY_RECENT,		/* acked or purged, within the window */
	MQ_KEY_PAST,		/* acked or purged before the window */
	MQ_KEY_BROKEN,		/* keys/ID is missing */
	MQ_KEY_STRANDED		/* in tmp/ still: its sender died */
};
enum mq_key_look {
	MQ_KEY_FREE,
	MQ_KEY_HELD,
	MQ_KEY_OTHER,		/* another key has this hash */
	MQ_KEY_BAD		/* keys/HASH or keys/ID is not a record */
};
void	 mq_sha256(const void *, size_t, unsigned char [32]);
int	 mq_key_valid(const char *, size_t);
void	 mq_key_hash(const char *, size_t, char *);
int	 mq_key_is_hash(const char *);
void	 mq_keys_init(struct mq_keys *, struct mq_spool *);
int	 mq_keys_open(struct mq_keys *, int);
int	 mq_keys_lock(struct mq_keys *);
void	 mq_keys_unlock(struct mq_keys *);
void	 mq_keys_close(struct mq_keys *);
int	 mq_key_read(struct mq_keys *, const char *, char *, char *, size_t *);
int	 mq_key_state(struct mq_keys *, const char *, const char *, uint64_t,
	    uint64_t);
int	 mq_key_forget(struct mq_keys *, const char *, const char *, int);
int	 mq_key_look(struct mq_keys *, const char *, size_t, uint64_t, char *);
int	 mq_key_hold(struct mq_keys *, const char *, size_t, const char *, int);
void	 mq_key_drop(struct mq_keys *, const char *, const char *);
int	 mq_key_get(struct mq_keys *, const struct mq_name *, char *);

/* receipt.c: leases in cur/ and their receipts */
struct mq_bucket {
	int	 fd;		/* cur/S, or -1 */
	char	 name[MQ_BUCKET_MAX];
	uint64_t secs;		/* S, while fd is open */
};
int	 mq_lease(struct mq_spool *, int, const char *, const struct mq_name *,
	    struct mq_bucket *, char *, size_t);
int	 mq_receipt_format(char *, size_t, const struct mq_spool *,
	    const char *, const char *);
/*
 * A claimed message, as its receipt names it.  One mq_receipt serves a
 * batch of receipts: the bucket of the last is kept open for the next.
 */
struct mq_receipt {
	struct mq_spool *sp;
	int	 bucket;	/* cur/S, open, or -1 before the first */
	char	 bname[MQ_BUCKET_MAX];	/* S */
	const char *name;	/* the claimed name inside it */
	struct mq_name n;
	char	 pruned[MQ_BUCKET_MAX];	/* a bucket to remove if empty */
	int	 unkept;	/* a release's reason not kept: its errno */
};
void	 mq_receipt_init(struct mq_receipt *);
int	 mq_receipt_open(struct mq_spool *, const char *, struct mq_receipt *,
	    const char **);
int	 mq_receipt_claimed(struct mq_spool *, const char *,
	    struct mq_receipt *, const char **);
int	 mq_receipt_again(struct mq_receipt *, const char *, const char *,
	    const struct mq_name *);
const char *mq_receipt_shown(const struct mq_spool *, const char *);
int	 mq_receipt_spool(const char *, char *, size_t);
int	 mq_receipt_ack(struct mq_receipt *);
int	 mq_receipt_done(struct mq_receipt *);
int	 mq_receipt_release(struct mq_receipt *, struct mq_placer *, uint64_t,
	    const char *, size_t);
int	 mq_receipt_unclaim(struct mq_receipt *, struct mq_placer *,
	    const char *, size_t);
int	 mq_receipt_bury(struct mq_receipt *, const char *, size_t,
	    enum mq_cause);
int	 mq_receipt_extend(struct mq_receipt *, uint64_t, char *, size_t);
int	 mq_receipt_body(const struct mq_receipt *);
void	 mq_receipt_prune(struct mq_receipt *);
void	 mq_receipt_close(struct mq_receipt *);

/* claim.c */
/*
 * A claimer that claims again and again (worker mode) keeps the rest of
 * the leaf it listed, sorted, for its next claims (see mq_claim), while
 * nothing of a higher priority can be due (see claim.c).
 */
struct mq_claimer {
	unsigned max;		/* max attempts (-m); 0: the spool's */
	int	 keep;
	int	 ring;		/* ring the doorbell after claiming (max-depth) */
	int	 uncounted;	/* a claim is no attempt (mq-relay push) */
	int	 leaf;		/* that leaf, or -1 */
	char	**names;
	size_t	 n, next;
	unsigned prio;		/* the leaf's priority */
	uint64_t until;		/* the first key not due above it then */
	struct timespec stamp;	/* new/'s mtime before the walk that kept it */
	int	 racy;		/* that mtime may hide a later change */
	struct mq_bucket bucket;	/* of cur/, of the last lease (lazy) */
	int	 lazy;	/* keeps its bucket of cur/ open (worker mode) */
	int	 changed;	/* a claim stopped: the settings changed */
};
void	 mq_claimer_init(struct mq_claimer *, int);
void	 mq_claimer_close(struct mq_claimer *);
typedef int (*mq_claim_fn)(void *, const char *, const char *);
int	 mq_claim(struct mq_spool *, struct mq_claimer *, int, uint64_t,
	    mq_claim_fn, void *, uint64_t *);
typedef int (*mq_expired_fn)(void *, int, const char *,
	    const struct mq_name *);
int	 mq_expired_scan(struct mq_spool *, uint64_t, int, mq_expired_fn,
	    void *, uint64_t *);

/* holder.c: who holds a lease; leases of holders gone */
#define MQ_JUDGE_MAX	64
struct mq_judge {		/* verdicts kept: {0} to begin */
	size_t	 n, next;
	struct {
		uint32_t space, pid;
		uint64_t start;
		int	 gone;
	} v[MQ_JUDGE_MAX];
};
struct mq_holder_info {
	uint64_t started_ms;	/* the process' start; 0: not known */
	char	 host[256];
	char	 tool[32];
	char	 command[512];
};
/* A claimer waiting while other holders live looks again this often. */
#define MQ_ORPHANS_EVERY_MS	1000
void	 mq_holder_bind(const char *, const char *);
void	 mq_holder_self(struct mq_holder *, uint64_t);
void	 mq_holder_enter(struct mq_spool *);
void	 mq_holder_leave(struct mq_spool *);
int	 mq_holder_jobs(struct mq_spool *, const long *, size_t);
int	 mq_holder_gone(struct mq_judge *, struct mq_spool *,
	    const struct mq_holder *);
void	 mq_holder_describe(struct mq_spool *, const struct mq_holder *,
	    struct mq_holder_info *);
int	 mq_orphans(struct mq_spool *, uint64_t, int, int);

/* depth.c: messages waiting in new/, for max-depth */
int	 mq_depth(struct mq_spool *, uint64_t, int, uint64_t *);
typedef void (*mq_drop_fn)(void *, const char *);
int	 mq_depth_drop(struct mq_spool *, uint64_t, mq_drop_fn, void *);

/* sweep.c */
int	 mq_reclaim(struct mq_spool *, unsigned, void (*)(const char *,
	    const char *));
int	 mq_expire(struct mq_spool *, void (*)(const char *, const char *));
int	 mq_prune(struct mq_spool *);
int	 mq_tidy(struct mq_spool *);
int	 mq_tmp_clean(struct mq_spool *, uint64_t,
	    void (*)(const char *, const char *));
int	 mq_keys_sweep(struct mq_spool *, void (*)(const char *, const char *));

/* land.c: tree or group, for what enters a spool */
int	 mq_land(struct mq_placer *, int, const char *, const struct mq_name *,
	    uint64_t);
int	 mq_tmp_land(struct mq_placer *, const struct mq_name *, uint64_t);

/* group.c: ordered groups (mq-send -g) */
int	 mq_group_place(struct mq_placer *, int, const char *,
	    const struct mq_name *, uint64_t);
int	 mq_group_sync(struct mq_spool *);
int	 mq_group_claimed(struct mq_spool *, int, const char *,
	    const struct mq_name *, unsigned);
int	 mq_group_leave(struct mq_spool *, int, const char *,
	    const struct mq_name *, const char *, const char *, int *);
void	 mq_group_unlock(int *);
int	 mq_group_unpark(struct mq_spool *, int, const char *, const char *);
struct mq_parked_walk {
	int	(*fn)(void *, int, const char *, const struct mq_name *,
		    uint64_t);
	int	(*group)(void *, const char *);		/* or NULL */
	int	(*leaving)(void *, int, const char *,	/* or NULL */
		    const struct mq_name *);
	int	(*tree)(void *, int, const char *);	/* or NULL */
	int	(*unread)(void *, const char *, int);	/* or NULL */
	void	*arg;
	int	 sorted;	/* groups in name order */
	int	 as_read;	/* fn renames nothing: leaves not listed first */
	int	 failed;	/* a group or leaf not read: its errno */
	int	 stopped;
};
int	 mq_group_parked(struct mq_spool *, struct mq_parked_walk *);
int	 mq_group_leaving_parse(const char *, struct mq_name *, int *);
int	 mq_group_mend(struct mq_spool *, const char *);
int	 mq_group_bury_unfinished(struct mq_spool *, const char *,
	    void (*)(const char *, const char *));
int	 mq_group_sweep(struct mq_spool *, void (*)(const char *,
	    const char *));

/* dead.c */
struct stat;
struct mq_kept {		/* the last/ID a release wrote */
	dev_t	 dev;
	ino_t	 ino;
};
int	 mq_bury(struct mq_spool *, int, const char *, const struct mq_name *,
	    const char *, size_t, enum mq_cause);
int	 mq_bury_spent(struct mq_spool *, int, const char *,
	    const struct mq_name *);
int	 mq_last_dir(struct mq_spool *, int);
int	 mq_reason_keep(struct mq_spool *, const char *, const char *, size_t,
	    struct mq_kept *);
void	 mq_reason_unkeep(struct mq_spool *, const char *,
	    const struct mq_kept *);
void	 mq_reason_drop(struct mq_spool *, const char *);
int	 mq_reason_remove_same(struct mq_spool *, int, const char *,
	    const struct stat *);
int	 mq_reason_last(struct mq_spool *, const char *, char **, size_t *);
char	*mq_reason_spent(const char *, size_t, size_t *);
/* A run of burials for one reason, which they share (see dead.c). */
struct mq_burial {
	struct mq_spool *sp;
	const char *reason;
	size_t	 len;
	enum mq_cause cause;	/* what the deaths are counted as */
	char	 shared[MQ_NAME_MAX];	/* in tmp/, or "" */
	dev_t	 dev;		/* of the shared reason */
	ino_t	 ino;
	int	 nolink;	/* no hard links here: each writes its own */
	int	 expiry;	/* each dead as of its expiry, under ttl */
	uint64_t ttl;		/* the spool's */
	int	 batch;		/* renames may wait for reason/'s sync */
	struct mq_interment *queue;	/* those waiting */
	size_t	 nqueue;
};
void	 mq_burial_init(struct mq_burial *, struct mq_spool *, const char *,
	    size_t, enum mq_cause);
void	 mq_burial_expired(struct mq_burial *, struct mq_spool *, uint64_t);
int	 mq_burial_bury(struct mq_burial *, int, const char *,
	    const struct mq_name *);
void	 mq_burial_end(struct mq_burial *);
/* reap.c: a message's fate when met past its time, and its burial */
#define MQ_REAP_EXPIRY	UINT_MAX	/* only expiry is a fate (a count) */
enum mq_fate {
	MQ_FATE_LIVE,
	MQ_FATE_EXPIRED,	/* past its time to live */
	MQ_FATE_SPENT		/* at max attempts */
};
struct mq_reaper {
	struct mq_spool	*sp;
	uint64_t	 now;		/* ms; the caller may move it on */
	uint64_t	 ttl;		/* the spool's, ms (0: none) */
	unsigned	 max;		/* attempts, or MQ_REAP_EXPIRY */
	unsigned	 buried;
	struct mq_burial expired;
};
void	 mq_reaper_init(struct mq_reaper *, struct mq_spool *, unsigned);
enum mq_fate	 mq_fate(const struct mq_reaper *, const struct mq_name *);
int	 mq_reap(struct mq_reaper *, int, const char *, const struct mq_name *);
void	 mq_reaper_end(struct mq_reaper *);
struct mq_dead {
	char	 name[MQ_NAME_MAX];
	struct mq_name n;
};
int	 mq_dead_list(struct mq_spool *, struct mq_dead **, size_t *);
int	 mq_dead_find(struct mq_spool *, const char *, struct mq_dead *);
int	 mq_dead_match(struct mq_spool *, const char *, struct mq_matches *);
int	 mq_dead_reason(struct mq_spool *, const char *, char **, size_t *);
int	 mq_dead_open(struct mq_spool *, const struct mq_dead *);
int	 mq_dead_redrive(struct mq_spool *, const struct mq_dead *,
	    struct mq_placer *, int *, struct stat *);
int	 mq_dead_lock(struct mq_spool *);
void	 mq_dead_unlock(struct mq_spool *);
/* leave.c: a dead letter leaves (a purge) */
int	 mq_dead_purge(struct mq_spool *, const struct mq_dead *);
int	 mq_dead_sync(struct mq_spool *);
void	 mq_dead_purged(struct mq_spool *, const struct mq_dead *);
void	 mq_dead_redriven(struct mq_spool *, const struct mq_dead *,
	    const struct mq_spool *, const struct stat *);

/* history.c: a message's past deaths, deaths/ID (see history.c) */
#define MQ_DIR_DEATHS	"deaths"
#define MQ_REASON_MAX	(1024 * 1024)	/* the longest reason kept */
struct mq_death {
	uint64_t ms;
	unsigned attempts;
	const char *reason;	/* NULL: none recorded */
	size_t	 len;
};
struct mq_history {
	FILE	*fp;
	unsigned left;		/* records still counted by the name */
	char	*buf;		/* the last record's reason */
	size_t	 cap;
};
int	 mq_history_open(struct mq_history *, struct mq_spool *,
	    const struct mq_name *);
int	 mq_history_next(struct mq_history *, struct mq_death *);
void	 mq_history_close(struct mq_history *);
int	 mq_history_carry(struct mq_spool *, struct mq_spool *,
	    const struct mq_name *, const char *, size_t, unsigned *);
int	 mq_history_forget(struct mq_spool *, const struct mq_name *);

/* wait.c */
struct mq_waiter {
	int	 fd;		/* inotify, or -1 when polling */
	int	 dirfd;
	struct timespec	 seen;
};
int	 mq_wait_open(struct mq_waiter *, struct mq_spool *);
int	 mq_wait(struct mq_waiter *, int64_t);
int	 mq_wait_fd(struct mq_waiter *, int64_t *);
int	 mq_wait_rung(struct mq_waiter *, int);
void	 mq_wait_close(struct mq_waiter *);
int	 mq_ring(struct mq_spool *);

/* conf.c: the spool's settings (mq-conf(1)) */
const char	*mq_conf_name(int);
int	 mq_conf_key(const char *, size_t);
void	 mq_conf_init(struct mq_conf *);
int	 mq_conf_set(struct mq_conf *, int, const char *, const char **);
const char	*mq_conf_pause_until(const char *, uint64_t, char *, size_t);
const char	*mq_conf_value(const struct mq_conf *, int);
int	 mq_conf_isset(const struct mq_conf *, int);
int	 mq_conf_read(struct mq_spool *, struct mq_conf *, int *,
	    const char **);
int	 mq_conf_lock(struct mq_spool *);
void	 mq_conf_unlock(struct mq_spool *);
int	 mq_conf_write(struct mq_spool *, const struct mq_conf *, int *);
int	 mq_settings_read(struct mq_spool *, int *, const char **);
int	 mq_settings_changed(struct mq_spool *);
const struct mq_conf	*mq_settings(struct mq_spool *);

/* enqueue.c: keys, room, landing and sync for what enters a spool */
struct mq_enqueue {
	struct mq_spool	*sp;		/* its settings: max-depth, overflow... */
	struct mq_placer pl;
	struct mq_keys	 keys;
	int		 sync;
	int		 parked_unsynced;	/* groups/ to syncfs */
	uint64_t	 credit;	/* messages to land before counting */
	uint64_t	 until;		/* end of a wait for room; 0: none */
	int		 watching;	/* w is open */
	struct mq_waiter w;
};
enum mq_enq_next {
	MQ_ENQ_GO,	/* begin the next message */
	MQ_ENQ_PUBLISH,	/* publish the batch first (drop-oldest) */
	MQ_ENQ_COUNT	/* publish the batch, then mq_enq_admit */
};
void	 mq_enq_init(struct mq_enqueue *, struct mq_spool *, int);
void	 mq_enq_close(struct mq_enqueue *);
int	 mq_enq_key_lock(struct mq_enqueue *);
int	 mq_enq_key_look(struct mq_enqueue *, const char *, size_t, char *);
int	 mq_enq_key_hold(struct mq_enqueue *, const char *, size_t,
	    const char *);
void	 mq_enq_key_done(struct mq_enqueue *, const char *, const char *, int);
void	 mq_enq_key_unlock(struct mq_enqueue *);
int	 mq_enq_count(struct mq_enqueue *, uint64_t, int, uint64_t *);
enum mq_enq_next mq_enq_next(struct mq_enqueue *, uint64_t);
int	 mq_enq_admit(struct mq_enqueue *);
int	 mq_enq_await(struct mq_enqueue *, uint64_t);
int	 mq_enq_make_room(struct mq_enqueue *, uint64_t, mq_drop_fn, void *);
int	 mq_enq_land(struct mq_enqueue *, const struct mq_name *, uint64_t);
int	 mq_enq_redrive(struct mq_enqueue *, struct mq_spool *,
	    const struct mq_dead *, int *, struct stat *);
int	 mq_enq_flush(struct mq_enqueue *, int);

/*
 * look.c: every message, read-only, in claim order by state (mq-ls; one
 * by ID): each handed to fn with the directory it is in (open for the
 * call), that directory's path from the spool root, its name, the parsed
 * name and the time that matters to its state: when visible (ready,
 * delayed), when the lease ends (expired, inflight), when it died or
 * expired (dead), when sent (blocked).  fn returns 0 to go on, 1 to stop
 * the walk, -1 on error (errno set: the walk ends).
 */
enum mq_look_state {
	MQ_LOOK_EXPIRED,	/* a lease ran out, not yet reclaimed */
	MQ_LOOK_READY,
	MQ_LOOK_DELAYED,
	MQ_LOOK_BLOCKED,	/* parked behind the head of its group */
	MQ_LOOK_INFLIGHT,
	MQ_LOOK_ORPHANED,	/* in flight, its bound holder gone (holder.c) */
	MQ_LOOK_DEAD,		/* dead/, or waiting past its time to live */
	MQ_LOOK_NSTATES
};
#define MQ_LOOK_ALL	((1u << MQ_LOOK_NSTATES) - 1)
enum mq_look_in {		/* where it is, which its removal follows */
	MQ_IN_NEW,		/* new/ (a group's head too) */
	MQ_IN_PARKED,		/* a group's tree, groups/G/T/M/L/ */
	MQ_IN_CUR,
	MQ_IN_DEAD,		/* dead/ */
	MQ_IN_LEAVING		/* groups/G/leaving.*: a burial half way */
};
struct mq_look {
	enum mq_look_state state;
	enum mq_look_in in;
	int	 dirfd;
	const char *dir;	/* "new/p3/T/M/L", "cur/S", "dead", ... */
	const char *name;
	struct mq_name n;
	uint64_t ms;
};
struct mq_looker {
	unsigned states;	/* 1 << MQ_LOOK_*: the states to visit */
	uint64_t now;
	uint64_t ttl_ms;	/* the spool's (0: none) */
	const char *id;		/* only the message of this ID; NULL: all */
	int	 prefix;	/* id is a prefix: every ID starting with it */
	int	 buried_only;	/* dead: dead/'s only (mq-dlq), not those
				   past their time to live where they wait */
	int	(*fn)(void *, const struct mq_look *);
	/*
	 * A directory that cannot be read (where, errno): the walk goes on;
	 * for lack of memory it ends instead (mq_look: -1, ENOMEM).
	 */
	void	(*fail)(void *, const char *, int);
	void	*arg;
};
const char	*mq_look_state_name(enum mq_look_state);
int	 mq_look_state_parse(const char *);
enum mq_look_state mq_state_waiting(const struct mq_name *, int, uint64_t,
	    uint64_t, uint64_t, uint64_t *);
enum mq_look_state mq_state_leased(const struct mq_name *, uint64_t,
	    uint64_t, uint64_t *);
int	 mq_look(struct mq_spool *, const struct mq_looker *);
int	 mq_look_peek(const struct mq_look *, char *, size_t, size_t *,
	    off_t *);

/*
 * find.c: a message by its ID in any state (mq-show, mq-rm), found by
 * mq_look (its state is look.c's); every removal of one goes through
 * mq_remove.
 */
struct mq_found {
	int	 dirfd;		/* the directory it is in, open; -1: none */
	char	 name[MQ_NAME_MAX];
	struct mq_name n;
	enum mq_look_state state;
	enum mq_look_in in;
};
#define MQ_RM_FORCE	1	/* in flight too */
#define MQ_RM_WAITING	2	/* never a dead letter */
typedef int (*mq_found_fn)(void *, struct mq_found *);
int	 mq_find(struct mq_spool *, const char *, uint64_t, struct mq_found *);
int	 mq_find_match(struct mq_spool *, const char *, struct mq_matches *);
int	 mq_find_each(struct mq_spool *, uint64_t, unsigned, mq_found_fn,
	    void *);
int	 mq_found_open(const struct mq_found *);
void	 mq_found_close(struct mq_found *);
int	 mq_remove(struct mq_spool *, struct mq_found *, int);

/* stat.c */
struct mq_stats {
	uint64_t ready, delayed, in_flight, expired, dead;
	uint64_t blocked;	/* parked behind the head of their group */
	uint64_t oldest_ready_ms;	/* ready since; UINT64_MAX: none */
	uint64_t oldest_dead_ms;	/* time of death; UINT64_MAX: none */
	uint64_t bytes;			/* of every message file, if asked */
};
int	 mq_stat(struct mq_spool *, uint64_t, uint64_t, int,
	    struct mq_stats *);
/*
 * What a directory of messages held when it was last listed (a leaf of
 * new/, or dead/), kept by the caller between counts (mq-top) so that
 * only the directories changed since are listed again (stat.c).
 */
struct mq_stat_leaf {
	unsigned prio;
	uint64_t key;		/* when due */
	ino_t	 ino;
	struct timespec mtime, ctime;
	uint64_t n;
	uint64_t base;		/* the earliest send (dead/: death); or max */
	uint64_t own;		/* the earliest own expiry; or max */
	uint64_t bytes;
	int	 with_bytes;
};
struct mq_stat_cache {
	dev_t	 dev;		/* the spool's */
	ino_t	 ino;
	struct mq_stat_leaf *v, *next;	/* v by priority and key */
	size_t	 n, nnext, capnext;
	struct mq_stat_leaf dead;
	int	 have_dead;
};
int	 mq_stat_kept(struct mq_spool *, struct mq_stat_cache *, uint64_t,
	    uint64_t, int, struct mq_stats *);
void	 mq_stat_cache_free(struct mq_stat_cache *);

/* The most messages one batch holds: a send's, a pull's. */
#define MQ_BATCH_MAX	MQ_LEAF_MAX

/* leave.c */
int	 mq_leave(struct mq_spool *, int, const char *, const struct mq_name *);
int	 mq_leave_done(struct mq_spool *, int, const char *,
	    const struct mq_name *);

/* util.c */
int	 mq_worse(int, int);
int	 mq_exists(int, const char *);
void	 mq_closefd(int *);
int	 mq_fsync_dir(int);
int	 mq_copy_fd(int, int);
int	 mq_mkdirat(int, const char *, mode_t, int *);
int	 mq_create(int, const char *, mode_t);
int	 mq_opendirat(int, const char *);
struct mq_names {
	char	**v;
	size_t	 n, cap;
};
int	 mq_dir_each(int, int, int (*)(void *, int, const char *), void *);
struct mq_trim {
	uint64_t	 before;	/* ms: a file changed earlier goes */
	int		 by_ctime;	/* the later of ctime and mtime */
	int		(*valid)(const char *);	/* NULL: every file */
	int		(*held)(const char *, const struct stat *);
	const char	*prefix;	/* of the name reported, or NULL */
	const char	*why;		/* reported after the name */
	void		(*report)(const char *, const char *);
};
int	 mq_dir_trim(int, const struct mq_trim *);
int	 mq_names_read(int, int, int (*)(const char *), struct mq_names *);
int	 mq_names_add(struct mq_names *, const char *);
int	 mq_names_add_max(struct mq_names *, const char *, size_t);
void	*mq_grow(void *, size_t *, size_t, size_t, size_t);
void	 mq_names_sort(struct mq_names *);
int	 mq_names_cmp(const void *, const void *);
int	 mq_dir_ordered(int, int (*)(const char *),
	    int (*)(const void *, const void *),
	    int (*)(void *, int, const char *), void *, int *);
void	 mq_names_free(struct mq_names *);

struct mq_reader {
	int	 fd;
	char	*buf;
	size_t	 len, off;
	int	 eof;
};
int	 mq_reader_init(struct mq_reader *, int);
int	 mq_reader_record(struct mq_reader *, int, char **);
void	 mq_reader_free(struct mq_reader *);
int	 mq_reader_pending(struct mq_reader *);
int	 mq_reader_chunk(struct mq_reader *, int, const char **, size_t *,
	    int *);

#endif
