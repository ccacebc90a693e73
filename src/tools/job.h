/*
 * job.h: a job of mq-recv's worker mode (job.c): the command found once,
 * started with a body on its standard input and values of its own in its
 * environment, its output passed on a line at a time, signalled as a
 * group and reaped.  What the job is run for, and what its exit status
 * does to a message, is the worker's (work.c).
 */
#ifndef MQ_JOB_H
#define MQ_JOB_H

#include <sys/types.h>

#include <signal.h>
#include <stddef.h>

#define MQ_JOB_LINE_MAX	4096	/* longer lines are passed on in pieces */
#define MQ_JOB_LAST_MAX	256	/* kept of a job's last line on stderr */

/*
 * What every job of one command shares, made in the worker before the
 * first: the command's file, and the environment, which is the worker's
 * own without the names given to mq_command_init, then each job's values.
 */
struct mq_command {
	char *const	*argv;
	char	*path;		/* argv[0]'s file, or NULL: to be found */
	int	 searched;	/* path was found in $PATH */
	char	**shargv;	/* sh path arg ...: a script without #! */
	char	**envp;
	size_t	 nenv;		/* of the worker's own, kept */
	size_t	 nvars;		/* room after them */
	pid_t	 parent;	/* the worker */
	const int *sigs;	/* back at their defaults in a job */
	size_t	 nsigs;
	sigset_t caught;	/* blocked while a job starts */
};

/* One output of a job, passed on to the worker's own. */
struct mq_job_stream {
	int	 fd;		/* read end of the job's pipe, or -1 */
	int	 to;		/* our fd it is passed on to */
	int	 midline;	/* part of the current line was passed on */
	size_t	 len;
	char	 buf[MQ_JOB_LINE_MAX];
};

struct mq_job {
	pid_t	 pid;		/* 0: none running */
	const char *tag;	/* and a tab begin each line; NULL: none */
	/* Each line passed on, also given to keep (untagged); NULL: none. */
	void	(*keep)(void *, const char *, size_t);
	void	*keep_arg;
	/* Called with the fd before each piece passed on; NULL: none. */
	void	(*before)(int);
	int	 pass_out;	/* its stdout is passed on too, untagged */
	struct mq_job_stream out, err;
	char	 last[MQ_JOB_LAST_MAX];	/* its last line on stderr */
};

void	 mq_command_init(struct mq_command *, char *const [],
	    const char *const [], size_t);
void	 mq_command_signals(struct mq_command *, const int [], size_t,
	    const sigset_t *);
int	 mq_command_find(struct mq_command *);
void	 mq_command_free(struct mq_command *);
int	 mq_job_start(struct mq_command *, struct mq_job *, int,
	    char *const [], const char *);
void	 mq_job_read(struct mq_job *, struct mq_job_stream *);
void	 mq_job_end(struct mq_job *);
void	 mq_job_signal(const struct mq_job *, int);
pid_t	 mq_job_reap(int *);

#endif
