/*
 * broker.h: mq-relay's connection to a RabbitMQ cluster (broker.c), the
 * one place that speaks AMQP besides push.c and pull.c; only mq-relay
 * links rabbitmq-c.
 *
 * Several URIs are nodes of one cluster: a connection is made to one,
 * tried in turn from the last that worked (after a lost connection, from
 * the next one), with backoff and jitter between rounds.  Every call that
 * waits for the broker is bounded (5 s): one that stops answering is a
 * lost connection; but publishes, sent as rabbitmq-c sends (without a
 * limit), and pull's acks, nacks and close-oks: their callers bound them
 * with the watchdog (mq_broker_guard).
 * No function here prints or returns a password: a node is named by its
 * "host:port" (mq_broker_where).
 */
#ifndef MQ_BROKER_H
#define MQ_BROKER_H

#include <amqp.h>

#include <signal.h>
#include <stdint.h>

#define MQ_BROKER_URIS_MAX	16

/* The headers a push sets and a pull reads (any other publisher may). */
#define MQ_HEADER_PRIORITY	"x-mq-priority"
#define MQ_HEADER_GROUP		"x-mq-group"
#define MQ_HEADER_KEY		"x-mq-key"
#define MQ_HEADER_ATTEMPTS	"x-mq-attempts"
#define MQ_HEADER_SENT		"x-mq-sent"
#define MQ_HEADER_TTL		"x-mq-ttl"
#define MQ_BROKER_DEFAULT_URI	"amqp://localhost"
#define MQ_BROKER_MAX_SIZE	134217728	/* RabbitMQ 3.10's max_message_size */
#define MQ_BROKER_SIZE_LIMIT	536870912	/* RabbitMQ's own ceiling for it */

struct mq_node {
	struct amqp_connection_info info;	/* points into uri */
	char	*uri;		/* a private copy, parsed in place */
	char	 where[300];	/* "host:port", for every message */
};

struct mq_broker {
	struct mq_node	 node[MQ_BROKER_URIS_MAX];
	int		 n;
	int		 cur;		/* the node connected to, or last tried */
	const char	*queue;
	int		 heartbeat;	/* seconds; 0: none */
	int		 notify_blocked; /* ask for connection.blocked (push) */
	int		 blocked;	/* connection.blocked, not yet unblocked */
	uint64_t	 max_size;	/* push: a bigger body is not published */
	int		 verbose;
	amqp_connection_state_t conn;	/* NULL: not connected */
	amqp_channel_t	 ch;		/* the open channel, 0: none */
	amqp_channel_t	 next_ch;	/* the next channel number to open */
	int		 confirming;	/* confirm.select done on ch */
	uint64_t	 backoff_ms;	/* before the next round of nodes */
	int		 outage;	/* a lost connection said, none since */
	volatile sig_atomic_t *stop;	/* SIGTERM/SIGINT seen */
	/*
	 * Set while mq_broker_connect runs, for the signal handler: nothing
	 * is held then, and a stop may end the process at once.
	 */
	volatile sig_atomic_t connecting;
	/* A batch's publishes, framed here and written at once (hold). */
	unsigned char	*out;
	size_t		 outlen, outcap;	/* outlen: framed, not written */
	size_t		 outoff;	/* of outlen, written (a flush cut) */
	int		 holding;	/* MQ_HOLD_* */
	/*
	 * Progress, for the watchdog (mq_broker_guard, a signal handler):
	 * bumped by each write of mq_broker_flush that sent bytes and each
	 * frame received (mq_broker_frame).  cut, set by the watchdog, ends
	 * a flush (-2) at its next wait, what is left of it kept for the
	 * next flush.
	 */
	volatile sig_atomic_t moved;
	volatile sig_atomic_t cut;
};

#define MQ_HOLD_NONE	0	/* no batch: rabbitmq-c sends each publish */
#define MQ_HOLD_FRAME	1	/* TCP: framed into out, mq_broker_flush */
#define MQ_HOLD_CORK	2	/* TLS: rabbitmq-c's sends, corked */

/*
 * queue may be NULL: push or pull sets it (the spool's base name) before
 * the first connect.
 * Takes the URIs (argv, else $MQ_RELAY_URI split on spaces, else the
 * default), each parsed into a private copy; the passwords of the argv
 * strings are then overwritten in place.  -1: a bad URI, named on stderr
 * by its position only, never echoed (usage error).
 */
int	 mq_broker_init(struct mq_broker *, int, char **, const char *queue,
	    int heartbeat, int verbose, volatile sig_atomic_t *stop);
/*
 * Connects to a node, opens a channel and makes sure the queue exists
 * (passive declare; a missing one is declared durable, quorum).  once:
 * one round of every node, each failure named on stderr, -1 if none
 * answered; else rounds with backoff until one answers, giving up (-1)
 * after give_up_ms without a connection (0: never) or when *stop is set,
 * the failures of an outage's first round named (-v: of every round).
 * Called with nothing in hand (push: no batch out; pull: its hand the
 * broker's again): b->connecting is set while it runs, so that a stop
 * can end the process at once, as its steps cannot be interrupted
 * (rabbitmq-c restarts a wait that a signal interrupted, up to its own
 * time limit, and getaddrinfo's resolver does the same).
 */
int	 mq_broker_connect(struct mq_broker *, int once, uint64_t give_up_ms);
/* Closes the channel and opens the next one on the same connection. */
int	 mq_broker_new_channel(struct mq_broker *);
/*
 * The queue declared again (passive, else durable quorum) on the open
 * channel, which a missing queue replaces: 0, or -1 (connection dropped).
 */
int	 mq_broker_declare(struct mq_broker *);
/*
 * Drops the connection (after an error: no polite close when dead); with
 * a reason (said once per outage), the next connect starts at the next
 * node.
 */
void	 mq_broker_drop(struct mq_broker *, const char *why);
void	 mq_broker_close(struct mq_broker *);
const char *mq_broker_where(const struct mq_broker *);
/*
 * A failed rabbitmq-c call, as words: its library status or the
 * server's close reason (e.g. "ACCESS_REFUSED - Login was refused").
 */
const char *mq_broker_error(amqp_rpc_reply_t);
/*
 * Passive declare on a fresh channel, which replaces b->ch (a consuming
 * one is closed: its unacked deliveries go back to the queue): the
 * queue's ready messages.  -1: the queue is missing (said; b->ch 0, the
 * connection stays) or the connection was dropped (conn NULL).
 */
int	 mq_broker_count(struct mq_broker *, uint32_t *);
/* Resets the backoff: the connection did move messages. */
void	 mq_broker_moved(struct mq_broker *);
/* Sleeps ms in slices that watch *stop; -1 when stopped. */
int	 mq_broker_pause(struct mq_broker *, uint64_t);
/* b->queue, when not given: the base name of the spool's real path. */
struct mq_spool;
void	 mq_broker_default_queue(struct mq_broker *, struct mq_spool *);
/* confirm.select on the open channel, once per channel: 0, or -1. */
int	 mq_broker_confirms(struct mq_broker *);
/*
 * A batch of publishes: held (1) while they are made, let go (0) after
 * the last.  Over TCP (MQ_HOLD_FRAME) mq_broker_publish frames them into
 * b->out and the caller writes them with mq_broker_flush (as often as it
 * likes, and before letting go: what is left unwritten then drops the
 * connection); over TLS (MQ_HOLD_CORK) rabbitmq-c sends each, the
 * socket's partial segments held back until let go.
 */
void	 mq_broker_hold(struct mq_broker *, int);
/*
 * basic.publish on the open channel, as amqp_basic_publish (immediate
 * 0): framed into b->out while MQ_HOLD_FRAME (nothing sent), else sent
 * by rabbitmq-c.  An AMQP_STATUS_*.
 */
int	 mq_broker_publish(struct mq_broker *, amqp_bytes_t exchange,
	    amqp_bytes_t key, int mandatory, const amqp_basic_properties_t *,
	    amqp_bytes_t body);
/*
 * Writes what is framed in b->out, in one write when the socket takes
 * it: 0, or -1 (why set: words; nothing framed is kept, the caller drops
 * the connection), or -2 when b->cut was set while it waited (what is
 * left kept: the next flush goes on from there).  Not bounded here, as
 * rabbitmq-c's sends are not: the caller bounds it (push's watchdog).
 * Each write that sends bytes bumps b->moved.  Safe with heartbeats:
 * rabbitmq-c keeps sending its own from its own sends' count, as often
 * as without these writes.  A buffer grown past a few MiB is freed.
 */
int	 mq_broker_flush(struct mq_broker *, const char **);
/*
 * Waits up to ms for the next frame on the connection: 1 and the frame,
 * 0 on a timeout, -1 when the connection failed (why set: words); a
 * frame received bumps b->moved.  A connection.blocked or
 * connection.unblocked (channel 0) sets or clears b->blocked and is
 * returned as any frame.
 */
int	 mq_broker_frame(struct mq_broker *, amqp_frame_t *, int ms,
	    const char **why);
/* Answers the server's channel.close: the channel is gone (ch 0). */
void	 mq_broker_channel_closed(struct mq_broker *);

/*
 * The watchdog, for a call that may block on the broker's socket with no
 * time limit of its own (rabbitmq-c's sends; mq_broker_flush's write): a
 * SIGALRM every 250 ms (its handler installed by the first guard) counts
 * the time without progress (b->moved unchanged); past ms, the socket is
 * shut down, so that the call returns and the connection is lost.  how:
 * MQ_GUARD_STOP, stopping (*b->stop) a call stuck 750 ms is cut too;
 * MQ_GUARD_CUT (a flush), the bound sets b->cut first (the flush returns
 * -2, what is left kept) and the socket is shut down only when still
 * stuck 750 ms later.  One guarded call at a time; mq_broker_drop
 * disarms it (the socket goes).
 */
#define MQ_GUARD_STOP	1
#define MQ_GUARD_CUT	2
void	 mq_broker_guard(struct mq_broker *, uint64_t ms, int how);
/* Disarms it (b->cut cleared): 1 when it fired (the socket shut down). */
int	 mq_broker_unguard(struct mq_broker *);

/*
 * The two directions (push.c, pull.c), each on the spool dir (-d, or
 * NULL: the default), each returning the exit status (mq_exit).
 * push: claims up to batch at a time; pull keeps at most max waiting.
 * once: -1, until there is nothing left to move.
 */
int	 mq_push(struct mq_broker *, const char *dir, unsigned batch, int once);
int	 mq_pull(struct mq_broker *, const char *dir, unsigned max, int once);

#endif
