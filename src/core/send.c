/*
 * send.c: writing into tmp/, the one way anything enters a spool: create
 * (O_EXCL), write, sync, close, then commit with one rename.  A file in
 * tmp/ is invisible to receivers, so whatever fails before the rename
 * leaves nothing visible; what is left is removed here, or after a crash
 * by mq-sweep.
 *
 *	send	tmp/ID			-> new/T/M/L/ID,0[,SENT,TTL]
 *					   or its group	(mq_tmp_land: land.c)
 *	fan-out	tmp/ID			=> tmp/ID of another spool, a link
 *					   or a copy	(mq_tmp_link)
 *	redrive	(to another file system: a copy in its tmp/, the same rename)
 *	bury	tmp/ID,reason		-> reason/ID		(mq_tmp_commit)
 *
 * Data is made durable before the rename: by fsync(2) of each file as it
 * is closed, or, where there is syncfs(2), by one syncfs for a batch
 * (mq_tmp_sync).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/* Creates tmp/name, which must not exist, to be written. */
int
mq_tmp_create(struct mq_tmpfile *tf, struct mq_spool *sp, const char *name)
{
	tf->sp = sp;
	tf->name[0] = '\0';
	if (strlcpy(tf->name, name, sizeof(tf->name)) >= sizeof(tf->name)) {
		tf->name[0] = '\0';
		errno = ENAMETOOLONG;
		return tf->fd = -1;
	}
	if ((tf->fd = mq_create(sp->tmp, name, sp->fmode)) == -1) {
		/* Not ours to remove: it may be another's. */
		tf->name[0] = '\0';
		return -1;
	}
	return 0;
}

int
mq_tmp_write(struct mq_tmpfile *tf, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len > 0) {
		if ((w = write(tf->fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= w;
	}
	return 0;
}

/*
 * Closes the file written, its data made durable first as sync says:
 * MQ_TMP_SYNC_NOW, or MQ_TMP_SYNC_BATCH: now only where mq_tmp_sync cannot
 * do it for the batch with one syncfs(2).  On failure the file is still
 * there (and still open if the sync failed): mq_tmp_abort removes it.
 */
int
mq_tmp_close(struct mq_tmpfile *tf, enum mq_tmp_sync sync)
{
	int fd = tf->fd;

	if ((sync == MQ_TMP_SYNC_NOW ||
	    (sync == MQ_TMP_SYNC_BATCH && !MQ_HAVE_SYNCFS)) && fsync(fd) == -1)
		return -1;
	tf->fd = -1;
	return close(fd);
}

/* Takes back what was written: closed if open, removed; errno is kept. */
void
mq_tmp_abort(struct mq_tmpfile *tf)
{
	int saved = errno;

	mq_closefd(&tf->fd);
	if (tf->name[0] != '\0')
		unlinkat(tf->sp->tmp, tf->name, 0);
	tf->name[0] = '\0';
	errno = saved;
}

/* Renames the closed file to dirfd/name; it is then no longer in tmp/. */
int
mq_tmp_commit(struct mq_tmpfile *tf, int dirfd, const char *name)
{
	if (renameat(tf->sp->tmp, tf->name, dirfd, name) == -1)
		return -1;
	tf->name[0] = '\0';
	return 0;
}

/*
 * Makes the data of the n closed files ids of tmp/ durable where
 * mq_tmp_close left it to a batch: one syncfs(2) for several, an fsync(2)
 * for one.  On error *failed names the file that failed, or is NULL when
 * tmp/ did.
 */
int
mq_tmp_sync(struct mq_spool *sp, char (*ids)[MQ_ID_LEN + 1], int n,
    const char **failed)
{
	int fd, saved;

	*failed = NULL;
	if (!MQ_HAVE_SYNCFS || n == 0)
		return 0;
	if (n > 1)
		return mq_syncfs(sp->tmp);
	*failed = ids[0];
	if ((fd = openat(sp->tmp, ids[0], O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fsync(fd) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/* Removes tmp/id, a file written but not committed. */
void
mq_tmp_remove(struct mq_spool *sp, const char *id)
{
	unlinkat(sp->tmp, id, 0);
}

/*
 * Creates to's tmp/name as a copy of from's tmp/name, as far as that is
 * written (it may still be open for more), and leaves it open to be
 * written on.  On failure nothing of it is left.
 */
int
mq_tmp_copy(struct mq_tmpfile *tf, struct mq_spool *to, struct mq_spool *from,
    const char *name)
{
	int in, saved;

	tf->sp = to;
	tf->fd = -1;
	tf->name[0] = '\0';
	if ((in = openat(from->tmp, name, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (mq_tmp_create(tf, to, name) == -1 ||
	    mq_copy_fd(in, tf->fd) == -1) {
		saved = errno;
		close(in);
		mq_tmp_abort(tf);
		errno = saved;
		return -1;
	}
	close(in);
	return 0;
}

/*
 * Gives to's tmp/ the closed file name of from's tmp/, under that name: a
 * hard link where link allows it and the two spools would make the file
 * alike (one file system, the same mode and group: an inode has one of
 * each, and the members of a shared spool must be able to read what is in
 * it), else a copy, closed as sync says.  *copied says which it was.
 */
int
mq_tmp_link(struct mq_spool *from, const char *name, struct mq_spool *to,
    enum mq_tmp_sync sync, int link, int *copied)
{
	struct mq_tmpfile tf;

	*copied = 0;
	if (link && from->dev == to->dev && from->fmode == to->fmode &&
	    from->gid == to->gid) {
		if (linkat(from->tmp, name, to->tmp, name, 0) == 0)
			return 0;
		/* Not across file systems, or no hard links here: copy. */
		if (errno != EXDEV && errno != EPERM && errno != EMLINK &&
		    errno != ENOTSUP && errno != EOPNOTSUPP)
			return -1;
	}
	*copied = 1;
	if (mq_tmp_copy(&tf, to, from, name) == -1)
		return -1;
	if (mq_tmp_close(&tf, sync) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/*
 * Gives tmp/from the name to instead (a keyed fan-out takes the ID it
 * found), unless to is taken: a link, not a rename, as another sender's
 * tmp/to (that ID's own) must not be replaced.  -1 (EEXIST: taken): from
 * is left as it was.
 */
int
mq_tmp_rename(struct mq_spool *sp, const char *from, const char *to)
{
	if (linkat(sp->tmp, from, sp->tmp, to, 0) == -1)
		return -1;
	unlinkat(sp->tmp, from, 0);
	return 0;
}
