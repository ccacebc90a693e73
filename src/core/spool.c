/*
 * spool.c: choose the spool (-d, $MQ_DIR, the XDG state directory), make it
 * if the caller may create it, and open its state directories as fds.
 * Directories are made with the spool root's permissions so that a spool
 * shared by a group (setgid, group-writable) stays shared.  It also keeps
 * the spare directories that let a full file system be drained, and makes
 * the directories that messages are renamed into (mq_spool_subdir).
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define PRIVATE_MODE	0700
#define SHARED_MODE	02770

const char *
mq_spool_dir(const char *opt)
{
	static char buf[PATH_MAX];
	const char *env, *home;
	int n;

	if (opt != NULL)
		return opt;
	if ((env = getenv("MQ_DIR")) != NULL && *env != '\0')
		return env;
	/* The XDG spec says a relative XDG_STATE_HOME is to be ignored. */
	if ((env = getenv("XDG_STATE_HOME")) != NULL && env[0] == '/')
		n = snprintf(buf, sizeof(buf), "%s/mq", env);
	else if ((home = getenv("HOME")) != NULL && *home != '\0')
		n = snprintf(buf, sizeof(buf), "%s/.local/state/mq", home);
	else {
		errno = ENOENT;
		return NULL;
	}
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return buf;
}

/* Syncs directory path (its entries made durable); "" is the cwd. */
static int
sync_path(const char *path)
{
	int fd, r;

	if ((fd = open(*path == '\0' ? "." : path, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	r = mq_fsync_dir(fd);
	close(fd);
	return r;
}

/*
 * mkdir -p.  Parents made here are private; so is the spool, unless its
 * parent is a shared spool root (setgid and group-writable): then the
 * spool is shared with that group too (mode 2770).  The parent of each
 * directory made is synced, so that a power cut after the first send
 * cannot keep the message and lose the spool.
 */
static int
mkpath(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	char *p, *last, *first = NULL;
	mode_t mode = PRIVATE_MODE;
	int made, r;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* first: where the first directory made starts. */
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, PRIVATE_MODE) == 0) {
			if (first == NULL)
				first = (last = strrchr(buf, '/')) == NULL ?
				    buf : last + 1;
		} else if (errno != EEXIST)
			return -1;
		*p = '/';
	}
	if ((last = strrchr(buf, '/')) != NULL) {
		*last = '\0';
		if (stat(last == buf ? "/" : buf, &st) == 0 &&
		    (st.st_mode & (S_ISGID | S_IWGRP)) == (S_ISGID | S_IWGRP))
			mode = SHARED_MODE;
		*last = '/';
	}
	if (!(made = mkdir(buf, mode) == 0) && errno != EEXIST)
		return -1;
	/* The umask must not take the group's access away. */
	if (made && mode != PRIVATE_MODE && chmod(buf, mode) == -1)
		return -1;
	if (first == NULL && made)
		first = last == NULL ? buf : last + 1;
	if (first == NULL)
		return 0;
	/* The parent of the first made ("." or "/" too), then each made. */
	if (first == buf)
		r = sync_path("");
	else {
		first[-1] = '\0';
		r = sync_path(first - 1 == buf ? "/" : buf);
		first[-1] = '/';
	}
	for (p = strchr(first, '/'); r == 0 && p != NULL; p = strchr(p + 1,
	    '/')) {
		*p = '\0';
		r = sync_path(buf);
		*p = '/';
	}
	return r;
}

static int
state_open(struct mq_spool *sp, const char *name, int create)
{
	int fd, made;

	if (create && mq_mkdirat(sp->fd, name, sp->dmode, &made) == -1)
		return -1;
	/* Made: synced into the root before anything is renamed into it. */
	if (create && made && mq_fsync_dir(sp->fd) == -1)
		return -1;
	fd = mq_opendirat(sp->fd, name);
	if (fd == -1 && errno == ENOENT) {
		/* The root exists but was not made by mq-send. */
		errno = ENOTDIR;
	}
	return fd;
}

/*
 * Opens the spool at path; with create, makes what is missing.  On error
 * returns -1 with errno set; the spool is then closed.
 */
int
mq_spool_open(struct mq_spool *sp, const char *path, int create)
{
	struct stat st;

	memset(sp, 0, sizeof(*sp));
	sp->fd = sp->tmp = sp->new = sp->cur = sp->dead = sp->reason = -1;
	sp->groups = sp->last = sp->holders = sp->once = -1;
	sp->path = path;
	if (*path == '\0') {
		errno = ENOENT;
		goto fail;
	}
	if (create && mkpath(path) == -1)
		goto fail;
	if ((sp->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		goto fail;
	if (fstat(sp->fd, &st) == -1)
		goto fail;
	/* What is made inside is shared as the root is, and with nobody else. */
	sp->dmode = st.st_mode & 02770;
	sp->fmode = st.st_mode & 0660;
	sp->dev = st.st_dev;
	sp->ino = st.st_ino;
	sp->gid = st.st_gid;
	if ((sp->new = state_open(sp, MQ_DIR_NEW, create)) == -1 ||
	    (sp->cur = state_open(sp, MQ_DIR_CUR, create)) == -1)
		goto fail;
	if (create && mq_spool_need(sp, 1) == -1)
		goto fail;
	if (create) {
		mq_spool_spares(sp);
		/* The counters made with the spool (count.c), not by a count. */
		mq_count(sp, MQ_COUNT_SENT, 0);
	}
	return 0;
fail:
	mq_spool_close(sp);
	return -1;
}

/*
 * Opens tmp/, dead/ and reason/, which only sending, dead letters and
 * sweeping use: a claim or an ack, paid for once per process, opens no
 * more than it needs.
 */
int
mq_spool_need(struct mq_spool *sp, int create)
{
	if ((sp->tmp == -1 &&
	    (sp->tmp = state_open(sp, MQ_DIR_TMP, create)) == -1) ||
	    (sp->dead == -1 &&
	    (sp->dead = state_open(sp, MQ_DIR_DEAD, create)) == -1) ||
	    (sp->reason == -1 &&
	    (sp->reason = state_open(sp, MQ_DIR_REASON, create)) == -1))
		return -1;
	return 0;
}

static void
spare_name(char *buf, size_t size, int i)
{
	snprintf(buf, size, "%s%d", MQ_SPARE, i);
}

/*
 * Makes the spare directories of tmp/ that are missing, as far as there is
 * room: they are for when there is none.  Where a directory's link count
 * counts its sub-directories, tmp/ holding the spares and nothing else of
 * the kind costs one fstat.
 */
void
mq_spool_spares(struct mq_spool *sp)
{
	struct stat st;
	char name[sizeof(MQ_SPARE) + 16];
	int i;

	if (sp->tmp == -1 && (sp->tmp = state_open(sp, MQ_DIR_TMP, 0)) == -1)
		return;
	if (fstat(sp->tmp, &st) == 0 && st.st_nlink == 2 + MQ_SPARES)
		return;
	for (i = 0; i < MQ_SPARES; i++) {
		spare_name(name, sizeof(name), i);
		if (mq_mkdirat(sp->tmp, name, sp->dmode, NULL) == -1)
			return;
	}
}

/*
 * Puts a spare directory in place as dirfd/name, for a caller whose mkdirat
 * failed for want of space: renaming a directory within its file system
 * takes no new inode and, but to grow the parent, no block.  Returns 0 when
 * dirfd/name exists now (it may have been made meanwhile), -1 with ENOSPC
 * when no spare is left.
 */
int
mq_spare_take(struct mq_spool *sp, int dirfd, const char *name)
{
	struct stat st;
	char spare[sizeof(MQ_SPARE) + 16];
	int i;

	if (sp->tmp == -1 && (sp->tmp = state_open(sp, MQ_DIR_TMP, 0)) == -1)
		return -1;
	for (i = MQ_SPARES - 1; i >= 0; i--) {
		spare_name(spare, sizeof(spare), i);
		/* Taken already, or something else planted under its name. */
		if (fstatat(sp->tmp, spare, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (mq_rename_noreplace(sp->tmp, spare, dirfd, name) == 0 ||
		    errno == EEXIST || errno == ENOTEMPTY)
			return 0;
		if (errno != ENOENT)
			return -1;
		/* Not a spare taken meanwhile: dirfd itself was removed. */
		if (fstatat(sp->tmp, spare, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			errno = ENOENT;
			return -1;
		}
	}
	errno = ENOSPC;
	return -1;
}

/* No room: no free block or inode, or the quota used up. */
int
mq_spool_full(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

/*
 * Opens (making it if need be) the directory name inside dirfd.  With no
 * room to make it, a consumer (spares set) renames a spare directory into
 * place (how has MQ_SUBDIR_SPARES), so that a full file system can still
 * be drained.  A directory put in place here is synced into dirfd before
 * it is used: a message renamed into it (a claim's bucket, a release's or
 * a redrive's leaf) was durable where it came from, and a power cut must
 * not keep its rename and lose the directory it went to (one fsync a
 * directory, not a message).  A send's (MQ_SUBDIR_UNSYNCED) is synced by
 * the placer after the rename, before the send says it is done.
 */
int
mq_spool_subdir(struct mq_spool *sp, int dirfd, const char *name, int how)
{
	int fd, i, made;

	for (i = 0; i < MQ_RETRIES; i++) {
		if (mq_mkdirat(dirfd, name, sp->dmode, &made) == -1) {
			if (!(how & MQ_SUBDIR_SPARES) ||
			    !mq_spool_full(errno) ||
			    mq_spare_take(sp, dirfd, name) == -1)
				return -1;
			made = 1;
		}
		if (made && !(how & MQ_SUBDIR_UNSYNCED) &&
		    mq_fsync_dir(dirfd) == -1)
			return -1;
		if ((fd = mq_opendirat(dirfd, name)) != -1 || errno != ENOENT)
			return fd;
	}
	return -1;
}

/*
 * Opens (making it if need be) a directory of the root made on first use,
 * keys/ or deaths/: one made here is synced into the root before anything
 * synced in it is said done, or a power cut could keep a record and lose
 * the directory that holds it.
 */
int
mq_spool_topdir(struct mq_spool *sp, const char *name)
{
	int fd, i, made;

	for (i = 0; i < MQ_RETRIES; i++) {
		if (mq_mkdirat(sp->fd, name, sp->dmode, &made) == -1 ||
		    (made && mq_fsync_dir(sp->fd) == -1))
			return -1;
		if ((fd = mq_opendirat(sp->fd, name)) != -1 || errno != ENOENT)
			return fd;
	}
	return -1;
}

/*
 * Why path is the spool when opt (-d) is NULL and MQ_DIR is unset: the
 * default, which under sudo or in a unit is another user's; else NULL.
 */
const char *
mq_spool_whence(const char *opt)
{
	const char *env = getenv("MQ_DIR");

	if (opt != NULL || (env != NULL && *env != '\0'))
		return NULL;
	return "the default spool, as neither -d nor MQ_DIR is given";
}

/*
 * Where mq_spool_dir(opt) found the spool, for -v: "-d", "$MQ_DIR",
 * "$XDG_STATE_HOME" or "$HOME", as one reads the environment.
 */
const char *
mq_spool_origin(const char *opt)
{
	const char *env;

	if (opt != NULL)
		return "-d";
	if ((env = getenv("MQ_DIR")) != NULL && *env != '\0')
		return "$MQ_DIR";
	if ((env = getenv("XDG_STATE_HOME")) != NULL && env[0] == '/')
		return "$XDG_STATE_HOME";
	return "$HOME";
}

/* The canonical path that receipts start with. */
int
mq_spool_real(struct mq_spool *sp)
{
	if (sp->real == NULL &&
	    (sp->real = realpath(sp->path, sp->realbuf)) == NULL)
		return -1;
	return 0;
}

/*
 * Makes every file and directory of the spool's file system durable: one
 * syncfs(2) (an fsync of the root where there is none).  0, or -1.
 */
int
mq_spool_sync(struct mq_spool *sp)
{
	return mq_syncfs(sp->fd);
}

void
mq_spool_close(struct mq_spool *sp)
{
	int *fds[] = { &sp->tmp, &sp->new, &sp->cur, &sp->dead, &sp->reason,
	    &sp->last, &sp->groups, &sp->holders, &sp->once, &sp->fd };
	size_t i;
	int saved = errno;

	mq_counts_close(sp);
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] != -1)
			close(*fds[i]);
		*fds[i] = -1;
	}
	sp->path = sp->real = NULL;
	errno = saved;
}
