/*
 * job.c: a job of mq-recv's worker mode, the command run for one message,
 * as a process: found in $PATH once, started with the body on its standard
 * input, its output passed on, signalled, reaped.  It knows nothing of the
 * message or its lease: the worker (work.c) hands it a body and the
 * values for its environment, and settles the message by the wait status.
 *
 * Each job is in a process group of its own, so that a Ctrl-C meant for
 * the worker lets jobs finish and a signal for a job reaches whatever it
 * started.  Its stderr (and stdout with --tag, or when the worker asks)
 * comes through a pipe and is passed on a line at a time, so that the
 * lines of parallel jobs never mix, and the worker may clear a line of
 * its own before each (before); the last line on stderr is kept for the
 * reason of a failure.
 *
 * Everything a job's start needs is made before it (mq_command_init,
 * mq_command_find), because the child of vfork may make nothing (child).
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <paths.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"
#include "job.h"

extern char **environ;

/* What the child does between vfork and exec: all of it made before. */
struct kid {
	const char *path;
	char	*const *argv, *const *envp, *const *shargv;
	const int *sigs;
	size_t	 nsigs;
	int	 body, out, err;
	volatile int *failed;	/* the child's errno when it could not exec */
	sigset_t mask;		/* to be restored */
	pid_t	 parent;
};

static int
cloexec_pipe(int p[2], int nonblock_read)
{
	if (mq_pipe_cloexec(p) == -1)
		return -1;
	/* A new pipe's end has no other status flag to keep. */
	if (nonblock_read)
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	return 0;
}

/* In a child: make from the fd to, kept across exec. */
static int
move_fd(int from, int to)
{
	if (from == to)
		return fcntl(to, F_SETFD, 0);
	return dup2(from, to) == -1 ? -1 : 0;
}

/*
 * The environment of every job: the worker's, without the names a job
 * gets its own values of (one the worker inherited, say MQ_GROUP, is not
 * this message's), with room for them at its end.
 */
void
mq_command_init(struct mq_command *c, char *const argv[],
    const char *const names[], size_t nnames)
{
	size_t n = 0, i, k, len;

	memset(c, 0, sizeof(*c));
	c->argv = argv;
	c->parent = getpid();
	sigemptyset(&c->caught);
	for (i = 0; environ[i] != NULL; i++)
		;
	c->envp = xreallocarray(NULL, i + nnames + 1, sizeof(*c->envp));
	for (i = 0; environ[i] != NULL; i++) {
		for (k = 0; k < nnames; k++) {
			len = strlen(names[k]);
			if (strncmp(environ[i], names[k], len) == 0 &&
			    environ[i][len] == '=')
				break;
		}
		if (k == nnames)
			c->envp[n++] = environ[i];
	}
	c->nenv = n;
	c->nvars = nnames;
	c->envp[n] = NULL;
}

/*
 * The signals whose disposition the worker has changed, which a job gets
 * back at their defaults, and those of them it catches: blocked from
 * before a job's vfork until its child has put them back, so that no
 * handler of the worker runs in the child.
 */
void
mq_command_signals(struct mq_command *c, const int sigs[], size_t nsigs,
    const sigset_t *caught)
{
	c->sigs = sigs;
	c->nsigs = nsigs;
	c->caught = *caught;
}

void
mq_command_free(struct mq_command *c)
{
	free(c->envp);
	free(c->path);
	free(c->shargv);
}

/*
 * Finds argv[0] as execvp(3) would: a name with a slash is used as it is,
 * else the first regular file that may be executed in a directory of
 * $PATH (an empty one: the current directory), in order.  Found once,
 * before the first job, and again only when its exec fails
 * (mq_job_start).  -1 with errno: EACCES when something of that name was
 * found that cannot be run, else ENOENT (or stat's, for a name with a
 * slash).
 */
int
mq_command_find(struct mq_command *c)
{
	char cspath[PATH_MAX], buf[PATH_MAX];
	const char *path, *p, *end, *name = c->argv[0];
	size_t dlen, nlen = strlen(name), n;
	int eacces = 0;
	struct stat st;

	free(c->path);
	c->path = NULL;
	c->searched = 0;
	if (nlen == 0) {
		errno = ENOENT;
		return -1;
	}
	if (strchr(name, '/') != NULL) {
		/* As execve would fail: checked before a message is claimed. */
		if (stat(name, &st) == -1)
			return -1;
		if (!S_ISREG(st.st_mode) || access(name, X_OK) == -1) {
			errno = EACCES;
			return -1;
		}
		c->path = xstrdup(name);
	} else {
		if ((path = getenv("PATH")) == NULL) {
			if (confstr(_CS_PATH, cspath, sizeof(cspath)) == 0)
				strlcpy(cspath, "/bin:/usr/bin", sizeof(cspath));
			path = cspath;
		}
		for (p = path; c->path == NULL; p = end + 1) {
			if ((end = strchr(p, ':')) == NULL)
				end = p + strlen(p);
			dlen = end - p;
			if (dlen + 1 + nlen < sizeof(buf)) {
				memcpy(buf, p, dlen);
				n = dlen;
				if (dlen > 0)
					buf[n++] = '/';
				memcpy(buf + n, name, nlen + 1);
				if (stat(buf, &st) == 0) {
					if (S_ISREG(st.st_mode) &&
					    access(buf, X_OK) == 0)
						c->path = xstrdup(buf);
					else
						eacces = 1;
				} else if (errno == EACCES)
					eacces = 1;
			}
			if (*end == '\0')
				break;
		}
		if (c->path == NULL) {
			errno = eacces ? EACCES : ENOENT;
			return -1;
		}
		c->searched = 1;
	}
	/* As execvp, a file without #! that the system cannot run is sh's. */
	for (n = 0; c->argv[n] != NULL; n++)
		;
	free(c->shargv);
	c->shargv = xreallocarray(NULL, n + 2, sizeof(*c->shargv));
	c->shargv[0] = _PATH_BSHELL;
	c->shargv[1] = c->path;
	memcpy(c->shargv + 2, c->argv + 1, n * sizeof(*c->argv));
	return 0;
}

/*
 * The child of vfork: it shares the worker's memory until its exec, so it
 * writes none of it but *k->failed when it cannot exec (and errno, which
 * the worker does not use after a vfork that succeeded), calls nothing
 * that allocates or takes a lock, and makes only system calls.  Signal
 * handlers are its own: those of the worker are put back to the default
 * first, so that no signal arriving before the exec runs one of them
 * (they are blocked until then, too).
 */
static void __dead __attribute__((__noinline__))
child(const struct kid *k)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/*
	 * Its own group: a Ctrl-C meant for the worker lets jobs finish.  One
	 * that came before the child left the worker's group is pending
	 * (blocked) here: ignored first, it is dropped, not delivered at the
	 * unblocking before exec.
	 */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setpgid(0, 0);
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < k->nsigs; i++)
		sigaction(k->sigs[i], &sa, NULL);
	if (mq_die_with_parent() == -1)
		goto fail;
	if (getppid() != k->parent)
		_exit(127);
	if (move_fd(k->body, STDIN_FILENO) == -1 ||
	    (k->out != -1 && move_fd(k->out, STDOUT_FILENO) == -1) ||
	    move_fd(k->err, STDERR_FILENO) == -1)
		goto fail;
	sigprocmask(SIG_SETMASK, &k->mask, NULL);
	execve(k->path, k->argv, k->envp);
	if (errno == ENOEXEC)
		execve(_PATH_BSHELL, k->shargv, k->envp);
fail:
	*k->failed = errno;
	_exit(127);
}

static void
stream_open(struct mq_job_stream *s, int fd, int to)
{
	s->fd = fd;
	s->to = to;
	s->midline = 0;
	s->len = 0;
}

/*
 * Starts c as job p with body on its standard input and vars (NULL at
 * the end, no more than the names given to mq_command_init) at the end
 * of its environment; with a tag, its standard output is passed on too,
 * each line tagged.  Like posix_spawn, it returns only once the command
 * runs or has failed to (-1, errno set): vfork returns when the child has
 * exec'd or exited, and a child that could not exec left its errno in the
 * memory it shared with the worker, as glibc's posix_spawn does (no pipe
 * to make, read and close for each job).
 *
 * vfork, not fork: a fork copies the worker's page tables and makes each
 * page it writes afterwards a copy-on-write fault, which on a machine with
 * dear page faults costs more than the job's own start; a vforked child
 * borrows the worker's memory until it execs, so whatever it needs is
 * made before (vars, mq_command_find) and it only makes system calls
 * (child).  Not posix_spawn, which does the same inside (clone with
 * CLONE_VM|CLONE_VFORK on glibc) but cannot set the parent-death signal
 * that takes a job with a killed worker (mq_die_with_parent).
 */
int
mq_job_start(struct mq_command *c, struct mq_job *p, int body,
    char *const vars[], const char *tag)
{
	struct kid k;
	sigset_t old;
	int outp[2] = { -1, -1 }, errp[2], e;
	/*
	 * failed: the child writes it; tries: in a register, the vfork'd
	 * child could clobber it (-Wclobbered, at -O1).
	 */
	volatile int failed, tries;
	pid_t pid;
	size_t i;

	p->pid = 0;
	p->tag = tag;
	p->last[0] = '\0';
	p->out.fd = p->err.fd = -1;
	for (i = 0; i < c->nvars && vars[i] != NULL; i++)
		c->envp[c->nenv + i] = vars[i];
	c->envp[c->nenv + i] = NULL;
	for (tries = 0;; tries++) {
		if (c->path == NULL && mq_command_find(c) == -1)
			return -1;
		/* Its stdout is its own but when tagged, kept or passed on. */
		if ((tag != NULL || p->keep != NULL || p->pass_out) &&
		    cloexec_pipe(outp, 1) == -1)
			return -1;
		if (cloexec_pipe(errp, 1) == -1) {
			e = errno;
			if (outp[0] != -1) {
				close(outp[0]);
				close(outp[1]);
			}
			errno = e;
			return -1;
		}
		k.path = c->path;
		k.argv = c->argv;
		k.envp = c->envp;
		k.shargv = c->shargv;
		k.sigs = c->sigs;
		k.nsigs = c->nsigs;
		k.body = body;
		k.out = outp[1];
		k.err = errp[1];
		k.failed = &failed;
		failed = 0;
		k.parent = c->parent;
		/* No handler of ours may run in the child before exec. */
		sigprocmask(SIG_BLOCK, &c->caught, &k.mask);
		old = k.mask;
		pid = vfork();
		if (pid == 0)
			child(&k);
		e = errno;
		/*
		 * The child is in its own group (setpgid) by now, as vfork
		 * returns once it has exec'd or exited.
		 */
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (outp[1] != -1)
			close(outp[1]);
		close(errp[1]);
		if (pid > 0 && failed != 0) {
			e = failed;
			while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
				;
			pid = -1;
		}
		if (pid > 0)
			break;
		if (outp[0] != -1)
			close(outp[0]);
		close(errp[0]);
		outp[0] = outp[1] = -1;
		/*
		 * The file found in $PATH before may have gone since, or
		 * another come first: looked for again once, as execvp would.
		 */
		if (tries == 0 && c->searched && (e == ENOENT || e == EACCES ||
		    e == ENOTDIR)) {
			free(c->path);
			c->path = NULL;
			continue;
		}
		errno = e;
		return -1;
	}
	p->pid = pid;
	stream_open(&p->out, outp[0], STDOUT_FILENO);
	stream_open(&p->err, errp[0], STDERR_FILENO);
	return 0;
}

static void
write_all(int fd, struct iovec *iov, int n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = writev(fd, iov, n)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* output lost; the job goes on */
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
}

/* Passes on a piece of a line, tagged at its start with the job's tag. */
static void
emit(struct mq_job *p, struct mq_job_stream *s, const char *buf, size_t len,
    int eol)
{
	struct iovec iov[4];
	int n = 0;

	if (!s->midline && s == &p->err && len > 0) {
		size_t keep = len < sizeof(p->last) - 1 ? len :
		    sizeof(p->last) - 1;

		memcpy(p->last, buf, keep);
		p->last[keep] = '\0';
	}
	if (!s->midline && p->tag != NULL) {
		iov[n].iov_base = (char *)p->tag;
		iov[n++].iov_len = strlen(p->tag);
		iov[n].iov_base = "\t";
		iov[n++].iov_len = 1;
	}
	iov[n].iov_base = (char *)buf;
	iov[n++].iov_len = len;
	if (eol) {
		iov[n].iov_base = "\n";
		iov[n++].iov_len = 1;
	}
	if (p->before != NULL)
		p->before(s->to);
	write_all(s->to, iov, n);
	if (p->keep != NULL) {
		p->keep(p->keep_arg, buf, len);
		if (eol)
			p->keep(p->keep_arg, "\n", 1);
	}
	s->midline = !eol;
}

/* Reads what the job wrote; at the end, passes on a last partial line. */
static void
drain(struct mq_job *p, struct mq_job_stream *s, int final)
{
	char *nl;
	ssize_t n;
	size_t off;

	if (s->fd == -1)
		return;
	for (;;) {
		n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		s->len += n;
		off = 0;
		while ((nl = memchr(s->buf + off, '\n', s->len - off))) {
			emit(p, s, s->buf + off, nl - (s->buf + off), 1);
			off = nl - s->buf + 1;
		}
		if (off == 0 && s->len == sizeof(s->buf)) {
			emit(p, s, s->buf, s->len, 0);
			off = s->len;
		}
		memmove(s->buf, s->buf + off, s->len - off);
		s->len -= off;
		if (!final)
			break;
	}
	if (n == 0 || final) {
		if (s->len > 0 || s->midline)
			emit(p, s, s->buf, s->len, 1);
		s->len = 0;
		close(s->fd);
		s->fd = -1;
	}
}

/* What poll found on one of p's outputs: one read, passed on. */
void
mq_job_read(struct mq_job *p, struct mq_job_stream *s)
{
	drain(p, s, 0);
}

/* p has been reaped: the rest of its output passed on; the slot free. */
void
mq_job_end(struct mq_job *p)
{
	drain(p, &p->out, 1);
	drain(p, &p->err, 1);
	p->pid = 0;
}

/* To the job's group: whatever it started gets sig too. */
void
mq_job_signal(const struct mq_job *p, int sig)
{
	kill(-p->pid, sig);
}

/*
 * A job that has ended: its pid, its wait status in *ws; 0 when none has
 * (yet), -1 when none runs.  Every child of the worker is a job.
 */
pid_t
mq_job_reap(int *ws)
{
	return waitpid(-1, ws, WNOHANG);
}
