/*
 * name-test: unit tests of the name and time parsers in src/core/name.c,
 * printing TAP.  Run by tests/name.bats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mq.h"

static int n, failed;

static void
ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
	if (!cond)
		failed++;
}

int
main(void)
{
	struct mq_name nm;
	char id[MQ_ID_LEN + 1], prev[MQ_ID_LEN + 1], buf[MQ_NAME_MAX];
	const char *errstr;
	uint64_t v;
	int i, sorted = 1, valid = 1;

	mq_id_new(prev);
	for (i = 0; i < 10000; i++) {
		mq_id_new(id);
		if (strcmp(prev, id) >= 0)
			sorted = 0;
		if (!mq_id_valid(id) || strlen(id) > MQ_ID_LEN)
			valid = 0;
		strcpy(prev, id);
	}
	ok(sorted, "IDs made in a row sort strictly in order");
	ok(valid, "made IDs are valid and fit MQ_ID_LEN");

	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,0", MQ_NEW,
	    &nm) == 0 && nm.attempts == 0 &&
	    strcmp(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66") == 0,
	    "new name parses");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3",
	    MQ_CUR, &nm) == 0 && nm.ms == 1795975895696ULL && nm.attempts == 3,
	    "cur name parses with ms deadline and attempt");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5",
	    MQ_DEAD, &nm) == 0 && nm.ms == 1795975895000ULL && nm.attempts == 5,
	    "dead name parses");

	{
		static const char *bad_new[] = {
			"", ",0", "x,0", "18ec9688cb923ac3.2475.fd4836da3b66",
			"18ec9688cb923ac3.2475.fd4836da3b66,",
			"18ec9688cb923ac3.2475.fd4836da3b66,-1",
			"18ec9688cb923ac3.2475.fd4836da3b66,01",
			"18ec9688cb923ac3.2475.fd4836da3b66,1x",
			"18ec9688cb923ac3.2475.fd4836da3b66,99999999999999999999",
			"18ec9688cb923ac3.2475.fd4836da3b66,1000001",
			"18EC9688CB923AC3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3..fd4836da3b66,0",
			"18ec9688cb923ac3.12345678901.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b6,0",
			"18ec9688cb923ac.2475.fd4836da3b66,0",
			".18ec9688cb923ac3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b66,0~",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3",
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad_new) / sizeof(*bad_new); k++)
			if (mq_name_parse(bad_new[k], MQ_NEW, &nm) == 0) {
				printf("# accepted: %s\n", bad_new[k]);
				all_bad = 0;
			}
		ok(all_bad, "malformed new names are rejected");
	}
	{
		static const char *bad_cur[] = {
			"18ec9688cb923ac3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.69,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.6961,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,-1795975895.696,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,99999999999999999999.000,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3,",
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad_cur) / sizeof(*bad_cur); k++)
			if (mq_name_parse(bad_cur[k], MQ_CUR, &nm) == 0) {
				printf("# accepted: %s\n", bad_cur[k]);
				all_bad = 0;
			}
		ok(all_bad, "malformed cur names are rejected, overflow too");
	}
	{
		char longname[300];

		memset(longname, '1', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		ok(mq_name_parse(longname, MQ_CUR, &nm) == -1,
		    "a 299-byte name is rejected");
	}

	strcpy(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66");
	nm.ms = 1795975895007ULL;
	nm.attempts = 2;
	ok(mq_name_format(buf, sizeof(buf), MQ_CUR, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,1795975895.007,2")
	    == 0, "cur name formats with three ms digits");
	ok(mq_name_format(buf, 10, MQ_CUR, &nm) == -1,
	    "formatting into a short buffer fails");

	/* The ID's own time: 0x18ec9688cb923ac3 ns. */
	ok(mq_id_ms("18ec9688cb923ac3.2475.fd4836da3b66") == 1795975865689ULL,
	    "an ID's time in ms");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,0", MQ_NEW,
	    &nm) == 0 && nm.sent == 1795975865689ULL && nm.ttl == 0,
	    "a short new name: sent at the ID's time, no ttl");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,2,"
	    "1795975865689,200", MQ_NEW, &nm) == 0 && nm.attempts == 2 &&
	    nm.sent == 1795975865689ULL && nm.ttl == 200,
	    "a new name with its ttl parses");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3,"
	    "1795975870000,0", MQ_CUR, &nm) == 0 && nm.ms == 1795975895696ULL &&
	    nm.attempts == 3 && nm.sent == 1795975870000ULL && nm.ttl == 0,
	    "a cur name redriven (sent later than its ID) parses");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5,"
	    "60000", MQ_DEAD, &nm) == 0 && nm.ms == 1795975895000ULL &&
	    nm.attempts == 5 && nm.ttl == 60000,
	    "a dead name keeps its ttl");
	{
		static const struct {
			enum mq_state st;
			const char *s;
		} bad[] = {
			/* what the short form says: not canonical */
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689,0" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,0,200" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "01795975865689,200" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689,0200" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689," },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689,200," },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689,200,1" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "1795975865689,1000000000001" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "9999999999999999,200" },
			{ MQ_NEW, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "-1,200" },
			{ MQ_CUR, "18ec9688cb923ac3.2475.fd4836da3b66,"
			    "1795975895.696,3,1795975865689,0" },
			{ MQ_CUR, "18ec9688cb923ac3.2475.fd4836da3b66,"
			    "1795975895.696,3,200" },
			{ MQ_DEAD, "18ec9688cb923ac3.2475.fd4836da3b66,"
			    "1795975895,5,0" },
			{ MQ_DEAD, "18ec9688cb923ac3.2475.fd4836da3b66,"
			    "1795975895,5,1795975865689,200" },
			{ MQ_DEAD, "18ec9688cb923ac3.2475.fd4836da3b66,"
			    "1795975895,5," },
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(*bad); k++)
			if (mq_name_parse(bad[k].s, bad[k].st, &nm) == 0) {
				printf("# accepted: %s\n", bad[k].s);
				all_bad = 0;
			}
		ok(all_bad, "malformed or non-canonical expiry fields are "
		    "rejected");
	}

	memset(&nm, 0, sizeof(nm));
	strcpy(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66");
	ok(mq_name_format(buf, sizeof(buf), MQ_NEW, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,0") == 0,
	    "no ttl, sent unset: the short form");
	nm.sent = 1795975865689ULL;
	ok(mq_name_format(buf, sizeof(buf), MQ_NEW, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,0") == 0,
	    "no ttl, sent at the ID's time: the short form");
	nm.ttl = 1500;
	ok(mq_name_format(buf, sizeof(buf), MQ_NEW, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
	    "1795975865689,1500") == 0, "a ttl: the long form");
	nm.ms = 1795975895000ULL;
	nm.attempts = 5;
	ok(mq_name_format(buf, sizeof(buf), MQ_DEAD, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5,"
	    "1500") == 0, "dead/ keeps the ttl, not the time sent");
	nm.ttl = 0;
	nm.sent = 1795975870000ULL;
	nm.attempts = 0;
	ok(mq_name_format(buf, sizeof(buf), MQ_NEW, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,0,"
	    "1795975870000,0") == 0, "sent later than the ID: the long form");
	{
		char big[MQ_NAME_MAX];

		/* The longest name there is: cur/, every field at its widest. */
		strcpy(nm.id, "18ec9688cb923ac3.1234567890.fd4836da3b66");
		nm.ms = 999999999999999ULL;
		nm.attempts = MQ_ATTEMPTS_MAX;
		nm.sent = 999999999999999ULL;
		nm.ttl = MQ_SECS_MAX * 1000;
		nm.prio = MQ_PRIORITY_MAX;
		memset(nm.group, 'g', MQ_GROUP_MAX);
		nm.group[MQ_GROUP_MAX] = '\0';
		memset(nm.keyhash, 'f', MQ_KEYHASH_LEN);
		nm.keyhash[MQ_KEYHASH_LEN] = '\0';
		nm.deaths = MQ_DEATHS_MAX;
		nm.holder.kind = MQ_HOLDER_BOUND;
		nm.holder.space = 0xffffffffu;
		nm.holder.pid = 0xfffffffu;
		nm.holder.start = 0xffffffffffULL;
		nm.holder.uid = 0xffffffffu;
		nm.holder.since = 0xfffffffffULL;
		ok(strlen(nm.id) == MQ_ID_LEN &&
		    mq_name_format(big, sizeof(big), MQ_CUR, &nm) == 0 &&
		    mq_name_parse(big, MQ_CUR, &nm) == 0 &&
		    strlen(big) == MQ_NAME_MAX - 1,
		    "the longest cur name fits MQ_NAME_MAX and parses");
		ok(nm.holder.kind == MQ_HOLDER_BOUND &&
		    nm.holder.space == 0xffffffffu &&
		    nm.holder.pid == 0xfffffffu &&
		    nm.holder.start == 0xffffffffffULL &&
		    nm.holder.uid == 0xffffffffu &&
		    nm.holder.since == 0xfffffffffULL,
		    "its holder at its widest parses back");
		nm.holder.start = 0x10000000000ULL;
		ok(mq_name_format(big, sizeof(big), MQ_CUR, &nm) == 0 &&
		    strstr(big, ",h") == NULL,
		    "a holder too wide for a name is not recorded");
	}
	{
		struct mq_name h;
		char b[MQ_NAME_MAX];
		const char *bad[] = {
			/* upper case, a leading zero, a short space, no kind */
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.000,"
			    "hw0a1B2c3d.1f.2a.0.5f,1",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.000,"
			    "hw0a1b2c3d.01f.2a.0.5f,1",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.000,"
			    "hwa1b2c3d.1f.2a.0.5f,1",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.000,"
			    "h0a1b2c3d.1f.2a.0.5f,1",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.000,"
			    "hw0a1b2c3d.1f.2a.0,1",
		};
		size_t i;
		int all_bad = 1;

		ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,"
		    "1795975895.000,hr0a1b2c3d.1f.2a.0.5f,1,p3", MQ_CUR,
		    &h) == 0 && h.prio == 3 &&
		    h.holder.kind == MQ_HOLDER_RECEIPT &&
		    h.holder.space == 0x0a1b2c3du && h.holder.pid == 0x1f &&
		    h.holder.start == 0x2a && h.holder.uid == 0 &&
		    h.holder.since == 0x5f &&
		    mq_name_format(b, sizeof(b), MQ_CUR, &h) == 0 &&
		    strcmp(b, "18ec9688cb923ac3.2475.fd4836da3b66,"
		    "1795975895.000,hr0a1b2c3d.1f.2a.0.5f,1,p3") == 0,
		    "a cur name's holder parses and formats back");
		ok(mq_name_format(b, sizeof(b), MQ_NEW, &h) == 0 &&
		    strstr(b, ",h") == NULL &&
		    mq_name_format(b, sizeof(b), MQ_DEAD, &h) == 0 &&
		    strstr(b, ",h") == NULL,
		    "new/ and dead/ names carry no holder");
		ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,"
		    "hr0a1b2c3d.1f.2a.0.5f,1", MQ_NEW, &h) == -1 &&
		    mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,"
		    "1795975895,hr0a1b2c3d.1f.2a.0.5f,1", MQ_DEAD, &h) == -1,
		    "a holder in a new/ or dead/ name is malformed");
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (mq_name_parse(bad[i], MQ_CUR, &h) == 0)
				all_bad = 0;
		ok(all_bad, "malformed holders are rejected");
	}

	memset(&nm, 0, sizeof(nm));
	strcpy(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66");
	nm.sent = 1795975865689ULL;
	ok(mq_name_expiry(&nm, 0) == UINT64_MAX,
	    "no ttl of its own nor of the spool: never expires");
	ok(mq_name_expiry(&nm, 3000) == 1795975868689ULL,
	    "the spool's ttl counts from the send");
	nm.ttl = 1000;
	ok(mq_name_expiry(&nm, 3000) == 1795975866689ULL &&
	    mq_name_expiry(&nm, 500) == 1795975866189ULL &&
	    mq_name_expiry(&nm, 0) == 1795975866689ULL,
	    "the lower of its ttl and the spool's wins");
	nm.sent = 0;
	ok(mq_name_expiry(&nm, 0) == 1795975866689ULL,
	    "sent unset counts from the ID's time");

	ok(mq_leaf_key_format(buf, sizeof(buf), 0x1a22880e559ULL, MQ_KEY_DIGITS) ==
	    0 && strcmp(buf, "1a22880e559") == 0, "leaf key formats");
	ok(mq_leaf_key_format(buf, sizeof(buf), 0x1a22880e559ULL, MQ_TOP_DIGITS) ==
	    0 && strcmp(buf, "1a228") == 0, "top key is the prefix");
	ok(mq_leaf_key_parse("1a22880e", MQ_MID_DIGITS, &v) == 0 &&
	    v == 0x1a22880e000ULL, "mid key parses to its first ms");
	ok(mq_leaf_key_parse("1A22880E", MQ_MID_DIGITS, &v) == -1 &&
	    mq_leaf_key_parse("1a22880", MQ_MID_DIGITS, &v) == -1 &&
	    mq_leaf_key_parse("1a22880e0", MQ_MID_DIGITS, &v) == -1,
	    "bad keys are rejected");

	ok(mq_cur_bucket(1795975895000ULL) == 1795975895 &&
	    mq_cur_bucket(1795975895001ULL) == 1795975896,
	    "a lease's bucket is the second it ends in");

	ok(mq_secs_parse("30", &v, &errstr) == 0 && v == 30000, "30 s");
	ok(mq_secs_parse("0.25", &v, &errstr) == 0 && v == 250, "0.25 s");
	ok(mq_secs_parse("1.5", &v, &errstr) == 0 && v == 1500, "1.5 s");
	ok(mq_secs_parse("1000000000", &v, &errstr) == 0 &&
	    v == 1000000000000ULL &&
	    mq_secs_parse("1000000000.000", &v, &errstr) == 0 &&
	    mq_secs_parse("999999999.999", &v, &errstr) == 0,
	    "seconds up to the bound are taken");
	ok(mq_secs_parse("1000000000.001", &v, &errstr) == -1 &&
	    strstr(errstr, "too large") != NULL &&
	    mq_secs_parse("1000000001", &v, &errstr) == -1 &&
	    mq_secs_parse("12345678901234567890", &v, &errstr) == -1 &&
	    strstr(errstr, "too large") != NULL,
	    "seconds past the bound are too large, fraction included");
	{
		/* What the parser takes, a name holds and gives back. */
		struct mq_name tn, back;
		char buf[MQ_NAME_MAX];

		memset(&tn, 0, sizeof(tn));
		strlcpy(tn.id, "18ec9688cb923ac3.2475.fd4836da3b66",
		    sizeof(tn.id));
		tn.sent = 1795975865689ULL;
		(void)mq_secs_parse("1000000000", &tn.ttl, &errstr);
		ok(mq_name_format(buf, sizeof(buf), MQ_NEW, &tn) == 0 &&
		    mq_name_parse(buf, MQ_NEW, &back) == 0 &&
		    back.ttl == tn.ttl, "the largest ttl taken is a name's");
	}
	ok(mq_secs_parse("250ms", &v, &errstr) == 0 && v == 250 &&
	    mq_secs_parse("90s", &v, &errstr) == 0 && v == 90000 &&
	    mq_secs_parse("1.5m", &v, &errstr) == 0 && v == 90000 &&
	    mq_secs_parse("1.5h", &v, &errstr) == 0 && v == 5400000 &&
	    mq_secs_parse("2d", &v, &errstr) == 0 && v == 172800000 &&
	    mq_secs_parse("0.001d", &v, &errstr) == 0 && v == 86400 &&
	    mq_secs_parse("0.001s", &v, &errstr) == 0 && v == 1 &&
	    mq_secs_parse("0ms", &v, &errstr) == 0 && v == 0,
	    "a number with a unit: ms, s, m, h, d");
	ok(mq_secs_parse("11574d", &v, &errstr) == 0 &&
	    mq_secs_parse("11575d", &v, &errstr) == -1 &&
	    strstr(errstr, "too large") != NULL &&
	    mq_secs_parse("1000000000000ms", &v, &errstr) == 0 &&
	    mq_secs_parse("1000000000001ms", &v, &errstr) == -1 &&
	    mq_secs_parse("99999999999999999999d", &v, &errstr) == -1 &&
	    strstr(errstr, "too large") != NULL,
	    "the bound holds in every unit");
	{
		static const char *bad[] = { "", "-1", "+1", "1.", ".5",
		    "1.2345", "1e3", "0x10", "99999999999", "1 ", " 1", "1.-1",
		    "1.5ms", "5x", "h", "2hh", "1.5.h", "1..5", "5 s", "5S",
		    "1.2345h", "ms" };
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(*bad); k++)
			if (mq_secs_parse(bad[k], &v, &errstr) == 0) {
				printf("# accepted: '%s'\n", bad[k]);
				all_bad = 0;
			}
		ok(all_bad, "bad seconds are rejected");
	}

	{
		static const char *round[] = {
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p9",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,gcust-42.eu_1",
			"18ec9688cb923ac3.2475.fd4836da3b66,2,1795975865689,3000"
			    ",p3,gA,k0123456789abcdef0123456789abcdef",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "k0123456789abcdef0123456789abcdef",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p2,gA,"
			    "k0123456789abcdef0123456789abcdef,d999999",
		};
		int all_round = 1;
		size_t k;

		for (k = 0; k < sizeof(round) / sizeof(*round); k++)
			if (mq_name_parse(round[k], MQ_NEW, &nm) == -1 ||
			    mq_name_format(buf, sizeof(buf), MQ_NEW, &nm) ==
			    -1 || strcmp(buf, round[k]) != 0) {
				printf("# not round: %s\n", round[k]);
				all_round = 0;
			}
		ok(all_round, "priority, group, key hash and deaths parse and "
		    "format back to themselves");
	}
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,0", MQ_NEW,
	    &nm) == 0 && nm.deaths == 0, "no ,dN: no deaths");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3"
	    ",gorders,d7", MQ_CUR, &nm) == 0 && nm.deaths == 7 &&
	    mq_name_format(buf, sizeof(buf), MQ_CUR, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3"
	    ",gorders,d7") == 0, "a cur name keeps its deaths");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5,3000"
	    ",p1,d42", MQ_DEAD, &nm) == 0 && nm.deaths == 42 &&
	    nm.ttl == 3000 && nm.prio == 1 &&
	    mq_name_format(buf, sizeof(buf), MQ_DEAD, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5,3000"
	    ",p1,d42") == 0, "a dead name keeps its deaths");
	{
		struct mq_name big;
		char longest[MQ_NAME_MAX];

		memset(&big, 0, sizeof(big));
		strcpy(big.id, "18ec9688cb923ac3.2475.fd4836da3b66");
		big.deaths = MQ_DEATHS_MAX + 1;
		ok(mq_name_format(longest, sizeof(longest), MQ_NEW, &big) ==
		    -1, "more deaths than a name holds are refused");
	}
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3"
	    ",p2,gorders", MQ_CUR, &nm) == 0 && nm.prio == 2 &&
	    strcmp(nm.group, "orders") == 0 && nm.keyhash[0] == '\0',
	    "a cur name keeps priority and group");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5,3000"
	    ",p1,k0123456789abcdef0123456789abcdef", MQ_DEAD, &nm) == 0 &&
	    nm.ttl == 3000 && nm.prio == 1 &&
	    strcmp(nm.keyhash, "0123456789abcdef0123456789abcdef") == 0,
	    "a dead name keeps ttl, priority and key hash");
	{
		static const char *bad[] = {
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p0",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p10",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,g",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,g.hidden",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,ga/b",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,ga b",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,gA,p1",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p1,p2",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,k0123",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "k0123456789ABCDEF0123456789abcdef",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,"
			    "k0123456789abcdef0123456789abcdef0",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,x1",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,p1,",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d0",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d01",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1000000",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d-1",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1,d2",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1,p2",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1,gA",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1,"
			    "k0123456789abcdef0123456789abcdef",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1,",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,d1x",
			"18ec9688cb923ac3.2475.fd4836da3b66,0,g"
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			    "aaaaaaaaaaaaaaaaa",
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(*bad); k++)
			if (mq_name_parse(bad[k], MQ_NEW, &nm) == 0) {
				printf("# accepted: %s\n", bad[k]);
				all_bad = 0;
			}
		ok(all_bad, "malformed tagged fields are rejected");
	}
	ok(mq_group_valid("a") && mq_group_valid("A.b_c-9") &&
	    !mq_group_valid("") && !mq_group_valid(".a") &&
	    !mq_group_valid("a/b") && !mq_group_valid("a,b") &&
	    mq_group_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaa") &&
	    !mq_group_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaa"), "group names: 1 to 64 of [A-Za-z0-9._-], "
	    "no leading dot");
	mq_time_iso(buf, sizeof(buf), 1795975895696ULL);
	ok(strcmp(buf, "2026-11-29T18:11:35Z") == 0, "ISO 8601 UTC time");
	{
		static const char *const good[] = { "18ec9688",
		    "18ec9688cb923ac3", "18ec9688cb923ac3.",
		    "18ec9688cb923ac3.2", "18ec9688cb923ac3.2475.",
		    "18ec9688cb923ac3.2475.fd48",
		    "18ec9688cb923ac3.2475.fd4836da3b66" };
		static const char *const bad[] = { "", "18ec968", "18EC9688",
		    "18ec968g", "18ec9688cb923ac3x", "18ec9688cb923ac3..",
		    "18ec9688cb923ac3.12345678901",
		    "18ec9688cb923ac3.2475.fd4836da3b66a",
		    "18ec9688cb923ac3.2475.fd4836da3b6g", "../../etc/passwd",
		    "18ec9688cb923ac3.24x5" };
		struct mq_matches m;
		int good_ok = 1, bad_ok = 1;
		size_t k;

		for (k = 0; k < sizeof(good) / sizeof(*good); k++)
			good_ok &= mq_id_prefix_valid(good[k]);
		for (k = 0; k < sizeof(bad) / sizeof(*bad); k++)
			bad_ok &= !mq_id_prefix_valid(bad[k]);
		ok(good_ok, "ID prefixes: 8 characters or more of an ID");
		ok(bad_ok, "ID prefixes: shorter, or what no ID begins with");
		ok(mq_matches_init(&m, "18ec9688cb923ac3.2475.fd4836da3b66") ==
		    0 && mq_matches_status(&m) == MQ_EX_OK && strcmp(m.id[0],
		    "18ec9688cb923ac3.2475.fd4836da3b66") == 0 &&
		    mq_matches_init(&m, "18ec9688") == 1 && m.n == 0 &&
		    mq_matches_init(&m, "18ec968") == -1,
		    "a whole ID is no search, a prefix is one, a short one "
		    "neither");
		mq_matches_init(&m, "0000000b");
		for (i = 12; i > 0; i--) {
			snprintf(id, sizeof(id),
			    "0000000b000000%02x.1.000000000001", i);
			mq_matches_add(&m, id);
			mq_matches_add(&m, id);
		}
		ok(m.n == 12 && m.kept == MQ_MATCHES_KEPT &&
		    mq_matches_status(&m) == MQ_EX_USAGE &&
		    strcmp(m.id[0], "0000000b00000001.1.000000000001") == 0 &&
		    strcmp(m.id[9], "0000000b0000000a.1.000000000001") == 0,
		    "matches: the first ten kept in ID order, each counted "
		    "once");
	}

	printf("1..%d\n", n);
	return failed != 0;
}
