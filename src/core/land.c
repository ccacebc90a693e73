/*
 * land.c: where a message that enters a spool goes, tree or group: the one
 * place that choice is made, for a message just written into tmp/
 * (mq-send, mq-relay pull, a redrive's copy) and for a dead letter
 * redriven by rename.  A message of a group goes into its group (the
 * head into new/, the others parked: mq_group_place), any other into
 * new/'s tree of its priority (mq_place).
 *
 *	send, pull	tmp/ID		-> new/T/M/L/ID,0...	or its group
 *	redrive		dead/NAME	-> new/T/M/L/ID,0...	or its group
 */
#include <stdio.h>

#include "mq.h"

/*
 * Moves from/fromname, a message named as nm says (its attempts and sent
 * as nm has them), into pl's spool, visible at due.  0, or -1 (errno;
 * EXDEV: from is on another file system).
 */
int
mq_land(struct mq_placer *pl, int from, const char *fromname,
    const struct mq_name *nm, uint64_t due)
{
	char name[MQ_NAME_MAX];

	if (nm->group[0] != '\0')
		return mq_group_place(pl, from, fromname, nm, due);
	if (mq_name_format(name, sizeof(name), MQ_NEW, nm) == -1)
		return -1;
	return mq_place(pl, from, fromname, name, nm->prio, due);
}

/* Lands tmp/ID (nm's ID), a message just written. */
int
mq_tmp_land(struct mq_placer *pl, const struct mq_name *nm, uint64_t due)
{
	return mq_land(pl, pl->sp->tmp, nm->id, nm, due);
}
