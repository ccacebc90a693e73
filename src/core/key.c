/*
 * key.c: dedup keys (mq-send -k).  A key is held while its message is in
 * the spool, in any state, and for the spool's dedup-window after it was
 * acked or purged.  keys/ holds two records per key:
 *
 *	keys/HASH	a symbolic link whose target is "ID KEY": the holder
 *			and the key's bytes (never followed: readlinkat only)
 *	keys/ID		a hard link to the holder's message file
 *
 * HASH is the first 128 bits of the key's SHA-256, in hex, which the
 * message's name carries too (",kHASH").  keys/ID's link count says where
 * the message is without looking for it: 2 or more while it is in new/,
 * cur/ or dead/ (renames keep the inode), or in tmp/ while being sent; 1
 * once it was acked or purged (or 2 with its other name its entry in the
 * ledger of mq-recv --once, once/kHASH: acked by that rename), and its ctime is then the time of that
 * unlink, the start of the window.  So an ack or a purge needs no step of
 * its own.
 *
 *	hold	tmp/ID			=> keys/ID (link), then keys/HASH
 *	forget	keys/HASH removed, then keys/ID
 *
 * keys/ID is made before keys/HASH and removed after it, so that no record
 * ever names a holder that is missing, whenever a sender is killed.  The
 * look-up, the hold and the sender's rename into new/ are made under an
 * flock(2) of keys/, so exactly one sender of a key queues, and a record
 * whose message is still in tmp/ is, to whoever holds the lock, one of a
 * sender that died between its hold and its rename.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/* "ID KEY": the longest target of keys/HASH, and a NUL. */
#define RECORD_MAX	(MQ_ID_LEN + 1 + MQ_KEY_MAX + 1)

/* SHA-256 (FIPS 180-4), one call for a whole message. */
static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,
	0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
	0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,
	0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152,
	0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
	0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
	0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
	0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

static uint32_t
ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void
sha256_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
		    (w[i - 2] >> 10)) + w[i - 7] + (ror(w[i - 15], 7) ^
		    ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 16];
	a = h[0], b = h[1], c = h[2], d = h[3];
	e = h[4], f = h[5], g = h[6], hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		    ((e & f) ^ (~e & g)) + k256[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		    ((a & b) ^ (a & c) ^ (b & c));
		hh = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d;
	h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void
mq_sha256(const void *msg, size_t len, unsigned char out[32])
{
	uint32_t h[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
	};
	const unsigned char *p = msg;
	unsigned char last[128];
	uint64_t bits = (uint64_t)len * 8;
	size_t rest, n, i;

	for (; len >= 64; len -= 64, p += 64)
		sha256_block(h, p);
	/* The padding: 0x80, zeros, the length in bits; one block or two. */
	rest = len;
	memset(last, 0, sizeof(last));
	memcpy(last, p, rest);
	last[rest] = 0x80;
	n = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		last[n - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (i = 0; i < n; i += 64)
		sha256_block(h, last + i);
	for (i = 0; i < 32; i++)
		out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* A key mq-send takes: 1 to MQ_KEY_MAX bytes, no NUL, no newline. */
int
mq_key_valid(const char *key, size_t len)
{
	return len >= 1 && len <= MQ_KEY_MAX && memchr(key, '\0', len) ==
	    NULL && memchr(key, '\n', len) == NULL;
}

/* The hash of a key as names carry it: MQ_KEYHASH_LEN hex and a NUL. */
void
mq_key_hash(const char *key, size_t len, char *hash)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[32];
	int i;

	mq_sha256(key, len, md);
	for (i = 0; i < MQ_KEYHASH_LEN / 2; i++) {
		hash[2 * i] = hex[md[i] >> 4];
		hash[2 * i + 1] = hex[md[i] & 0xf];
	}
	hash[MQ_KEYHASH_LEN] = '\0';
}

void
mq_keys_init(struct mq_keys *ks, struct mq_spool *sp)
{
	ks->sp = sp;
	ks->fd = -1;
	ks->locked = 0;
	ks->taken = 0;
}

/*
 * Opens keys/; with create (a keyed send), makes it first, as the spool's
 * other directories are made.  Only mq-send makes it: without it there is
 * no key (ENOENT).  Never follows a symbolic link put in its place.
 */
int
mq_keys_open(struct mq_keys *ks, int create)
{
	if (ks->fd != -1)
		return 0;
	ks->fd = create ? mq_spool_topdir(ks->sp, MQ_DIR_KEYS) :
	    mq_opendirat(ks->sp->fd, MQ_DIR_KEYS);
	return ks->fd == -1 ? -1 : 0;
}

int
mq_keys_lock(struct mq_keys *ks)
{
	while (flock(ks->fd, LOCK_EX) == -1)
		if (errno != EINTR)
			return -1;
	ks->locked = 1;
	return 0;
}

void
mq_keys_unlock(struct mq_keys *ks)
{
	if (ks->locked)
		flock(ks->fd, LOCK_UN);
	ks->locked = 0;
}

void
mq_keys_close(struct mq_keys *ks)
{
	mq_keys_unlock(ks);
	mq_closefd(&ks->fd);
}

/* Whether s is a name of keys/ that a hash record has. */
int
mq_key_is_hash(const char *s)
{
	size_t i;

	for (i = 0; i < MQ_KEYHASH_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

/*
 * Reads keys/HASH: the holder's ID into id (MQ_ID_LEN + 1), the key into
 * key (MQ_KEY_MAX + 1, NUL-terminated) and its length.  Returns 0, or -1:
 * ENOENT when there is no record, EINVAL when it is not one (not a
 * symbolic link, or not "ID KEY").
 */
int
mq_key_read(struct mq_keys *ks, const char *hash, char *id, char *key,
    size_t *keylen)
{
	char rec[RECORD_MAX + 1], *blank;
	ssize_t n;

	if ((n = readlinkat(ks->fd, hash, rec, sizeof(rec))) == -1)
		return -1;
	/* Anyone who may write keys/ may write it: nothing in it is trusted. */
	if ((size_t)n >= sizeof(rec) || (blank = memchr(rec, ' ', n)) == NULL ||
	    blank - rec > MQ_ID_LEN || n - (blank - rec) - 1 > MQ_KEY_MAX)
		goto bad;
	memcpy(id, rec, blank - rec);
	id[blank - rec] = '\0';
	*keylen = n - (blank - rec) - 1;
	memcpy(key, blank + 1, *keylen);
	key[*keylen] = '\0';
	/* The ID is a name looked up in keys/: it must be one, and nothing else. */
	if (mq_id_valid(id) && mq_key_valid(key, *keylen))
		return 0;
bad:
	errno = EINVAL;
	return -1;
}

/*
 * Where the holder id of the record of key hash is now, as keys/ID tells
 * (enum mq_key_state), given the dedup window (ms) and the time now.  Only
 * whoever holds the lock may take MQ_KEY_STRANDED for a dead sender's.
 * Returns -1 on error (EINVAL: keys/ID is not a regular file).
 */
int
mq_key_state(struct mq_keys *ks, const char *hash, const char *id,
    uint64_t window, uint64_t now)
{
	struct stat st, tst;
	uint64_t ctime_ms;

	if (fstatat(ks->fd, id, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? MQ_KEY_BROKEN : -1;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	if (st.st_nlink >= 2) {
		if (mq_spool_need(ks->sp, 0) == 0 &&
		    fstatat(ks->sp->tmp, id, &tst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    tst.st_dev == st.st_dev && tst.st_ino == st.st_ino)
			return MQ_KEY_STRANDED;
		/*
		 * Its other name its entry in the ledger (mq-recv --once):
		 * acknowledged by that rename, which changed its ctime last
		 * (st is the entry's now, looked at after the rename).  A
		 * ledger that cannot be looked at holds the key.
		 */
		if (mq_once_keeps(ks->sp, hash, &st) != 1)
			return MQ_KEY_LIVE;
	}
	/* The unlink that took the message away changed its ctime last. */
	ctime_ms = (uint64_t)st.st_ctim.tv_sec * 1000 +
	    (uint64_t)st.st_ctim.tv_nsec / 1000000;
	return now < ctime_ms + window ? MQ_KEY_RECENT : MQ_KEY_PAST;
}

/*
 * Removes a record that holds nothing any more (state st): keys/HASH
 * first, then keys/ID, so that no record is left naming a missing holder;
 * and, for a dead sender's, its message in tmp/ (never visible).
 */
int
mq_key_forget(struct mq_keys *ks, const char *hash, const char *id, int st)
{
	if (unlinkat(ks->fd, hash, 0) == -1 && errno != ENOENT)
		return -1;
	if (st != MQ_KEY_BROKEN && unlinkat(ks->fd, id, 0) == -1 &&
	    errno != ENOENT)
		return -1;
	if (st == MQ_KEY_STRANDED)
		mq_tmp_remove(ks->sp, id);
	return 0;
}

/*
 * For a sender holding the lock: is key (len bytes) free?  MQ_KEY_FREE
 * (a record that held nothing any more is forgotten), MQ_KEY_HELD (its
 * holder's ID in holder), MQ_KEY_OTHER (another key has its hash),
 * MQ_KEY_BAD (keys/HASH or keys/ID is not a record); -1 on error.
 */
int
mq_key_look(struct mq_keys *ks, const char *key, size_t len, uint64_t window,
    char *holder)
{
	char hash[MQ_KEYHASH_LEN + 1], id[MQ_ID_LEN + 1], other[MQ_KEY_MAX + 1];
	size_t olen;
	int st;

	ks->taken = 0;
	mq_key_hash(key, len, hash);
	if (mq_key_read(ks, hash, id, other, &olen) == -1) {
		if (errno == ENOENT)
			return MQ_KEY_FREE;
		return errno == EINVAL ? MQ_KEY_BAD : -1;
	}
	if (olen != len || memcmp(other, key, len) != 0)
		return MQ_KEY_OTHER;
	if ((st = mq_key_state(ks, hash, id, window, mq_now_ms())) == -1)
		return errno == EINVAL ? MQ_KEY_BAD : -1;
	if (st == MQ_KEY_LIVE || st == MQ_KEY_RECENT) {
		memcpy(holder, id, sizeof(id));
		return MQ_KEY_HELD;
	}
	if (mq_key_forget(ks, hash, id, st) == -1)
		return -1;
	ks->taken |= st == MQ_KEY_PAST;
	return MQ_KEY_FREE;
}

/*
 * For a sender holding the lock, the key free: makes tmp/id, written and
 * synced, the key's holder: keys/ID, then keys/HASH, then (with sync) keys/
 * synced, so that the message, once renamed into new/, never outlives its
 * key in a crash (a rerun would queue it again).  A key taken from a holder
 * that was acknowledged or purged is synced with the whole file system
 * (syncfs, one call as the fsync it replaces): nothing synced that unlink,
 * and a power cut that kept the new holder and undid it would leave two
 * live messages with one key.  On failure what was made is removed.
 */
int
mq_key_hold(struct mq_keys *ks, const char *key, size_t len, const char *id,
    int sync)
{
	char hash[MQ_KEYHASH_LEN + 1], rec[RECORD_MAX];
	int n;

	mq_key_hash(key, len, hash);
	n = snprintf(rec, sizeof(rec), "%s %.*s", id, (int)len, key);
	if (n < 0 || (size_t)n >= sizeof(rec)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (linkat(ks->sp->tmp, id, ks->fd, id, 0) == -1)
		return -1;
	if (symlinkat(rec, ks->fd, hash) == -1 || (sync && (ks->taken ?
	    mq_syncfs(ks->fd) : mq_fsync_dir(ks->fd)) == -1)) {
		mq_key_drop(ks, hash, id);
		return -1;
	}
	return 0;
}

/* Takes back a hold whose message was not queued; errno is kept. */
void
mq_key_drop(struct mq_keys *ks, const char *hash, const char *id)
{
	int saved = errno;

	unlinkat(ks->fd, hash, 0);
	unlinkat(ks->fd, id, 0);
	errno = saved;
}

/*
 * The key of message nm (named with a hash), into key (MQ_KEY_MAX + 1,
 * NUL-terminated: a key has no NUL): 1, or 0 when it has none, or when
 * keys/HASH names another holder (nm's was forgotten); -1 on error.
 * keys/ is opened when first needed (ks set up by mq_keys_init).
 */
int
mq_key_get(struct mq_keys *ks, const struct mq_name *nm, char *key)
{
	char id[MQ_ID_LEN + 1];
	size_t len;

	if (nm->keyhash[0] == '\0')
		return 0;
	/* Tried each time: a worker may have started before keys/ was made. */
	if (ks->fd == -1 && mq_keys_open(ks, 0) == -1)
		return errno == ENOENT ? 0 : -1;
	if (mq_key_read(ks, nm->keyhash, id, key, &len) == -1)
		return errno == ENOENT ? 0 : -1;
	return strcmp(id, nm->id) == 0;
}
