/*
 * tools.h: what the programs are built of above the core (src/core,
 * libmq.a), which prints nothing and never exits: cli.c, shared by every
 * program; the engines that one tool each runs, which print what they do
 * and may exit, as a tool does: fan.c, mq-send's writing into one spool
 * or several, and work.c, mq-recv's worker mode (its jobs' processes in
 * job.c, job.h).  Their state is theirs, not the core's.
 */
#ifndef MQ_TOOLS_H
#define MQ_TOOLS_H

#include <stdio.h>

#include "mq.h"

/*
 * cli.c: what every program shares (the relay's too): options, the spool
 * of -d, errors said, and what listings write.
 */
/* The long options every tool has. */
/* The forms of a duration (secs), for --help. */
#define MQ_HELP_SECS \
    "secs: seconds (2.5), or with a unit: 250ms, 90s, 1.5h, 2d\n"

#define MQ_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }

const char *mq_optional_secs(const char *, int, char *[]);
uint64_t xsecs(const char *, const char *, int);
int	 xnumber(const char *, const char *, long long, long long);
void	*xmalloc(size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
void	 mq_version(void);
/* Both exit (__dead; _Noreturn here, as tools.h goes without compat.h). */
_Noreturn void mq_usage(const char *);
_Noreturn void mq_common_opt(int, const char *, const char *);
_Noreturn void mq_renamed(const char *, const char *);
void	 mq_stdout_close(void);
void	 mq_spool_xopen(struct mq_spool *, const char *, int);
typedef int (*mq_match_fn)(struct mq_spool *, const char *,
	    struct mq_matches *);
char	**mq_ids_xread(int, char *[], int, size_t *);
int	 mq_ids_xresolve(struct mq_spool *, char **, size_t *, mq_match_fn,
	    const char *);
void	 mq_ids_unique(char **, size_t *);
void	 mq_ids_free(char **, size_t);
void	 mq_conf_warn(const struct mq_spool *, int, const char *);
void	 mq_conf_xread(struct mq_spool *, struct mq_conf *);
const struct mq_conf	*mq_settings_xread(struct mq_spool *);
int	 mq_settings_reread(struct mq_spool *);
void	 mq_conf_logged(struct mq_spool *, const struct mq_conf *,
	    char [][32]);
const char	*mq_human_age(char *, size_t, uint64_t, uint64_t);
#define MQ_COUNTED_DEAD	(-1)	/* every death: mq_counted, mq_rate */
uint64_t mq_counted(const uint64_t *, int);
double	 mq_rate(const uint64_t *, uint64_t, const uint64_t *, uint64_t, int);
void	 mq_escape(FILE *, const char *, size_t);
int	 mq_copy_escaped(int, FILE *);
void	 mq_json_string(FILE *, const char *, size_t);
int	 mq_history_json(FILE *, struct mq_spool *, const struct mq_name *,
	    const char *, size_t, int);
/* What a listing says of one message (mq_message_json). */
struct mq_message {
	const struct mq_name *n;
	const char	*state;		/* mq_look_state_name's */
	uint64_t	 time_ms;	/* the time of its state */
	const char	*key;		/* its dedup key, or NULL */
	int		 dead;		/* a dead letter, or one past its ttl */
	uint64_t	 died_ms;	/* dead: when */
	const char	*reason;	/* dead: why; NULL: none recorded */
	size_t		 rlen;
	const char	*body;		/* the start of its body, or NULL */
	size_t		 blen;
	off_t		 size;
	const struct mq_holder_info *holder;	/* a lease's, described */
};
int	 mq_message_json(FILE *, struct mq_spool *, const struct mq_message *);
const char	*mq_user_name(uint32_t);
void	 mq_holder_print(FILE *, const struct mq_holder *,
	    const struct mq_holder_info *);
void	 mq_holder_json(FILE *, const struct mq_holder *,
	    const struct mq_holder_info *);

/*
 * fan.c: what one mq-send call adds to: one spool or several (-d A -d B),
 * each a target with its own enqueue (keys, admission, landing, sync) and
 * settings, and the batch written once for them all.
 */
struct mq_target {
	struct mq_spool	 sp;
	struct mq_enqueue eq;		/* keys, room, landing, sync */
	int		 status;	/* MQ_EX_OK while it takes messages */
	int		 own;		/* has batch files to sync itself */
	int		 synced;	/* (while a batch is synced) */
	int		 landed;	/* of the batch, in its new/ */
	int		 has;		/* -k: the key is held there */
	char		 kid[MQ_ID_LEN + 1];	/* -k: its copy's name in tmp/ */
};
struct mq_fan {
	struct mq_target *t, one;	/* t: &one, or n of them */
	const char	**dirs, *dir1;	/* as given: -d ... */
	int		 n;
	int		 sync;		/* 0: -S */
	int		 vflag;
	int		 wflag;		/* wait for room */
	uint64_t	 wait_ms;	/* that long; UINT64_MAX: forever */
	uint64_t	 due;		/* 0: visible at once */
	struct mq_name	 name;		/* what each is named with but its ID */
	struct mq_tmpfile tf;		/* the message being written */
	int		 writing;	/* tf is, in target first */
	int		 first;
	uint64_t	 size;		/* written to it so far */
	char		 id[MQ_ID_LEN + 1];
	char		 batch[MQ_BATCH_MAX][MQ_ID_LEN + 1];
	const char	*from[MQ_BATCH_MAX];	/* each one's input, for -v */
	int		 nbatch;
	const char	*input;		/* the file being read */
	int		 status;	/* the worst so far */
	const char	*key;		/* -k: the dedup key, or NULL */
	size_t		 keylen;
};
void	 mq_fan_init(struct mq_fan *);
void	 mq_fan_dir(struct mq_fan *, const char *);
int	 mq_fan_open(struct mq_fan *);
int	 mq_fan_begin(struct mq_fan *);
int	 mq_fan_write(struct mq_fan *, const void *, size_t);
int	 mq_fan_end(struct mq_fan *);
int	 mq_fan_flush(struct mq_fan *);
void	 mq_fan_abort(struct mq_fan *);
int	 mq_fan_close(struct mq_fan *);

/* work.c: mq-recv's worker mode */
struct mq_work {
	char	**argv;		/* the command run for each message */
	int	 slots;		/* jobs at once */
	long long limit;	/* claims in all; 0: no limit */
	/*
	 * 0: the spool's lease and max-attempts, followed as mq-conf changes
	 * them (with its ttl and paused, which no option overrides).
	 */
	uint64_t lease_ms;
	unsigned max;
	uint64_t idle_ms;	/* how long to wait for work; UINT64_MAX: ever */
	uint64_t timeout_ms;	/* a job's time; 0: no limit */
	uint64_t backoff_ms, backoff_max_ms;
	int	 tag;		/* prefix each line of output with the ID */
	int	 drain;		/* until nothing is left but dead letters */
	int	 progress;	/* a line of progress on a terminal's stderr */
	int	 once;		/* keep the ledger of finished messages (once.c) */
	int	 verbose;
};
int	 mq_work(struct mq_spool *, const struct mq_work *);

/* top.c: mq-top's live view */
struct mq_top_opt {
	const char	**dirs;		/* the spools */
	size_t		 ndirs;
	uint64_t	 interval_ms;
	long long	 frames;	/* then exit; 0: until q */
	int		 batch;		/* frames as text (-b) */
};
int	 mq_top(const struct mq_top_opt *);

#endif
