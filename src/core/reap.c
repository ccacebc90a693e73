/*
 * reap.c: a message's fate when a claim, a sweep or a count meets it, and
 * its burial: past its time to live (its own, or the spool's ttl) it is
 * buried as "ttl", dated at its expiry, whatever its attempts; at max
 * attempts (where attempts are a fate: not in a count) it is buried
 * "max attempts; last: REASON"; else it lives on, and the caller leases it,
 * puts it back or counts it.  The one place this order and these rules
 * are; the ttl and max attempts are the spool's settings (sp->conf), max
 * attempts overridden by a receiver's -m.
 *
 *	expired		... -> dead/ID,EXPIRY,A	(a run: mq_burial_expired)
 *	spent		... -> dead/ID,DIED,A	(mq_bury_spent)
 */
#include <errno.h>

#include "mq.h"

/*
 * Ready to decide for messages met from now on: max is the attempts after
 * which one is buried (0: the spool's max-attempts), or MQ_REAP_EXPIRY
 * where only expiry is a fate (a count, drop-oldest, mq-sweep's ttl pass).
 */
void
mq_reaper_init(struct mq_reaper *r, struct mq_spool *sp, unsigned max)
{
	const struct mq_conf *c = mq_settings(sp);

	r->sp = sp;
	r->now = mq_now_ms();
	r->ttl = c->ttl_ms;
	r->max = max != 0 ? max : c->max_attempts;
	r->buried = 0;
	mq_burial_expired(&r->expired, sp, r->ttl);
}

/* What becomes of nm, met now. */
enum mq_fate
mq_fate(const struct mq_reaper *r, const struct mq_name *nm)
{
	if (r->now >= mq_name_expiry(nm, r->ttl))
		return MQ_FATE_EXPIRED;
	if (r->max != MQ_REAP_EXPIRY && nm->attempts >= r->max)
		return MQ_FATE_SPENT;
	return MQ_FATE_LIVE;
}

/*
 * Decides the fate of fd/name (named nm) and buries it if it has one:
 * MQ_FATE_LIVE (not buried: the caller's), MQ_FATE_EXPIRED or
 * MQ_FATE_SPENT (buried), or -1 (errno; ENOENT: another process moved it
 * first, a race and no error).
 */
int
mq_reap(struct mq_reaper *r, int fd, const char *name,
    const struct mq_name *nm)
{
	enum mq_fate f = mq_fate(r, nm);
	int b;

	if (f == MQ_FATE_LIVE)
		return f;
	if (f == MQ_FATE_EXPIRED)
		b = mq_burial_bury(&r->expired, fd, name, nm);
	else
		b = mq_bury_spent(r->sp, fd, name, nm);
	if (b == -1)
		return -1;
	r->buried++;
	return f;
}

/* Ends the run: the burials queued are done (errno kept). */
void
mq_reaper_end(struct mq_reaper *r)
{
	mq_burial_end(&r->expired);
}
