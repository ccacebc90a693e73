/*
 * depth.c: how many messages wait in new/ (ready and delayed), for a
 * spool's max-depth, and making room by dead-lettering the oldest.
 *
 *	drop	new/T/M/L/ID,A		-> dead/ID,DIED,A	(mq_bury, "maxlen")
 *
 * A count answers "are there fewer than limit?", so it stops as soon as it
 * reaches limit: its cost is bounded by max-depth, never by the queue.  It
 * reads the leaves' entries as they come (one descent, nothing sorted,
 * nothing kept) and counts regular files by their directory entry's type:
 * a leaf holds nothing else, and a stat per message would cost more than
 * the listing.  A count is a snapshot: senders and receivers move
 * messages meanwhile, which is why mq-send counts again after each chunk
 * (mq-send(1) gives the bound that follows).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

struct counting {
	uint64_t limit;
	uint64_t n;
};

/*
 * The counting step of the descent: each leaf's entries, until the limit.
 * A leaf removed as empty before or while it is listed held nothing.
 */
static int
count_step(void *arg, int dirfd, const char *name, int digits, uint64_t key)
{
	struct counting *c = arg;
	struct dirent *de;
	DIR *d;
	int fd, saved, r = MQ_TREE_NEXT;

	(void)key;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT ? MQ_TREE_NEXT : -1;
	if ((d = fdopendir(fd)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
			continue;
		if (++c->n >= c->limit) {
			r = MQ_TREE_STOP;
			break;
		}
	}
	saved = de == NULL && errno != ENOENT ? errno : 0;
	closedir(d);
	errno = saved;
	return saved != 0 ? -1 : r;
}

/*
 * Sets *n to the number of messages waiting in new/, or to limit when
 * there are that many or more.  Returns 0, or -1 on error.
 */
int
mq_depth(struct mq_spool *sp, uint64_t limit, uint64_t *n)
{
	struct counting c = { limit, 0 };
	struct mq_tree t = { count_step, NULL, 0, 0, 0, 0 };

	*n = 0;
	if (limit == 0)
		return 0;
	t.arg = &c;
	if (mq_tree_walk(&t, sp->new) == -1)
		return -1;
	*n = c.n;
	return 0;
}

struct dropping {
	struct mq_spool	*sp;
	uint64_t	 want, gone;
	mq_drop_fn	 fn;
	void		*arg;
};

static int
is_new(const char *s)
{
	struct mq_name nm;

	return mq_name_parse(s, MQ_NEW, &nm) == 0;
}

/*
 * Buries the oldest messages of one leaf; 1 once enough are gone.  One
 * that another process took first (a claim) is gone all the same: the
 * room it left is what was wanted, and no second message dies for it.
 */
static int
drop_leaf(struct dropping *d, int leaf)
{
	struct mq_names names;
	struct mq_name nm;
	size_t i;
	int r = 0;

	if (mq_names_read(leaf, DT_REG, is_new, &names) == -1)
		return errno == ENOENT ? 0 : -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && d->gone < d->want; i++) {
		mq_name_parse(names.v[i], MQ_NEW, &nm);
		if (mq_bury(d->sp, leaf, names.v[i], &nm, MQ_REASON_MAXLEN,
		    strlen(MQ_REASON_MAXLEN)) == -1) {
			if (errno != ENOENT) {
				r = -1;
				break;
			}
		} else if (d->fn != NULL)
			d->fn(d->arg, nm.id);
		d->gone++;
	}
	mq_names_free(&names);
	return r == -1 ? -1 : d->gone >= d->want;
}

static int
drop_step(void *arg, int dirfd, const char *name, int digits, uint64_t key)
{
	struct dropping *d = arg;
	int fd, r, saved;

	(void)key;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT ? MQ_TREE_NEXT : -1;
	r = drop_leaf(d, fd);
	saved = errno;
	close(fd);
	errno = saved;
	return r == -1 ? -1 : r == 1 ? MQ_TREE_STOP : MQ_TREE_NEXT;
}

/*
 * Makes room for n messages (overflow=drop-oldest): dead-letters the
 * oldest waiting ones, in the order a claim would take them (leaves in
 * key order, IDs in order), with the reason MQ_REASON_MAXLEN, calling fn
 * with the ID of each.  Stops once n are gone or new/ is empty.  Returns
 * 0, or -1 on error.
 */
int
mq_depth_drop(struct mq_spool *sp, uint64_t n, mq_drop_fn fn, void *arg)
{
	struct dropping d = { sp, n, 0, fn, arg };
	struct mq_tree t = { drop_step, NULL, 1, 0, 0, 0 };

	if (n == 0)
		return 0;
	t.arg = &d;
	return mq_tree_walk(&t, sp->new) == -1 ? -1 : 0;
}
